import uuid

import pytest

from assets.models import Machine, OriginType
from tests.assets.helpers import BASE, machine_file_make, machine_make, ts
from tests.factories import CoreUserFactory
from tests.tenancy import assert_cross_tenant_404, assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

BODY = {
    "name": "Big Green 8R",
    "serialNumber": "1RW8370RCKD123456",
    "vin": "VIN0001",
    "model": "8R 370",
    "make": "Deere",
    "category": "TRACTOR",
    "modelYear": 2021,
}


def url(core_user, *parts) -> str:
    return "/".join([f"{BASE}/{core_user.id}/machines", *map(str, parts)])


def test_create_returns_a_user_created_service_own_machine_with_created_at(api_client, core_user):
    response = api_client.post(url(core_user), BODY, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    uuid.UUID(body["id"])
    assert body["coreUserId"] == str(core_user.id)
    assert body["originType"] == "USER_CREATED"
    assert body["provider"] == "ServiceOwn"
    assert body["providerMachineId"] == body["id"]
    assert body["providerOrganizationId"] is None
    assert body["createdAt"] == body["createdTime"] and body["createdTime"].endswith("Z")
    assert {k: body[k] for k in BODY} == BODY
    # Reads carry no createdAt (the spec lists it on create and update responses only).
    read = api_client.get(url(core_user, body["id"])).json()
    assert "createdAt" not in read
    assert read == {k: v for k, v in body.items() if k != "createdAt"}


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x", "modelYear": "2020"}, "modelYear"),
        ({"name": "x", "modelYear": 20.5}, "modelYear"),
        ({"name": "x", "modelYear": 2020.5}, "modelYear"),  # within the years: not cut to 2020
        ({"name": "x", "serialNumber": 12}, "serialNumber"),
        ({"name": "x", "originType": "FILE_POOLED"}, "originType"),
        ({"name": "x", "provider": "ProviderA"}, "provider"),
        ({"name": "x", "modelYear": 1899}, "modelYear"),
        ({"name": "x", "modelYear": 2101}, "modelYear"),
        ({"name": "x", "vin": "V" * 65}, "vin"),
    ],
)
def test_create_rejects_bad_bodies(api_client, core_user, body, field):
    problem = assert_problem(api_client.post(url(core_user), body, format="json"), 400, "validation")
    assert field in {e["field"] for e in problem["fieldErrors"]}
    assert not Machine.objects.exists()


def test_patch_changes_a_user_created_machine_and_answers_created_at(api_client, core_user):
    machine_id = api_client.post(url(core_user), BODY, format="json").json()["id"]
    response = api_client.patch(url(core_user, machine_id), {"name": "Renamed", "modelYear": None}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["name"] == "Renamed" and body["modelYear"] is None
    assert body["serialNumber"] == BODY["serialNumber"] and "createdAt" in body
    assert_problem(api_client.patch(url(core_user, machine_id), {"vin": 7}, format="json"), 400, "validation")
    # A PATCH of one key leaves the others as they are
    patched = api_client.patch(url(core_user, machine_id), {"vin": "1HGCM82633A004352"}, format="json").json()
    assert (patched["name"], patched["vin"]) == ("Renamed", "1HGCM82633A004352")


def test_delete_removes_a_user_created_machine(api_client, core_user):
    machine_id = api_client.post(url(core_user), BODY, format="json").json()["id"]
    response = api_client.delete(url(core_user, machine_id))
    assert response.status_code == 204
    assert_problem(api_client.get(url(core_user, machine_id)), 404, "notFound")


@pytest.mark.parametrize("origin", [OriginType.FILE_POOLED, OriginType.PROVIDER_POOLED])
def test_pooled_and_provider_machines_are_read_only(api_client, core_user, origin):
    machine = machine_make(core_user, origin_type=origin, name="From elsewhere")
    assert_problem(
        api_client.patch(url(core_user, machine.id), {"name": "x"}, format="json"), 403, "providerResourceReadOnly"
    )
    assert_problem(api_client.delete(url(core_user, machine.id)), 403, "providerResourceReadOnly")
    for bad in ({"bogus": "x"}, {"modelYear": "old"}):  # whatever the body
        assert_problem(
            api_client.patch(url(core_user, machine.id), bad, format="json"), 403, "providerResourceReadOnly"
        )
    machine.refresh_from_db()
    assert machine.name == "From elsewhere"


def test_put_is_not_a_machine_method(api_client, core_user):
    machine_id = api_client.post(url(core_user), BODY, format="json").json()["id"]
    assert_problem(api_client.put(url(core_user, machine_id), BODY, format="json"), 405, "methodNotAllowed")


def test_unknown_and_malformed_machine_ids_are_404(api_client, core_user):
    assert_problem(api_client.get(url(core_user, uuid.uuid4())), 404, "notFound")
    assert_problem(api_client.get(url(core_user, "not-a-uuid")), 404, "notFound")
    assert_problem(api_client.get(f"{BASE}/{uuid.uuid4()}/machines"), 404, "notFound")


def test_another_owner_sees_none_of_it(api_client, other_client, core_user):
    machine_id = api_client.post(url(core_user), BODY, format="json").json()["id"]
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=url(core_user, machine_id),
        resource_id=machine_id,
        list_urls=[url(core_user)],
        updates=[("patch", {"name": "stolen"})],
        extra_urls=[("get", url(core_user, machine_id, "files"), None), ("post", url(core_user), BODY)],
        core_user=core_user,
    )
    # A machine of another core user of the same owner is not reachable under this core user either.
    sibling = CoreUserFactory(owner=core_user.owner)
    assert_problem(api_client.get(url(sibling, machine_id)), 404, "notFound")


