"""What a file and its operation show when the fields they cover change without a new build: a field deleted, a
merged field absorbed into another. Their `fields` follow, and their `updatedTime` moves (a client syncing with the
time filters would otherwise keep a deleted field, or never learn of the merged field that took the operation)."""

import pytest

from configs.services import config_owner_update
from operations.models import Operation
from tests.factories import CoreUserFactory
from tests.fields.helpers import create_field, field_url, rect

from .helpers import LAT0, LON0, grid_table, processed_file

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

OPS_URL = "/services/operations/api/operations"
FILES_URL = "/services/operations/api/files"


def _around_the_grid(west: float, east: float) -> dict:
    """A field over the grid's rows (helpers.grid_table), from `west` to `east` degrees east of its first column."""
    return rect(LON0 + west, LAT0 - 0.001, LON0 + east, LAT0 + 0.002)


def test_a_deleted_field_leaves_its_files_and_operations_which_say_they_changed(api_client, owner, core_user):
    """Only those: another user's file and operation over the same ground stay as they were."""
    other_user = CoreUserFactory(owner=owner)
    create_field(api_client, other_user, _around_the_grid(-0.001, 0.003))
    theirs = processed_file(other_user, grid_table(operation_type="applied"))
    their_operation = api_client.get(f"{OPS_URL}/{Operation.objects.get(core_user=other_user).pk}").json()
    their_file = api_client.get(f"{FILES_URL}/{theirs.pk}").json()
    kept = create_field(api_client, core_user, _around_the_grid(-0.001, 0.001))
    gone = create_field(api_client, core_user, _around_the_grid(0.001, 0.003))
    processed_file(core_user, grid_table(operation_type="applied"))
    operation = api_client.get(f"{OPS_URL}/{Operation.objects.get(core_user=core_user).pk}").json()
    assert sorted(f["id"] for f in operation["fields"]) == sorted([kept["id"], gone["id"]])
    [source_id] = operation["files"]
    source = api_client.get(f"{FILES_URL}/{source_id}").json()
    automerged = api_client.get(f"{FILES_URL}/{operation['coreFileId']}").json()

    assert api_client.delete(field_url(core_user, gone["id"])).status_code == 204

    after = api_client.get(f"{OPS_URL}/{operation['id']}").json()
    assert [f["id"] for f in after["fields"]] == [kept["id"]]
    assert after["updatedTime"] > operation["updatedTime"]
    # Found by a client asking for what changed since it last looked
    changed = api_client.get(OPS_URL, {"coreUserId": core_user.pk, "updatedTime": operation["updatedTime"]}).json()
    assert [o["id"] for o in changed] == [operation["id"]] and changed[0]["updatedTime"] > operation["updatedTime"]
    for before in (source, automerged):
        now = api_client.get(f"{FILES_URL}/{before['id']}").json()
        assert now["fields"] == [kept["id"]] and now["updatedTime"] > before["updatedTime"]
    assert api_client.get(f"{OPS_URL}/{their_operation['id']}").json() == their_operation
    assert api_client.get(f"{FILES_URL}/{their_file['id']}").json() == their_file


