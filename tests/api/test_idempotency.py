"""`Idempotency-Key` on the creating POSTs (`platform_site.api.idempotency`): a retry with the key answers what the
first request answered, with `Idempotent-Replayed: true`, and makes nothing again; a key sent with another request is
a 422; a failed request gives its key up; keys are per API owner and honoured for a day. (`POST /batch` has its own,
tests/conversion/api/test_upload_idempotency.py.)"""

import uuid
from datetime import timedelta

import pytest
from django.db import transaction

from assets.models import Machine
from fields.models import Farm, Field, Grower
from magiclinks.models import MagicLink
from platform_site.accounts.models import CoreUser, ProviderApplication
from platform_site.api import idempotency
from platform_site.api.errors import DomainError
from platform_site.api.models import IdempotentRequest
from platform_site.api.tasks import idempotency_keys_sweep
from tests.assets.helpers import BASE as MACHINES_BASE
from tests.concurrency import needs_postgresql, run_together
from tests.factories import CoreUserFactory
from tests.fields.helpers import BASE as FIELDS_BASE
from tests.fields.helpers import create_field, square
from tests.magiclinks.helpers import API as WIDGETS_API
from tests.tenancy import assert_problem
from webhooks.models import Webhook

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

KEY = "7d2b8c1e-3f4a-4e5b-8c6d-9e0f1a2b3c4d"
USERS_URL = "/services/usermanagement/api/users"
WEBHOOKS_URL = "/services/alerts/api/alerts/webhooks"

# Each creating POST the key applies to: (its address for a core user, a valid body, what it makes).
CREATIONS = {
    "farm": (lambda u: f"{FIELDS_BASE}/users/{u.id}/farms", {"name": "Home"}, Farm),
    "grower": (lambda u: f"{FIELDS_BASE}/users/{u.id}/growers", {"name": "Ann"}, Grower),
    "field": (lambda u: f"{FIELDS_BASE}/users/{u.id}/fields", {"geometry": square(-93.6, 42.0)}, Field),
    "machine": (lambda u: f"{MACHINES_BASE}/{u.id}/machines", {"name": "8R", "category": "TRACTOR"}, Machine),
    "core-user": (lambda u: USERS_URL, {"name": "Jo", "email": "jo@example.com"}, CoreUser),
    "webhook": (
        lambda u: WEBHOOKS_URL,
        {"name": "ops", "url": "http://127.0.0.1:9/hook", "secret": "s3cret-s3cret-s3cret", "events": ["fieldCreated"]},
        Webhook,
    ),
    "provider-application": (
        lambda u: f"{WIDGETS_API}/provider-applications",
        {
            "provider": "ProviderA",
            "clientId": "my-client",
            "clientSecret": "top-secret-value",
            "authorizeUrl": "https://auth.example.com/oauth/authorize",
            "tokenUrl": "https://auth.example.com/oauth/token",
            "scopes": ["files"],
        },
        ProviderApplication,
    ),
}


@pytest.fixture(autouse=True)
def _private_urls_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True


def post(client, url, body, key=KEY):
    headers = {} if key is None else {"Idempotency-Key": key}
    return client.post(url, body, format="json", headers=headers)


@pytest.mark.parametrize("kind", list(CREATIONS))
def test_a_retry_answers_the_first_answer_and_makes_nothing_again(api_client, core_user, kind):
    url, body, model = CREATIONS[kind]
    before = model.objects.count()
    first = post(api_client, url(core_user), body)
    assert first.status_code == 201, first.content
    assert "Idempotent-Replayed" not in first

    again = post(api_client, url(core_user), body)
    assert again.status_code == 201, again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert again["Content-Type"] == first["Content-Type"] and again["Location"] == first["Location"]
    assert again["X-Request-Id"] != first["X-Request-Id"]  # (the retry is a request of its own)
    assert model.objects.count() == before + 1


@pytest.mark.parametrize("kind", ["farm", "field", "core-user"])
def test_without_a_key_or_with_another_key_each_request_makes_its_own(api_client, core_user, kind):
    url, body, model = CREATIONS[kind]
    before = model.objects.count()
    ids = {
        post(api_client, url(core_user), body, key=None).json()["id"],
        post(api_client, url(core_user), body, key=None).json()["id"],
        post(api_client, url(core_user), body, key="one").json()["id"],
        post(api_client, url(core_user), body, key="two").json()["id"],
    }
    assert len(ids) == 4 and model.objects.count() == before + 4


