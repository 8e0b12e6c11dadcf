"""File and batch lists, filters, paging and sort; the operation files of a field; tenancy of every endpoint."""

import io
import zipfile
from datetime import timedelta

import pytest
from django.db.models import F
from shapely.geometry import MultiPoint, MultiPolygon, box

from assets.models import Machine
from conversion.readers.base import MachineIdentity
from fields.services import field_create
from tests.operations.helpers import grid_box, grid_table, processed_file
from tests.tenancy import assert_cross_tenant_404, assert_problem

from .conftest import BATCH_URL, FILES_URL, upload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

FIELDS = "/services/fields/api/users/{user}/fields/{field}/operations"


@pytest.fixture
def harvest_zip(jd_shapefiles) -> bytes:
    return (jd_shapefiles / "Export From MyJohnDeere - Harvest.zip").read_bytes()


@pytest.fixture
def seeding_zip(jd_shapefiles) -> bytes:
    return (jd_shapefiles / "Export From MyJohnDeere - Seeding.zip").read_bytes()


def _points_hull(data: bytes, tmp_path):
    """The convex hull of a shapefile export's points, read with pyshp (independent of our reader)."""
    import shapefile

    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    shp = next(tmp_path.rglob("*.shp"))
    return MultiPoint([s.points[0] for s in shapefile.Reader(str(shp)).shapes()]).convex_hull


@pytest.fixture
def converted(api_client, core_user, harvest_zip, seeding_zip, tmp_path):
    """A field over the Merriweather Farms exports, then the harvest and the seeding uploaded."""
    hull = _points_hull(harvest_zip, tmp_path)
    field = field_create(core_user=core_user, name="JT-01", geometry=MultiPolygon([hull]))
    harvest = upload(api_client, core_user.pk, harvest_zip, provider="ProviderA").json()
    seeding = upload(api_client, core_user.pk, seeding_zip, provider="Other").json()
    files = {}
    for name, batch in (("harvest", harvest), ("seeding", seeding)):
        body = api_client.get(f"{BATCH_URL}/{batch['id']}").json()
        assert body["status"] == "PROCESSED", body
        files[name] = api_client.get(f"{FILES_URL}/{body['files'][0]}").json()
    return field, harvest, seeding, files


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    body = response.json()
    items = body["operations"] if isinstance(body, dict) else body
    return [item["id"] for item in items]


def test_files_are_attached_to_the_field_they_cover(api_client, core_user, converted):
    field, _, _, files = converted
    assert files["harvest"]["fields"] == [str(field.pk)]
    assert files["seeding"]["fields"] == [str(field.pk)]
    url = FIELDS.format(user=core_user.pk, field=field.pk)
    uploaded = sorted(f["id"] for f in files.values())
    assert sorted(_ids(api_client.get(f"{url}/files?origin=uploaded"))) == uploaded
    assert sorted(_ids(api_client.get(f"{url}?origin=uploaded"))) == uploaded  # deprecated path
    one = api_client.get(f"{url}/files/{files['harvest']['id']}").json()
    assert one == files["harvest"]
    outline = api_client.get(f"{url}/{files['harvest']['id']}").json()
    assert outline == [files["harvest"]]


FIELD_FILE_CASES = [
    ("operationType=harvested", ["harvest"]),
    ("operationType=planted", ["seeding"]),
    ("operationType=applied", []),
    ("provider=ProviderA", ["harvest"]),
    ("crop=Soybeans", ["harvest", "seeding"]),
    ("crop=corn", []),
    ("startTime=2016-09-01T00:00:00Z", ["harvest"]),
    ("endTime=2016-05-01", ["seeding"]),
]
FILE_CASES = [
    ("status=processed", ["harvest", "seeding"]),
    ("status=failed", []),
    ("provider=ProviderA", ["harvest"]),
    ("operationType=planted", ["seeding"]),
    ("startTime=2016-09-01T00:00:00Z", ["harvest"]),
    ("endTime=2016-05-01T00:00:00Z", ["seeding"]),
    ("minArea=1", ["harvest", "seeding"]),
    ("minArea=1e9", []),
    ("createdTime=2000-01-01T00:00:00Z", ["harvest", "seeding"]),
    ("createdTime=2100-01-01T00:00:00Z", []),
]


def test_a_crop_longer_than_any_file_can_hold_matches_nothing(api_client, core_user, converted):
    """55,000 characters were a 500 on SQLite (a LIKE pattern over 50,000 bytes); no file's crops hold so many."""
    url = FIELDS.format(user=core_user.pk, field=converted[0].pk)
    for listing in (f"{url}/files", url):  # and the deprecated path
        for crop in ("soybeans" + " " * 2000 + "x", "x" * 55_000):
            response = api_client.get(listing, {"crop": crop})
            assert response.status_code == 200, response.content[:300]
            assert response.json() == []
    assert len(_ids(api_client.get(f"{url}/files", {"crop": "soybeans", "origin": "uploaded"}))) == 2