@pytest.fixture
def fleet(core_user):
    """Three machines with distinct values in every sortable and filterable property."""
    a = machine_make(
        core_user,
        name="Alpha combine",
        provider="ProviderA",
        provider_machine_id="pm-3",
        provider_organization_id="org-2",
        origin_type=OriginType.PROVIDER_POOLED,
        serial_number="SN-B",
        vin="VIN-C",
        model="M-A",
        make="Make-C",
        category="COMBINE",
        model_year=2019,
        created_time=ts("2024-01-01T10:00:00.250600"),  # stored to the microsecond, printed .250
    )
    b = machine_make(
        core_user,
        name="Bravo tractor",
        provider="ProviderG",
        provider_machine_id="pm-1",
        provider_organization_id="org-3",
        origin_type=OriginType.FILE_POOLED,
        serial_number="SN-C",
        vin="VIN-A",
        model="M-B",
        make="Make-A",
        category="TRACTOR",
        model_year=2021,
        created_time=ts("2024-02-01T10:00:00"),
    )
    c = machine_make(
        core_user,
        name="Charlie sprayer",
        provider="ProviderC",
        provider_machine_id="pm-2",
        provider_organization_id="org-1",
        origin_type=OriginType.USER_CREATED,
        serial_number="SN-A",
        vin="VIN-B",
        model="M-C",
        make="Make-B",
        category="SPRAYER",
        model_year=2020,
        created_time=ts("2024-03-01T10:00:00"),
    )
    return a, b, c


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [m["name"] for m in response.json()]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"name": "tract"}, ["Bravo tractor"]),
        ({"name": "ALPHA"}, ["Alpha combine"]),
        ({"provider": "ProviderG"}, ["Bravo tractor"]),
        ({"provider": "ProviderC"}, ["Charlie sprayer"]),
        ({"provider": "ProviderE"}, []),
        ({"providerOrganizationId": "org-2"}, ["Alpha combine"]),
        ({"serialNumber": "SN-A"}, ["Charlie sprayer"]),
        ({"vin": "VIN-A"}, ["Bravo tractor"]),
        ({"originType": "USER_CREATED"}, ["Charlie sprayer"]),
        ({"originType": "FILE_POOLED"}, ["Bravo tractor"]),
        ({"originType": "PROVIDER_POOLED"}, ["Alpha combine"]),
        ({"createdTime": "2024-02-01T10:00:00"}, ["Bravo tractor"]),
        ({"createdTime": "2024-02-01T10:00:00.000Z"}, ["Bravo tractor"]),
        ({"createdTime": "2024-01-01T10:00:00.250"}, ["Alpha combine"]),
        ({"createdTime": "2024-01-01T10:00:00.249"}, []),  # the millisecond before, not up to and including it
        ({"createdTime": "2024-01-01T10:00:00"}, []),
        ({"beforeCreatedTime": "2024-02-01T10:00:00"}, ["Alpha combine"]),
        # "after" the time a record is printed with is after that whole millisecond: not the record again
        ({"afterCreatedTime": "2024-01-01T10:00:00.250Z"}, ["Bravo tractor", "Charlie sprayer"]),
        ({"afterCreatedTime": "2024-01-01T10:00:00.249Z"}, ["Alpha combine", "Bravo tractor", "Charlie sprayer"]),
        ({"beforeCreatedTime": "2024-01-01T10:00:00.250Z"}, []),
        ({"beforeCreatedTime": "2024-01-01T10:00:00.251Z"}, ["Alpha combine"]),
        ({"afterCreatedTime": "2024-02-01T10:00:00"}, ["Charlie sprayer"]),
        ({"afterCreatedTime": "2024-01-15T00:00:00", "beforeCreatedTime": "2024-02-15T00:00:00"}, ["Bravo tractor"]),
        ({"afterCreatedTime": "2024-01-15", "provider": "ProviderC"}, ["Charlie sprayer"]),
    ],
)
def test_every_machine_filter(api_client, core_user, fleet, params, expected):
    assert names(api_client.get(url(core_user), {**params, "sort": "name"})) == expected