def test_a_merge_retried_with_its_key_makes_one_merged_file(api_client, core_user, settings):
    """The left-alone case of the uploads' key: a merge's retry made a second merged file."""
    from conversion.models import File
    from tests.operations.helpers import grid_table, processed_file

    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=2))
    body = {"ids": [str(first.pk), str(second.pk)]}
    settings.CELERY_TASK_ALWAYS_EAGER = False
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("conversion.tasks.file_merge_process.delay", lambda file_id: None)
        made = post(api_client, "/services/operations/api/files/merge", body)
        again = post(api_client, "/services/operations/api/files/merge", body)
    assert made.status_code == 201, made.content
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == made.json()["id"] and again["Location"] == made["Location"]
    assert File.objects.filter(origin="merged").count() == 1


@pytest.mark.parametrize(
    "url", ["/magic-link/users/{id}/file-upload", "/magic-link/file-upload"], ids=["for-user", "with-user"]
)
def test_a_magic_links_creation_takes_no_key_and_keeps_no_token(api_client, core_user, url):
    """Its answer holds the link's token, which is never stored (only its hash): a keyed link's answer kept it in
    clear for a day. A retry makes another link."""
    url = WIDGETS_API + url.format(id=core_user.id)
    body = {} if "users" in url else {"externalId": "grower-7"}
    first, again = post(api_client, url, body), post(api_client, url, body)
    assert first.status_code == again.status_code == 201 and "Idempotent-Replayed" not in again
    assert first.json()["link"] != again.json()["link"] and MagicLink.objects.count() == 2
    assert IdempotentRequest.objects.count() == 0


def test_the_same_json_written_otherwise_is_the_same_request(api_client, core_user):
    url = f"{FIELDS_BASE}/users/{core_user.id}/farms"
    headers = {"Idempotency-Key": KEY}
    first = api_client.post(url, '{"name": "Home", "growerId": null}', content_type="application/json", headers=headers)
    again = api_client.post(
        url, '{ "growerId":null,\n "name":"Home" }', content_type="application/json", headers=headers
    )
    assert first.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert Farm.objects.count() == 1


@pytest.mark.parametrize(
    "change",
    ["body", "address", "query"],
)
def test_a_key_sent_with_another_request_is_422_and_makes_nothing(api_client, owner, core_user, change):
    first = post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"})
    assert first.status_code == 201
    url, body = f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"}
    if change == "body":
        body = {"name": "Away"}
    elif change == "address":
        url = f"{FIELDS_BASE}/users/{CoreUserFactory(owner=owner).id}/farms"
    else:
        url += "?note=1"
    problem = assert_problem(post(api_client, url, body), 422, "idempotencyKeyReused")
    assert [e["field"] for e in problem["fieldErrors"]] == ["Idempotency-Key"]
    assert list(Farm.objects.values_list("name", flat=True)) == ["Home"]
    # (and the key still answers its own request)
    assert post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"}).content == first.content


def test_a_key_of_one_endpoint_sent_to_another_is_422(api_client, core_user):
    assert post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"}).status_code == 201
    assert_problem(post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/growers", {"name": "Home"}), 422)
    assert Grower.objects.count() == 0


def test_a_refused_request_gives_its_key_up_so_the_corrected_one_is_made(api_client, core_user):
    url = f"{FIELDS_BASE}/users/{core_user.id}/fields"
    assert_problem(post(api_client, url, {"geometry": {"type": "Point", "coordinates": [0, 0]}}), 400)
    assert IdempotentRequest.objects.count() == 0
    made = post(api_client, url, {"geometry": square(-93.6, 42.0)})
    assert made.status_code == 201 and "Idempotent-Replayed" not in made
    assert post(api_client, url, {"geometry": square(-93.6, 42.0)})["Idempotent-Replayed"] == "true"
    assert Field.objects.count() == 1


@pytest.mark.parametrize(
    ("failure", "status"),
    [(RuntimeError("the disk went away"), 500), (DomainError("A rule said no."), 400)],
    ids=["server-error", "answered-error"],
)
def test_a_request_that_fails_midway_makes_nothing_and_keeps_no_key(
    api_client, core_user, monkeypatch, failure, status
):
    """A keyed request is one transaction: what it wrote before it failed goes with it, whether the failure is a
    server error or one answered as a problem document (which committed: DRF rolls back only under
    ATOMIC_REQUESTS), so the retry with the key does not make it a second time."""
    from fields import views
    from fields.services import farms

    def create_then_fail(**values):
        farms.farm_create(**values)
        raise failure

    monkeypatch.setattr(views.services, "farm_create", create_then_fail)
    api_client.raise_request_exception = False
    url = f"{FIELDS_BASE}/users/{core_user.id}/farms"
    assert_problem(post(api_client, url, {"name": "Home"}), status)
    assert Farm.objects.count() == 0 and IdempotentRequest.objects.count() == 0
    monkeypatch.undo()
    assert post(api_client, url, {"name": "Home"}).status_code == 201
    assert Farm.objects.count() == 1


@pytest.mark.parametrize(
    "key",
    ["", "a" * 256, "two words", 'a"b', "caf\u00e9"],
    ids=["empty", "too-long", "space", "quote", "non-ascii"],
)
def test_a_header_that_is_no_key_is_400_and_makes_nothing(api_client, core_user, key):
    problem = assert_problem(post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {}, key=key), 400)
    assert [e["field"] for e in problem["fieldErrors"]] == ["Idempotency-Key"]
    assert Farm.objects.count() == 0 and IdempotentRequest.objects.count() == 0


