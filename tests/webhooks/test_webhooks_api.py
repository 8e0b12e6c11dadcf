import pytest

from tests.tenancy import assert_cross_tenant_404, assert_problem

URL = "/services/alerts/api/alerts/webhooks"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


@pytest.fixture(autouse=True)
def _private_urls_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True


def register(client, **overrides):
    body = {
        "name": "ops",
        "url": "http://127.0.0.1:9/hook",
        "secret": "s3cret-s3cret-s3cret",
        "events": ["fieldCreated"],
    }
    return client.post(URL, body | overrides, format="json")


def test_register_read_list_and_delete(api_client):
    response = register(api_client, events=["fieldCreated", "machineCreated"])
    assert response.status_code == 201
    webhook = response.json()
    assert set(webhook) == {"id", "name", "url", "events", "createdTime"}
    assert "secret" not in response.content.decode()
    assert webhook["events"] == ["fieldCreated", "machineCreated"]
    assert api_client.get(f"{URL}/{webhook['id']}").json() == webhook
    assert [w["id"] for w in api_client.get(URL).json()] == [webhook["id"]]
    assert api_client.delete(f"{URL}/{webhook['id']}").status_code == 204
    assert_problem(api_client.get(f"{URL}/{webhook['id']}"), 404, "notFound")


def test_a_single_event_name_is_a_list_of_one(api_client):
    """The spec writes `events` as an enum: one name, not in a list, is taken as the list of it."""
    response = register(api_client, events="fieldCreated")
    assert response.status_code == 201, response.content
    assert response.json()["events"] == ["fieldCreated"]
    # Refused, it is named as sent: `events`, not `events[0]` (no list was sent)
    taken = assert_problem(register(api_client, events="fieldCreated"), 400, "eventRegisteredTwice")
    assert [e["field"] for e in taken["fieldErrors"]] == ["events"]
    unknown = assert_problem(register(api_client, events="nope"), 400, "validation")
    assert [e["field"] for e in unknown["fieldErrors"]] == ["events"]


def test_the_list_is_oldest_first(api_client):
    ids = [
        register(api_client, name=n, events=[e]).json()["id"]
        for n, e in (("b", "fieldCreated"), ("a", "machineCreated"))
    ]
    assert [w["id"] for w in api_client.get(URL).json()] == ids


def test_two_webhooks_cannot_listen_to_the_same_event(api_client):
    assert register(api_client, events=["fieldCreated"]).status_code == 201
    body = assert_problem(register(api_client, events=["machineCreated", "fieldCreated"]), 400, "eventRegisteredTwice")
    assert "fieldCreated" in body["detail"]
    # The field error names the entry of the list that is taken
    assert [e["field"] for e in body["fieldErrors"]] == ["events[1]"]
    # Nothing of the refused webhook was kept: machineCreated is still free.
    assert register(api_client, events=["machineCreated"]).status_code == 201
    assert len(api_client.get(URL).json()) == 2


def test_the_list_holds_all_webhooks_without_paging_parameters(api_client):
    """The spec's `GET /webhooks` answers "all webhooks": one per event type at most, so one page holds them all."""
    from webhooks.models import EventType

    events = [e for e in EventType.values if e != "newSatelliteImages"]
    for event in events:
        assert register(api_client, name=event, events=[event]).status_code == 201
    response = api_client.get(URL)
    assert len(response.json()) == len(events) == int(response["X-Total-Count"]) > 20
    assert 'rel="next"' not in response.get("Link", "")
    assert len(api_client.get(URL, {"size": 5}).json()) == 5, "paging still works when asked for"


def test_event_aliases_are_stored_canonically_and_count_as_the_same_event(api_client):
    assert register(api_client, events=["newSatelliteImages"]).json()["events"] == ["newSatelliteImage"]
    assert_problem(register(api_client, events=["newSatelliteImage"]), 400, "eventRegisteredTwice")