def test_a_merged_field_deleted_with_its_last_partner_leaves_its_files_which_say_they_changed(
    owner, api_client, core_user
):
    """The file covers a source and the merged field, not the other source; that source's deletion deletes the
    merged field (one source left), which the file and its operation then no longer name."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    kept = create_field(api_client, core_user, _around_the_grid(-0.001, 0.003))
    gone = create_field(api_client, core_user, _around_the_grid(-0.004, -0.0005))  # meets only the kept one's edge
    merged = api_client.get(field_url(core_user, kept["id"])).json()["mergedFieldId"]
    assert merged is not None
    file = processed_file(core_user, grid_table(operation_type="applied"))
    before = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert sorted(before["fields"]) == sorted([kept["id"], merged]), before["fields"]
    operation = api_client.get(f"{OPS_URL}/{Operation.objects.get().pk}").json()

    assert api_client.delete(field_url(core_user, gone["id"])).status_code == 204
    assert api_client.get(field_url(core_user, merged)).status_code == 404
    now = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert now["fields"] == [kept["id"]] and now["updatedTime"] > before["updatedTime"]
    after = api_client.get(f"{OPS_URL}/{operation['id']}").json()
    assert [f["id"] for f in after["fields"]] == [kept["id"]] and after["updatedTime"] > operation["updatedTime"]


def test_a_field_a_file_is_attached_to_says_it_changed(api_client, core_user):
    """Its `files` changed: its `updatedTime` moves (as a product's does when a file names it). A field the file
    does not cover stays as it was."""
    covered = create_field(api_client, core_user, _around_the_grid(-0.001, 0.003))
    apart = create_field(api_client, core_user, _around_the_grid(0.010, 0.012))

    file = processed_file(core_user, grid_table(operation_type="applied"))

    now = api_client.get(field_url(core_user, covered["id"])).json()
    assert str(file.pk) in now["files"] and now["updatedTime"] > covered["updatedTime"]
    assert api_client.get(field_url(core_user, apart["id"])).json() == apart
    # Found by a client sorting by what changed last
    latest = api_client.get("/services/fields/api/fields", {"sort": "updatedTime,desc", "size": 1}).json()
    assert [f["id"] for f in latest] == [covered["id"]]


def test_a_merged_field_made_after_a_file_takes_its_sources_files_and_operations(owner, api_client, core_user):
    """The spec: fields that overlap are merged, "so operations can be queried by the merged field and also by each
    individual field". A merged field made once a file was converted covers what its sources covered: the file,
    the operation (measured on the merged outline) and the automerged file are found by it."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    first = create_field(api_client, core_user, _around_the_grid(-0.001, 0.003))
    file = processed_file(core_user, grid_table(operation_type="applied"))
    operation = api_client.get(f"{OPS_URL}/{Operation.objects.get().pk}").json()
    before = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert before["fields"] == [first["id"]] and [f["id"] for f in operation["fields"]] == [first["id"]]

    second = create_field(api_client, core_user, _around_the_grid(-0.004, -0.0005))  # meets the first's edge
    merged = api_client.get(field_url(core_user, second["id"])).json()["mergedFieldId"]
    assert merged is not None

    assert sorted(api_client.get(field_url(core_user, merged)).json()["files"]) == sorted(
        [str(file.pk), operation["coreFileId"]]
    )
    assert api_client.get(field_url(core_user, second["id"])).json()["files"] == []  # (it covers none of them)
    now = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert sorted(now["fields"]) == sorted([first["id"], merged]) and now["updatedTime"] > before["updatedTime"]
    listed = api_client.get(field_url(core_user, merged) + "/operations/files").json()
    assert sorted(f["id"] for f in listed) == sorted([str(file.pk), operation["coreFileId"]])
    assert [o["id"] for o in api_client.get(OPS_URL, {"fieldId": merged}).json()] == [operation["id"]]
    after = api_client.get(f"{OPS_URL}/{operation['id']}").json()
    coverage = {f["id"]: f["coverage"] for f in after["fields"]}
    assert coverage.keys() == {first["id"], merged} and coverage[first["id"]] == operation["fields"][0]["coverage"]
    assert 0 < coverage[merged] < coverage[first["id"]]  # the larger outline: a smaller part of it
    assert after["updatedTime"] > operation["updatedTime"]


def test_a_source_moved_off_its_file_brings_it_to_its_merged_field_at_no_coverage(owner, api_client, core_user):
    """A field keeps the files it covered when its outline moves (they were recorded on it); merged later, its
    merged field takes them too, and the operation names the merged field at 0 %: none of its outline is covered."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    moved = create_field(api_client, core_user, _around_the_grid(-0.001, 0.003))
    file = processed_file(core_user, grid_table(operation_type="applied"))
    operation = api_client.get(f"{OPS_URL}/{Operation.objects.get().pk}").json()
    response = api_client.put(
        field_url(core_user, moved["id"]) + "/boundary", {"geometry": _around_the_grid(0.010, 0.012)}, format="json"
    )
    assert response.status_code == 200 and str(file.pk) in response.json()["files"]

    create_field(api_client, core_user, _around_the_grid(0.011, 0.014))  # meets its new outline: merged
    merged = api_client.get(field_url(core_user, moved["id"])).json()["mergedFieldId"]

    assert str(file.pk) in api_client.get(field_url(core_user, merged)).json()["files"]
    coverage = {f["id"]: f["coverage"] for f in api_client.get(f"{OPS_URL}/{operation['id']}").json()["fields"]}
    assert coverage == {moved["id"]: operation["fields"][0]["coverage"], merged: 0}


def test_a_file_attached_to_a_source_is_attached_to_its_merged_field(owner, api_client, core_user):
    """However little of the merged field's larger outline the file covers (`fieldsAttachIntersection` 60 %: the
    small source lies wholly under the file, which covers an eighth of it, and a fifth of the merged outline)."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True, "fieldsAttachIntersection": 60})
    small = create_field(api_client, core_user, rect(LON0 + 0.0005, LAT0 + 0.0002, LON0 + 0.0010, LAT0 + 0.0007))
    # A long strip reaching the small field from the south, crossing hardly any of the file's ground
    strip = create_field(api_client, core_user, rect(LON0 + 0.0008, LAT0 - 0.01, LON0 + 0.0009, LAT0 + 0.0003))
    merged = api_client.get(field_url(core_user, small["id"])).json()["mergedFieldId"]
    assert merged is not None

    file = processed_file(core_user, grid_table(operation_type="applied"))

    assert sorted(api_client.get(f"{FILES_URL}/{file.pk}").json()["fields"]) == sorted([small["id"], merged])
    assert str(file.pk) not in api_client.get(field_url(core_user, strip["id"])).json()["files"]
    operation = api_client.get(f"{OPS_URL}/{Operation.objects.get().pk}").json()
    assert sorted(f["id"] for f in operation["fields"]) == sorted([small["id"], merged])
    assert [o["id"] for o in api_client.get(OPS_URL, {"fieldId": merged}).json()] == [operation["id"]]