def test_the_quoted_form_of_the_draft_is_the_same_key(api_client, core_user):
    url = f"{FIELDS_BASE}/users/{core_user.id}/growers"
    first = post(api_client, url, {"name": "Ann"})
    assert post(api_client, url, {"name": "Ann"}, key=f'"{KEY}"').content == first.content
    assert Grower.objects.count() == 1


def test_a_post_that_only_asks_ignores_the_key(api_client, core_user):
    """An intersection makes nothing: each request is answered afresh (the second sees the field made meanwhile)."""
    url = f"{FIELDS_BASE}/users/{core_user.id}/fields/intersects"
    body = {"geometry": square(-93.6, 42.0)}
    assert post(api_client, url, body).json() == []
    create_field(api_client, core_user, square(-93.6, 42.0))
    again = post(api_client, url, body)
    assert len(again.json()) == 1 and "Idempotent-Replayed" not in again
    assert IdempotentRequest.objects.count() == 0


def test_keys_are_per_api_owner(api_client, other_client, core_user, other_owner):
    """Another owner sending the same key makes its own, and never gets the first owner's answer."""
    mine = post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"}).json()
    theirs_user = CoreUserFactory(owner=other_owner)
    theirs = post(other_client, f"{FIELDS_BASE}/users/{theirs_user.id}/farms", {"name": "Home"})
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert theirs.json()["id"] != mine["id"]
    # The first owner's core user is a 404 to the other owner, with the key or a new one.
    for key in (KEY, "fresh"):
        assert_problem(post(other_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"}, key), 404)
    assert Farm.objects.count() == 2


def test_a_key_is_honoured_for_a_day_then_names_a_new_request(api_client, core_user):
    url = f"{FIELDS_BASE}/users/{core_user.id}/farms"
    first = post(api_client, url, {"name": "Home"}).json()
    IdempotentRequest.objects.update(created_time=IdempotentRequest.objects.get().created_time - timedelta(hours=23))
    assert post(api_client, url, {"name": "Home"}).json()["id"] == first["id"]

    IdempotentRequest.objects.update(created_time=IdempotentRequest.objects.get().created_time - timedelta(hours=1))
    later = post(api_client, url, {"name": "Away"})  # past the day: not compared either
    assert later.status_code == 201 and "Idempotent-Replayed" not in later
    assert post(api_client, url, {"name": "Away"}).json()["id"] == later.json()["id"]
    assert Farm.objects.count() == 2
    assert idempotency.KEY_LIFETIME == timedelta(hours=24)


def test_the_sweep_forgets_the_keys_of_more_than_a_day(api_client, core_user):
    url = f"{FIELDS_BASE}/users/{core_user.id}/farms"
    post(api_client, url, {"name": "Old"}, key="old")
    post(api_client, url, {"name": "New"}, key="new")
    IdempotentRequest.objects.filter(key="old").update(
        created_time=IdempotentRequest.objects.get(key="old").created_time - timedelta(hours=24, minutes=1)
    )
    assert idempotency_keys_sweep() == 1
    assert list(IdempotentRequest.objects.values_list("key", flat=True)) == ["new"]


def test_a_core_users_deletion_takes_the_answers_about_it(api_client, owner, core_user):
    post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Home"})
    post(api_client, f"{MACHINES_BASE}/{core_user.id}/machines", {"name": "8R"}, key="machine")
    post(api_client, USERS_URL, {"name": "Jo", "email": "jo@example.com"}, key="user")
    assert IdempotentRequest.objects.get(key=KEY).core_user_id == core_user.pk
    assert api_client.delete(f"{USERS_URL}/{core_user.pk}").status_code == 204
    assert list(IdempotentRequest.objects.values_list("key", flat=True)) == ["user"]


def test_the_sweep_keeps_the_keys_of_less_than_a_day(api_client, core_user):
    post(api_client, f"{FIELDS_BASE}/users/{core_user.id}/farms", {"name": "Recent"})
    row = IdempotentRequest.objects.get()
    IdempotentRequest.objects.update(created_time=row.created_time - timedelta(hours=23, minutes=59))
    assert idempotency_keys_sweep() == 0 and IdempotentRequest.objects.count() == 1


def test_the_keys_sweep_is_scheduled_hourly(settings):
    entries = [
        entry
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
        if entry["task"] == "platform_site.api.tasks.idempotency_keys_sweep"
    ]
    assert [entry["schedule"] for entry in entries] == [3600.0]


@pytest.mark.django_db(transaction=True)
def test_two_requests_of_one_key_at_once_make_one_farm(owner, core_user, make_client):
    """The second waits for the first at the key's index, then answers what it answered."""
    needs_postgresql()
    url = f"{FIELDS_BASE}/users/{core_user.id}/farms"

    def request():
        client = make_client(owner)
        client.raise_request_exception = False
        return post(client, url, {"name": "Home"})

    responses = run_together(request, request, request)
    assert [r.status_code for r in responses] == [201, 201, 201], [r.content for r in responses]
    assert sorted(r.get("Idempotent-Replayed", "") for r in responses) == ["", "true", "true"]
    assert len({r.content for r in responses}) == 1
    assert Farm.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_retry_while_the_first_request_runs_waits_for_its_answer(owner, core_user, make_client):
    """The first request's transaction is still open when the retry comes (PostgreSQL; SQLite serialises them)."""
    needs_postgresql()
    from tests.concurrency import run_meanwhile

    url = f"{FIELDS_BASE}/users/{core_user.id}/growers"
    client = make_client(owner)
    client.raise_request_exception = False
    with transaction.atomic():
        claimed = IdempotentRequest.objects.create(owner=owner, key=KEY, fingerprint="not yet answered")
        retry = run_meanwhile(lambda: post(client, url, {"name": "Ann"}))
        claimed.delete()  # the first request failed: its key is given up
    response = retry()
    assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert Grower.objects.count() == 1


def test_openapi_documents_the_key_where_it_is_taken(api_client):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]

    def header(path, method="post"):
        parameters = paths[path][method].get("parameters", [])
        return next((p for p in parameters if p["in"] == "header" and p["name"] == "Idempotency-Key"), None)

    keyed = [
        "/services/fields/api/users/{coreUserId}/farms",
        "/services/operations/api/files/merge",
        "/services/operations/api/operations/cropOperationByField",
        "/services/usermanagement/api/users",
        "/services/widgets/api/provider-applications",
    ]
    for path in keyed:
        assert header(path) is not None, path
        assert header(path)["schema"]["pattern"] == idempotency.KEY_PATTERN.pattern
        responses = paths[path]["post"]["responses"]
        assert "idempotencyKeyReused" in responses["422"]["description"], path
        replayed = sorted(code for code, answer in responses.items() if "Idempotent-Replayed" in answer["headers"])
        assert replayed == [next(code for code in responses if code.startswith("2"))], path
    assert header("/services/fields/api/users/{coreUserId}/fields/intersects") is None
    assert header("/services/widgets/api/magic-link/users/{coreUserId}/file-upload") is None
    assert header("/services/operations/api/batch") is not None  # (its own)
    assert "Idempotent-Replayed" in paths["/services/operations/api/batch"]["post"]["responses"]["201"]["headers"]


def test_an_unknown_core_user_is_404_before_the_key_is_claimed(api_client):
    assert_problem(post(api_client, f"{FIELDS_BASE}/users/{uuid.uuid4()}/farms", {"name": "Home"}), 404)
    assert IdempotentRequest.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_crop_retried_with_its_key_makes_one_crop(api_client, core_user):
    from conversion.models import File
    from fields.services import field_create
    from operations.models import Operation
    from tests.operations.helpers import grid_box, grid_table, processed_file

    field_create(core_user=core_user, id="whole", geometry=grid_box())
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    url = "/services/operations/api/operations/cropOperationByField"
    body = {"id": str(Operation.objects.get().pk)}
    before = File.objects.count()
    made, again = post(api_client, url, body), post(api_client, url, body)
    assert made.status_code == 202, made.content
    assert again.status_code == 202 and again["Idempotent-Replayed"] == "true"
    assert again.json()["coreFileId"] == made.json()["coreFileId"]
    assert File.objects.count() == before + 1