@pytest.mark.parametrize(
    "params, field",
    [
        ({"provider": "ProviderZ"}, "provider"),
        ({"originType": "USER"}, "originType"),
        ({"createdTime": "yesterday"}, "createdTime"),
        ({"beforeCreatedTime": "2024-13-01T00:00:00"}, "beforeCreatedTime"),
        ({"afterCreatedTime": "2024-01-01T25:00:00"}, "afterCreatedTime"),
        ({"sort": "color"}, "sort"),
        ({"sort": "name,sideways"}, "sort"),
        ({"page": "-1"}, "page"),
        ({"size": "ten"}, "size"),
    ],
)
def test_bad_machine_list_parameters_are_400(api_client, core_user, fleet, params, field):
    problem = assert_problem(api_client.get(url(core_user), params), 400, "validation")
    assert field in {e["field"] for e in problem["fieldErrors"]}


MACHINE_SORTS = {
    "id": lambda m: str(m.id),
    "coreUserId": lambda m: (str(m.core_user_id), str(m.id)),
    "name": lambda m: m.name,
    "provider": lambda m: m.provider,
    "providerOrganizationId": lambda m: m.provider_organization_id,
    "providerMachineId": lambda m: m.provider_machine_id,
    "serialNumber": lambda m: m.serial_number,
    "vin": lambda m: m.vin,
    "model": lambda m: m.model,
    "make": lambda m: m.make,
    "category": lambda m: m.category,
    "modelYear": lambda m: m.model_year,
}


@pytest.mark.parametrize("prop", sorted(MACHINE_SORTS))
def test_every_machine_sort_value_in_both_directions(api_client, core_user, fleet, prop):
    ascending = [m.name for m in sorted(fleet, key=MACHINE_SORTS[prop])]
    assert names(api_client.get(url(core_user), {"sort": prop})) == ascending
    assert names(api_client.get(url(core_user), {"sort": f"{prop},asc"})) == ascending
    if prop != "coreUserId":
        assert names(api_client.get(url(core_user), {"sort": f"{prop},desc"})) == ascending[::-1]


def test_the_first_sort_value_takes_precedence(api_client, core_user, fleet):
    machine_make(core_user, name="Alpha combine", model_year=2000, origin_type=OriginType.FILE_POOLED)
    got = api_client.get(url(core_user), [("sort", "name,desc"), ("sort", "modelYear,asc")]).json()
    assert [(m["name"], m["modelYear"]) for m in got] == [
        ("Charlie sprayer", 2020),
        ("Bravo tractor", 2021),
        ("Alpha combine", 2000),
        ("Alpha combine", 2019),
    ]


