import uuid

import pytest

from assets.models import OriginType
from tests.assets.helpers import BASE, machine_file_make, machine_make, ts
from tests.factories import CoreUserFactory
from tests.tenancy import assert_cross_tenant_404, assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

FILE_IDS = [uuid.UUID(f"{n:08d}-0000-4000-8000-000000000000") for n in (2, 3, 1)]


def url(core_user, machine) -> str:
    return f"{BASE}/{core_user.id}/machines/{machine.id}/files"


@pytest.fixture
def machine(core_user):
    return machine_make(core_user, name="Combine", origin_type=OriginType.FILE_POOLED, serial_number="S1")


@pytest.fixture
def files(machine):
    """Three machine files, named by their position: distinct in every filterable property."""
    return [
        machine_file_make(
            machine,
            core_file_id=FILE_IDS[0],
            origin_type=OriginType.FILE_POOLED,
            start_time=ts("2024-05-01T08:00:00"),
            end_time=ts("2024-05-01T12:00:00"),
            distance_value=1.5,
            distance_unit="mile",
            fuel_consumption_value=12.0,
            fuel_consumption_unit="US gal",
            created_time=ts("2024-05-02T00:00:00"),
        ),
        machine_file_make(
            machine,
            core_file_id=FILE_IDS[1],
            origin_type=OriginType.PROVIDER_POOLED,
            start_time=ts("2024-05-03T08:00:00.500"),
            end_time=ts("2024-05-03T18:00:00"),
            distance_value=5280.0,
            distance_unit="ft",
            created_time=ts("2024-05-04T00:00:00"),
        ),
        machine_file_make(
            machine,
            core_file_id=FILE_IDS[2],
            origin_type=OriginType.FILE_POOLED,
            start_time=ts("2024-04-20T06:00:00"),
            end_time=ts("2024-04-20T07:00:00"),
            distance_value=3.25,
            distance_unit="Mile",
            created_time=ts("2024-04-21T00:00:00"),
        ),
    ]


def positions(response, files) -> list[int]:
    assert response.status_code == 200, response.content
    index = {str(f.id): i for i, f in enumerate(files)}
    return [index[item["id"]] for item in response.json()]


def test_a_machine_file_has_the_spec_shape(api_client, core_user, machine, files):
    body = api_client.get(url(core_user, machine), {"coreFileId": str(FILE_IDS[0])}).json()
    assert body == [
        {
            "id": str(files[0].id),
            "coreFileId": str(FILE_IDS[0]),
            "machineId": str(machine.id),
            "coreUserId": str(core_user.id),
            "originType": "FILE_POOLED",
            "startTime": "2024-05-01T08:00:00.000Z",
            "endTime": "2024-05-01T12:00:00.000Z",
            "createdTime": "2024-05-02T00:00:00.000Z",
            "distance": {"value": 1.5, "unit": "mile"},
            "fuelConsumption": {"value": 12.0, "unit": "US gal"},
        }
    ]
    second = api_client.get(url(core_user, machine), {"coreFileId": str(FILE_IDS[1])}).json()[0]
    assert second["fuelConsumption"] is None


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"coreFileId": str(FILE_IDS[1])}, [1]),
        ({"coreFileId": str(uuid.uuid4())}, []),
        ({"originType": "FILE_POOLED"}, [2, 0]),
        ({"originType": "PROVIDER_POOLED"}, [1]),
        ({"originType": "USER_CREATED"}, []),
        ({"createdTime": "2024-05-04T00:00:00"}, [1]),
        ({"beforeCreatedTime": "2024-05-02T00:00:00"}, [2]),
        ({"afterCreatedTime": "2024-05-02T00:00:00"}, [1]),
        ({"startTime": "2024-05-01T08:00:00"}, [0]),
        ({"startTime": "2024-05-03T08:00:00.500Z"}, [1]),
        ({"endTime": "2024-04-20T07:00:00"}, [2]),
        ({"beforeStartTime": "2024-05-01T08:00:00"}, [2]),
        ({"afterStartTime": "2024-05-01T08:00:00"}, [1]),
        ({"beforeEndTime": "2024-05-03T00:00:00"}, [2, 0]),
        ({"afterEndTime": "2024-05-01T11:59:59"}, [0, 1]),
        ({"afterStartTime": "2024-04-01T00:00:00", "beforeEndTime": "2024-05-01T12:00:01"}, [2, 0]),
        ({"distanceValue": "1.5"}, [0]),
        ({"distanceValue": "5280"}, [1]),
        ({"greaterThanDistanceValue": "1.5"}, [2, 1]),
        ({"lessThanDistanceValue": "3.25"}, [0]),
        ({"greaterThanDistanceValue": "1", "lessThanDistanceValue": "1e4"}, [2, 0, 1]),
        ({"greaterThanDistanceValue": "-1e300", "lessThanDistanceValue": "1e300"}, [2, 0, 1]),  # any double
        ({"distanceValue": "1e60"}, []),
        ({"distanceUnit": "mile"}, [2, 0]),
        ({"distanceUnit": "Mile"}, [2, 0]),
        ({"distanceUnit": "ft"}, [1]),
        ({"distanceUnit": "Feet"}, [1]),
        ({"distanceUnit": "mile", "greaterThanDistanceValue": "2"}, [2]),
    ],
)
def test_every_machine_file_filter(api_client, core_user, machine, files, params, expected):
    assert positions(api_client.get(url(core_user, machine), params), files) == expected