def test_the_crop_filter_never_spans_two_crops(api_client, core_user):
    """`corn|soybeans` matched a file of corn and soybeans: the filter compared text of the keys "|corn|soybeans|"."""
    from tests.operations.helpers import grid_box, grid_table, processed_file

    field = field_create(core_user=core_user, name="F", geometry=grid_box())
    table = grid_table()
    table.crops = ["corn", "soybeans"]
    processed_file(core_user, table)
    url = FIELDS.format(user=core_user.pk, field=field.pk) + "/files"
    assert len(_ids(api_client.get(url, {"crop": "corn", "origin": "uploaded"}))) == 1
    response = api_client.get(url, {"crop": "corn|soybeans"})
    assert (_ids(response), response["X-Total-Count"]) == ([], "0")


def test_field_file_and_file_list_filters(api_client, core_user, converted):
    """Every filter on the uploaded files (operations may add automerged files of their own)."""
    field, _, _, files = converted
    url = FIELDS.format(user=core_user.pk, field=field.pk)
    for query, expected in FIELD_FILE_CASES:
        found = _ids(api_client.get(f"{url}/files?{query}&origin=uploaded"))
        assert sorted(found) == sorted(files[n]["id"] for n in expected), query
    for query, expected in FILE_CASES:
        found = _ids(api_client.get(f"{FILES_URL}?{query}&origin=uploaded"))
        assert sorted(found) == sorted(files[n]["id"] for n in expected), query


def test_time_and_area_filters_hold_their_bounds(api_client, core_user, converted):
    """startTime: started then or later; endTime: ended then or earlier; minArea: that area or more."""
    field, _, _, files = converted
    seeding, harvest = files["seeding"], files["harvest"]
    field_url = FIELDS.format(user=core_user.pk, field=field.pk) + "/files"
    for url in (field_url, FILES_URL):

        def listed(url=url, **params):
            return sorted(_ids(api_client.get(url, {**params, "origin": "uploaded"})))

        assert listed(startTime=harvest["startTime"]) == [harvest["id"]]
        assert listed(endTime=seeding["endTime"]) == [seeding["id"]]
        assert listed(endTime=seeding["startTime"]) == []  # started by then, not ended
    from conversion.models import File

    area = File.objects.get(pk=harvest["id"]).area  # square metres, as minArea
    assert harvest["id"] in _ids(api_client.get(FILES_URL, {"minArea": repr(area)}))
    assert harvest["id"] not in _ids(api_client.get(FILES_URL, {"minArea": repr(area * (1 + 1e-9))}))


def test_the_updated_time_filter_finds_the_files_changed_since(api_client, core_user, converted):
    """Not in the spec's list of file filters: without it a syncing client could not find the files that changed
    (a file's `updatedTime` moves when it is processed, or a field or machine it names goes)."""
    from conversion.models import File

    _, _, _, files = converted
    harvest = files["harvest"]
    later = File.objects.get(pk=harvest["id"]).updated_time + timedelta(hours=1)
    File.objects.filter(pk=harvest["id"]).update(updated_time=later)
    record = api_client.get(f"{FILES_URL}/{harvest['id']}").json()
    assert _ids(api_client.get(FILES_URL, {"updatedTime": record["updatedTime"]})) == [harvest["id"]]
    before = (later - timedelta(milliseconds=1)).isoformat()
    assert harvest["id"] in _ids(api_client.get(FILES_URL, {"updatedTime": before}))
    after = (later + timedelta(milliseconds=1)).isoformat()
    assert _ids(api_client.get(FILES_URL, {"updatedTime": after})) == []
    assert_problem(api_client.get(FILES_URL, {"updatedTime": "yesterday"}), 400, "validation")


def test_an_end_time_filter_takes_in_the_whole_millisecond_it_names(api_client, core_user, converted):
    """A file that ended within the millisecond a response prints has ended by then (`endTime` is "ended then or
    earlier"), though its time holds microseconds past it."""
    from conversion.models import File

    field, _, _, files = converted
    seeding = files["seeding"]
    File.objects.filter(pk=seeding["id"]).update(end_time=F("end_time") + timedelta(microseconds=600))
    printed = api_client.get(f"{FILES_URL}/{seeding['id']}").json()["endTime"]
    assert printed == seeding["endTime"]
    for url in (FIELDS.format(user=core_user.pk, field=field.pk) + "/files", FILES_URL):
        assert seeding["id"] in _ids(api_client.get(url, {"endTime": printed, "origin": "uploaded"})), url