def test_machine_list_pages_with_headers(api_client, core_user, fleet):
    response = api_client.get(url(core_user), {"size": 2, "page": 1, "sort": "name"})
    assert names(response) == ["Charlie sprayer"]
    assert response["X-Total-Count"] == "3"
    assert 'rel="first"' in response["Link"] and 'rel="prev"' in response["Link"]
    assert len(api_client.get(url(core_user), {"size": 1000}).json()) == 3


def test_deleting_a_machine_deletes_its_machine_files(api_client, core_user):
    machine_id = api_client.post(url(core_user), BODY, format="json").json()["id"]
    machine_file_make(Machine.objects.get(pk=machine_id))
    assert api_client.delete(url(core_user, machine_id)).status_code == 204
    assert not Machine.objects.filter(pk=machine_id).exists()


@pytest.fixture
def machine_being_changed(owner, core_user, make_client):
    """Run `change(url)` (a request of the owner) inside a transaction held open, and `then` (method, body) as
    another request meanwhile; returns that request's answer once the transaction committed."""
    from django.db import transaction

    from tests.concurrency import needs_postgresql, request_later, run_meanwhile

    needs_postgresql()
    client = make_client(owner)
    machine = client.post(url(core_user), {"name": "Old", "vin": "OLDVIN"}, format="json").json()
    machine_url = url(core_user, machine["id"])

    def run(change: tuple, then: tuple):
        with transaction.atomic():
            method, body = change
            assert getattr(client, method)(machine_url, body, format="json").status_code in (200, 204)
            method, body = then
            other = run_meanwhile(request_later(make_client, owner, method, machine_url, body))
        return other()

    run.machine_id = machine["id"]
    return run


@pytest.mark.django_db(transaction=True)
def test_two_changes_of_one_machine_at_once_are_both_kept(machine_being_changed):
    """The later change saved every column of the copy it had read: the earlier change was lost."""
    answer = machine_being_changed(("patch", {"name": "New"}), then=("patch", {"vin": "NEWVIN"}))
    assert answer.status_code == 200 and (answer.json()["name"], answer.json()["vin"]) == ("New", "NEWVIN")
    stored = Machine.objects.get(pk=machine_being_changed.machine_id)
    assert (stored.name, stored.vin) == ("New", "NEWVIN")


@pytest.mark.django_db(transaction=True)
def test_a_change_arriving_while_its_machine_is_being_deleted_is_a_404(machine_being_changed):
    """The change saved its copy: the deleted machine came back."""
    answer = machine_being_changed(("delete", None), then=("patch", {"name": "Late"}))
    assert_problem(answer, 404, "notFound")
    assert not Machine.objects.filter(pk=machine_being_changed.machine_id).exists()


@pytest.mark.django_db(transaction=True)
def test_two_deletions_of_one_machine_at_once_announce_it_once(owner, machine_being_changed, subscribe):
    from webhooks.models import Delivery

    class Nowhere:
        url = "http://127.0.0.1:9/hook"

    subscribe(owner, Nowhere, ["machineDeleted"])
    answer = machine_being_changed(("delete", None), then=("delete", None))
    assert answer.status_code == 404  # (the first deleted it: as one after it)
    assert Delivery.objects.filter(event="machineDeleted").count() == 1


def test_a_machine_deleted_after_its_core_user_was_deleted_is_already_gone(owner):
    """The DELETE read the machine, then the user's deletion committed: the machine's user was read to lock it, a
    CoreUser.DoesNotExist, a 500. Now the user is locked by id, and the machine is found gone."""
    from assets.services import machine_create, machine_delete
    from platform_site.accounts.services import core_user_delete

    core_user = CoreUserFactory(owner=owner)
    machine = machine_create(core_user=core_user, name="Combine")
    read_by_the_delete = Machine.objects.get(pk=machine.pk)
    core_user_delete(core_user=core_user)
    assert machine_delete(machine=read_by_the_delete) is False