@pytest.mark.parametrize(
    "params, field",
    [
        ({"coreFileId": "file-1"}, "coreFileId"),
        ({"originType": "USER"}, "originType"),
        ({"createdTime": "2024-05-04 noon"}, "createdTime"),
        ({"startTime": "05/01/2024"}, "startTime"),
        ({"beforeEndTime": "tomorrow"}, "beforeEndTime"),
        ({"afterStartTime": "2024-02-30T00:00:00"}, "afterStartTime"),
        ({"distanceValue": "far"}, "distanceValue"),
        ({"greaterThanDistanceValue": "nan"}, "greaterThanDistanceValue"),
        ({"lessThanDistanceValue": "inf"}, "lessThanDistanceValue"),
        ({"lessThanDistanceValue": "1e309"}, "lessThanDistanceValue"),  # past the largest double
        ({"greaterThanDistanceValue": "1_000"}, "greaterThanDistanceValue"),  # Python's float() reads these two
        ({"distanceValue": "\u0663"}, "distanceValue"),
        ({"afterStartTime": "0001-01-01T00:00:00+01:00"}, "afterStartTime"),  # the year 0 in UTC
        ({"distanceUnit": "km"}, "distanceUnit"),
        ({"distanceUnit": "MILE"}, "distanceUnit"),
        ({"sort": "distance"}, "sort"),
    ],
)
def test_bad_machine_file_parameters_are_400(api_client, core_user, machine, files, params, field):
    problem = assert_problem(api_client.get(url(core_user, machine), params), 400, "validation")
    assert field in {e["field"] for e in problem["fieldErrors"]}


FILE_SORTS = {
    "id": lambda f: str(f.id),
    "coreUserId": lambda f: (str(f.core_user_id), str(f.id)),
    "machineId": lambda f: (str(f.machine_id), str(f.id)),
    "startTime": lambda f: f.start_time,
    "endTime": lambda f: f.end_time,
    "createdTime": lambda f: f.created_time,
    "coreFileId": lambda f: str(f.core_file_id),
}


@pytest.mark.parametrize("prop", sorted(FILE_SORTS))
def test_every_machine_file_sort_value(api_client, core_user, machine, files, prop):
    expected = [files.index(f) for f in sorted(files, key=FILE_SORTS[prop])]
    assert positions(api_client.get(url(core_user, machine), {"sort": prop}), files) == expected
    if prop not in ("coreUserId", "machineId"):
        got = positions(api_client.get(url(core_user, machine), {"sort": f"{prop},desc"}), files)
        assert got == expected[::-1]


@pytest.mark.parametrize("direction", ["asc", "desc"])
def test_records_without_the_sorted_value_come_last_either_way(api_client, core_user, machine, files, direction):
    """One rule on both databases (PostgreSQL puts NULL first in descending order, SQLite first in ascending)."""
    undated = machine_file_make(machine, start_time=None, end_time=None)
    listed = [r["id"] for r in api_client.get(url(core_user, machine), {"sort": f"startTime,{direction}"}).json()]
    assert len(listed) == 4 and listed[-1] == str(undated.id)
    if direction == "asc":  # the default order too
        assert [r["id"] for r in api_client.get(url(core_user, machine)).json()][-1] == str(undated.id)


def test_default_order_is_start_time_and_paging_works(api_client, core_user, machine, files):
    response = api_client.get(url(core_user, machine), {"size": 2})
    assert positions(response, files) == [2, 0]
    assert response["X-Total-Count"] == "3"


def test_only_the_machines_own_files_are_listed(api_client, core_user, machine, files):
    other_machine = machine_make(core_user, name="Other", origin_type=OriginType.FILE_POOLED, serial_number="S2")
    machine_file_make(other_machine)
    assert len(api_client.get(url(core_user, machine)).json()) == 3
    assert len(api_client.get(url(core_user, other_machine)).json()) == 1


def test_machine_files_of_a_missing_or_foreign_machine_are_404(api_client, other_client, core_user, machine, files):
    missing = f"{BASE}/{core_user.id}/machines/{uuid.uuid4()}/files"
    assert_problem(api_client.get(missing), 404, "notFound")
    sibling = CoreUserFactory(owner=core_user.owner)
    assert_problem(api_client.get(f"{BASE}/{sibling.id}/machines/{machine.id}/files"), 404, "notFound")
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=url(core_user, machine),
        resource_id=files[0].id,
        delete=False,
        core_user=core_user,
    )