@pytest.mark.parametrize(("threshold", "attached"), [(None, True), (40.0, True), (60.0, False)])
def test_a_file_is_attached_to_a_field_it_overlaps_by_the_configured_share(core_user, threshold, attached):
    """The field lies half over the file's coverage: about 50 % of either, whichever the configuration asks."""
    from configs.services import config_user_set
    from tests.operations.helpers import LON0, STEP

    if threshold is not None:
        config_user_set(core_user=core_user, entries={"fieldsAttachIntersection": threshold}, replace=True)
    field = field_create(core_user=core_user, geometry=grid_box(lon0=LON0 + 10 * STEP))
    file = processed_file(core_user, grid_table())
    assert field.file_links.filter(file_id=str(file.pk)).exists() is attached


def test_a_file_naming_one_machine_twice_lists_it_once(api_client, core_user):
    """Two spellings of one serial number (say, the tractor's and a section's description) are one machine."""
    table = grid_table()
    table.machines = [
        MachineIdentity(kind="machine", name="Combine", serial_number="1H0S680-123"),
        MachineIdentity(kind="machine", name="Combine 1", serial_number="1h0s680 123"),
    ]
    file = processed_file(core_user, table)
    [machine] = api_client.get(f"{FILES_URL}/{file.pk}").json()["machines"]
    assert Machine.objects.get(pk=machine).serial_number == "1H0S680-123"


def test_the_varieties_of_a_file_of_several_crops_are_of_no_crop_known(api_client, core_user):
    """Which of the file's crops a variety is of, the file does not say: none is guessed."""
    table = grid_table()
    table.crops, table.varieties = ["corn", "soybeans"], ["AG36X6"]
    processed_file(core_user, table)
    [variety] = api_client.get(f"/services/beta/api/users/{core_user.pk}/varieties").json()
    assert variety["name"] == "AG36X6" and variety["crops"] == []


def test_a_field_lists_only_the_files_attached_to_it(api_client, core_user, converted):
    elsewhere = field_create(core_user=core_user, name="Far", geometry=MultiPolygon([box(10, 50, 10.01, 50.01)]))
    url = FIELDS.format(user=core_user.pk, field=elsewhere.pk)
    assert _ids(api_client.get(f"{url}/files")) == [] and _ids(api_client.get(url)) == []


def test_file_list_batch_and_user_filters_paging_and_sort(api_client, core_user, converted):
    _, harvest, _, files = converted
    assert _ids(api_client.get(f"{FILES_URL}?batchId={harvest['id']}")) == [files["harvest"]["id"]]
    assert len(_ids(api_client.get(f"{FILES_URL}?coreUserId={core_user.pk}&origin=uploaded"))) == 2
    response = api_client.get(f"{FILES_URL}?origin=uploaded&size=1&page=1&sort=startTime,asc")
    assert response["X-Total-Count"] == "2"
    assert 'rel="prev"' in response["Link"]
    assert _ids(response) == [files["harvest"]["id"]]
    by_start = _ids(api_client.get(f"{FILES_URL}?origin=uploaded&sort=startTime,desc"))
    assert by_start == [files["harvest"]["id"], files["seeding"]["id"]]


def test_bad_filter_values_are_400(api_client):
    for query in ("status=done", "operationType=sowing", "minArea=abc", "startTime=yesterday", "batchId=42"):
        assert_problem(api_client.get(f"{FILES_URL}?{query}"), 400)
    assert_problem(api_client.get(f"{FILES_URL}?sort=colour,asc"), 400)


def test_batch_list_and_filters(api_client, core_user, converted):
    _, harvest, seeding, _ = converted
    assert sorted(_ids(api_client.get(BATCH_URL))) == sorted([harvest["id"], seeding["id"]])
    assert _ids(api_client.get(f"{BATCH_URL}?provider=ProviderA")) == [harvest["id"]]
    assert _ids(api_client.get(f"{BATCH_URL}?status=FAILED")) == []
    assert_problem(api_client.get(f"{BATCH_URL}?status=DONE"), 400)


def test_outputs_of_a_file_that_did_not_convert_are_404(api_client, core_user, samples_dir):
    card = samples_dir / "johndeere-sampledata/Display data/Gen4 - 4600 Harvest Data.zip"
    batch = api_client.get(f"{BATCH_URL}/{upload(api_client, core_user.pk, card.read_bytes()).json()['id']}").json()
    file_id = batch["files"][0]
    for output in ("summary", "units", "standardGeojson", "rawGeojson", "originalFile"):
        assert_problem(api_client.get(f"{FILES_URL}/{file_id}/{output}"), 404)
    status = api_client.get(f"{FILES_URL}/{file_id}/status").json()
    assert status["status"] == "failed"
    assert {s["status"] for s in status["steps"].values()} == {"failed"}