def test_a_secret_shorter_than_16_characters_is_refused(api_client):
    body = assert_problem(register(api_client, secret="x" * 15), 400, "validation")
    assert body["fieldErrors"] == [{"field": "secret", "message": "The secret must be at least 16 characters long."}]
    assert api_client.get(URL).json() == []
    assert register(api_client, secret="x" * 16).status_code == 201


def test_another_owner_may_listen_to_the_same_event(api_client, other_client):
    assert register(api_client).status_code == 201
    assert register(other_client).status_code == 201


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"events": ["fieldExploded"]}, "events[0]"),
        ({"events": []}, "events"),
        ({"url": "ftp://example.com/hook"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"secret": ""}, "secret"),
        ({"secret": "   "}, "secret"),
        ({"secret": " " * 16}, "secret"),
        ({"name": None}, "name"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_registrations_are_400(api_client, overrides, field):
    body = assert_problem(register(api_client, **overrides), 400, "validation")
    assert field in [e["field"] for e in body["fieldErrors"]], body
    assert api_client.get(URL).json() == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://localhost:8080/x",
        "http://10.1.2.3/x",
        "http://[::1]/x",
        "http://169.254.169.254/",
    ],
)
def test_private_addresses_are_refused_unless_allowed(api_client, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    body = assert_problem(register(api_client, url=url), 400, "webhookUrlNotAllowed")
    assert body["fieldErrors"][0]["field"] == "url"
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    assert register(api_client, url=url).status_code == 201


def test_webhooks_have_no_update(api_client):
    webhook = register(api_client).json()
    assert_problem(api_client.put(f"{URL}/{webhook['id']}", {}, format="json"), 405)
    assert_problem(api_client.patch(f"{URL}/{webhook['id']}", {}, format="json"), 405)


def test_another_owner_cannot_see_or_delete_a_webhook(api_client, other_client):
    webhook = register(api_client).json()
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{URL}/{webhook['id']}",
        resource_id=webhook["id"],
        list_urls=[URL],
    )


@pytest.mark.django_db(transaction=True)
def test_a_change_announced_while_its_webhook_is_being_deleted_is_made_and_sent_nowhere(owner, core_user, make_client):
    """The change wrote a delivery for the webhook being deleted; at commit the foreign key failed it: a field
    created meanwhile was a 500 (and a file converted meanwhile failed)."""
    from django.db import transaction

    from fields.models import Field
    from tests.concurrency import needs_postgresql, request_later, run_meanwhile
    from tests.fields.helpers import fields_url, square
    from webhooks.models import Delivery, Webhook
    from webhooks.services import webhook_delete

    needs_postgresql()
    webhook = register(make_client(owner)).json()
    with transaction.atomic():
        webhook_delete(webhook=Webhook.objects.get(pk=webhook["id"]))
        create = run_meanwhile(
            request_later(make_client, owner, "post", fields_url(core_user), {"geometry": square(1, 1)})
        )
    assert create().status_code == 201
    assert Field.objects.count() == 1 and not Delivery.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_webhook_deleted_while_a_change_is_being_announced_goes_with_its_delivery(owner, core_user, make_client):
    from django.db import transaction

    from tests.concurrency import needs_postgresql, request_later, run_meanwhile
    from tests.fields.helpers import create_field, square
    from webhooks.models import Delivery, Webhook

    needs_postgresql()
    client = make_client(owner)
    webhook = register(client).json()
    with transaction.atomic():
        create_field(client, core_user, square(1, 1))
        assert Delivery.objects.count() == 1  # written, not committed
        delete = run_meanwhile(request_later(make_client, owner, "delete", f"{URL}/{webhook['id']}"))
    assert delete().status_code == 204
    assert not Webhook.objects.exists() and not Delivery.objects.exists()


@pytest.mark.parametrize(
    ("events", "kept"),
    [
        (["fieldCreated", "fieldCreated"], ["fieldCreated"]),
        (["newSatelliteImages", "newSatelliteImage"], ["newSatelliteImage"]),
    ],
)
def test_an_event_named_twice_in_one_request_is_registered_once(api_client, events, kept):
    response = register(api_client, events=events)
    assert response.status_code == 201, response.content
    assert response.json()["events"] == kept