def test_a_merged_field_that_absorbs_another_takes_its_files_and_operations(owner, api_client, core_user):
    """Two merged fields joined by a source's new boundary: the older absorbs the younger, which is deleted. The
    files and the operation the younger covered are the older's now (they lost every merged field), the operation's
    coverage of it measured on its new outline."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    create_field(api_client, core_user, _around_the_grid(-0.020, -0.015))
    west = create_field(api_client, core_user, _around_the_grid(-0.016, -0.011))  # with the first: merged field 1
    create_field(api_client, core_user, _around_the_grid(-0.001, 0.0015))
    east = create_field(api_client, core_user, _around_the_grid(0.001, 0.004))  # with the third: merged field 2
    older, younger = west["mergedFieldId"], east["mergedFieldId"]
    assert None not in (older, younger) and older != younger
    processed_file(core_user, grid_table(operation_type="applied"))
    operation = api_client.get(f"{OPS_URL}/{Operation.objects.get().pk}").json()
    coverage = {f["id"]: f["coverage"] for f in operation["fields"]}
    assert younger in coverage and older not in coverage

    # The east field now reaches the west one: merged field 2 is absorbed into merged field 1
    response = api_client.put(
        field_url(core_user, east["id"]) + "/boundary", {"geometry": _around_the_grid(-0.012, 0.004)}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    assert api_client.get(field_url(core_user, younger)).status_code == 404

    merged = api_client.get(field_url(core_user, older)).json()
    assert set(operation["files"]) | {operation["coreFileId"]} <= set(merged["files"])
    after = api_client.get(f"{OPS_URL}/{operation['id']}").json()
    now = {f["id"]: f["coverage"] for f in after["fields"]}
    assert older in now and younger not in now
    # The grid is a smaller part of the larger outline; the other fields keep the figures of the build
    assert 0 < now[older] < coverage[younger]
    assert {k: v for k, v in now.items() if k != older} == {k: v for k, v in coverage.items() if k != younger}
    assert after["updatedTime"] > operation["updatedTime"]
    assert [o["id"] for o in api_client.get(OPS_URL, {"fieldId": older}).json()] == [operation["id"]]
    for file_id in [*operation["files"], operation["coreFileId"]]:
        assert older in api_client.get(f"{FILES_URL}/{file_id}").json()["fields"]


def test_a_merged_field_the_operation_covered_is_measured_again_when_it_absorbs_another(owner, api_client, core_user):
    """An operation over both merged fields: the older one's outline grows as it absorbs the younger, and its
    coverage is measured on that outline (kept, it was the build's figure on the smaller one), as a build would."""
    from operations.services.coverage import fields_record

    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    create_field(api_client, core_user, _around_the_grid(-0.0010, 0.0005))
    west = create_field(api_client, core_user, _around_the_grid(0.0002, 0.0007))  # merged field 1, over the grid
    create_field(api_client, core_user, _around_the_grid(0.0012, 0.0017))
    east = create_field(api_client, core_user, _around_the_grid(0.0015, 0.0030))  # merged field 2, over the grid
    older, younger = west["mergedFieldId"], east["mergedFieldId"]
    processed_file(core_user, grid_table(operation_type="applied"))
    operation = Operation.objects.get()
    url = f"{OPS_URL}/{operation.pk}"
    coverage = {f["id"]: f["coverage"] for f in api_client.get(url).json()["fields"]}
    assert older in coverage and younger in coverage

    response = api_client.put(
        field_url(core_user, east["id"]) + "/boundary", {"geometry": _around_the_grid(0.0006, 0.0030)}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    now = {f["id"]: f["coverage"] for f in api_client.get(url).json()["fields"]}
    assert younger not in now and now[older] != coverage[older]
    fields_record(operation, operation.merged_file)  # what a build records
    assert {f["id"]: f["coverage"] for f in api_client.get(url).json()["fields"]}[older] == now[older]


def test_a_deleted_machine_leaves_its_files_which_say_they_changed(api_client, core_user):
    from assets.services import machine_create

    machine = machine_create(core_user=core_user, name="Combine")
    file = processed_file(core_user, grid_table())
    file.machine_ids = [str(machine.pk)]
    file.save(update_fields=["machine_ids"])
    before = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert before["machines"] == [str(machine.pk)]
    other = api_client.get(f"{FILES_URL}/{processed_file(core_user, grid_table(start='2024-10-01T10:00:00')).pk}")

    response = api_client.delete(f"/services/beta/api/users/{core_user.pk}/machines/{machine.pk}")
    assert response.status_code == 204, response.content[:300]
    now = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert now["machines"] == [] and now["updatedTime"] > before["updatedTime"]
    assert api_client.get(f"{FILES_URL}/{other.json()['id']}").json() == other.json()  # (it named no machine)