def test_another_owner_sees_nothing(api_client, other_client, core_user, converted):
    field, harvest, _, files = converted
    file_id = files["harvest"]["id"]
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{FILES_URL}/{file_id}",
        resource_id=file_id,
        list_urls=[FILES_URL, f"{FILES_URL}?coreUserId={core_user.pk}"],
        delete=False,
        extra_urls=[
            ("get", f"{FILES_URL}/{file_id}/{output}", None)
            for output in ("summary", "units", "status", "standardGeojson", "rawGeojson", "originalFile")
        ]
        + [
            ("get", f"{FIELDS.format(user=core_user.pk, field=field.pk)}{path}", None)
            for path in ("/files", f"/files/{file_id}", "", f"/{file_id}")  # (and the deprecated paths)
        ],
        core_user=core_user,
    )
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{BATCH_URL}/{harvest['id']}",
        resource_id=harvest["id"],
        list_urls=[BATCH_URL],
        delete=False,
        extra_urls=[
            ("get", f"{BATCH_URL}/{harvest['id']}/status", None),
            ("put", f"{BATCH_URL}/{harvest['id']}/retry", None),
        ],
    )


def test_malformed_ids_are_404(api_client, core_user):
    assert_problem(api_client.get(f"{FILES_URL}/not-a-uuid"), 404)
    assert_problem(api_client.get(f"{BATCH_URL}/123/status"), 404)
    assert_problem(api_client.get(FIELDS.format(user=core_user.pk, field="nope") + "/files"), 404)


def test_a_deleted_machine_leaves_the_files_it_collected(api_client, core_user):
    # Given a machine the user made, and a file whose machine has its serial number (pooled into it)
    machines = f"/services/beta/api/users/{core_user.pk}/machines"
    made = api_client.post(machines, {"name": "Big Green", "serialNumber": "1RW8370R"}, format="json").json()
    table = grid_table()
    table.machines = [MachineIdentity(kind="machine", serial_number="1rw-8370r", name="8R 370")]
    kept = api_client.post(machines, {"name": "Sprayer", "serialNumber": "SP-1"}, format="json").json()
    table.machines.append(MachineIdentity(kind="machine", serial_number="SP-1"))
    field = field_create(core_user=core_user, geometry=grid_box(), name="North")
    file = processed_file(core_user, table)
    assert api_client.get(f"{FILES_URL}/{file.pk}").json()["machines"] == [made["id"], kept["id"]]

    # When the machine is deleted
    assert api_client.delete(f"{machines}/{made['id']}").status_code == 204

    # Then the file no longer names it, alone or in a list (its own, its field's); the other machine stays
    field_files = f"{FIELDS.format(user=core_user.pk, field=field.pk)}/files"
    assert api_client.get(f"{FILES_URL}/{file.pk}").json()["machines"] == [kept["id"]]
    assert api_client.get(f"{field_files}/{file.pk}").json()["machines"] == [kept["id"]]
    [listed] = [f for f in api_client.get(FILES_URL).json()["operations"] if f["id"] == str(file.pk)]
    [listed_by_field] = [f for f in api_client.get(field_files).json() if f["id"] == str(file.pk)]
    assert listed["machines"] == listed_by_field["machines"] == [kept["id"]]


def test_files_are_listed_newest_first_unless_sorted(api_client, core_user):
    older = processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    newer = processed_file(core_user, grid_table(start="2024-08-01T10:00:00", seed=1))
    assert _ids(api_client.get(f"{FILES_URL}?origin=uploaded")) == [str(newer.pk), str(older.pk)]
    assert _ids(api_client.get(f"{FILES_URL}?origin=uploaded&sort=createdTime,asc")) == [str(older.pk), str(newer.pk)]


def test_a_file_no_longer_processed_serves_none_of_its_outputs(api_client, core_user):
    """An automerged file being rebuilt (or whose rebuild failed) kept its earlier outputs in storage: none of
    them is served until it is processed again; its record and status still are."""
    from conversion.models import File, FileStatus

    file = processed_file(core_user, grid_table())
    url = f"{FILES_URL}/{file.pk}"
    outputs = ["summary", "units", "images", "images/harvestMoisture.png", "standardGeojson", "rawGeojson"]
    assert all(api_client.get(f"{url}/{output}").status_code == 200 for output in outputs)
    for status in (FileStatus.PROCESSING, FileStatus.FAILED):
        File.objects.filter(pk=file.pk).update(status=status)
        for output in outputs:
            assert_problem(api_client.get(f"{url}/{output}"), 404, "notFound")
        assert api_client.get(url).json()["status"] == status
        assert api_client.get(f"{url}/status").status_code == 200
