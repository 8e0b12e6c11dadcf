"""Operation builds racing changes of the fields they cover (PostgreSQL: SQLite serialises writers)."""

import pytest

from conversion import outputs
from conversion.models import File, FileStatus
from fields.services import field_create
from operations import tasks
from operations.models import Operation, OperationField
from operations.services import coverage, grouping, operation_build
from tests.concurrency import needs_postgresql, request_later, run_meanwhile

from .helpers import grid_box, grid_table, processed_file

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_field_deleted_while_its_operation_records_coverage_waits_for_the_build(
    owner, core_user, make_client, monkeypatch
):
    """The deletion arrives after the build has linked its automerged file to the field and read the fields it
    covers, before it records their coverage. It waits for the build (which holds the field's row since linking
    it, and the core user that a deletion takes first), then answers 204 and removes the build's rows with the
    field. Without that wait the deletion committed under the build's links: a foreign-key violation."""
    needs_postgresql()
    field = field_create(core_user=core_user, geometry=grid_box(), name="North")
    with monkeypatch.context() as patch:
        patch.setattr(tasks.operation_build, "delay", lambda *a: None)  # built below, by hand
        processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    operation = Operation.objects.get()
    url = f"/services/fields/api/users/{core_user.pk}/fields/{field.pk}"
    deletion = {}
    overlaps = coverage.overlaps

    def overlaps_while_deleting(*args):
        deletion["answer"] = run_meanwhile(request_later(make_client, owner, "delete", url))
        return overlaps(*args)

    monkeypatch.setattr(coverage, "overlaps", overlaps_while_deleting)
    built = operation_build(str(operation.pk), operation.version)

    assert deletion["answer"]().status_code == 204
    assert built is not None and built.status == Operation.Status.PROCESSED
    assert not OperationField.objects.exists()
    body = make_client(owner).get(f"/services/operations/api/operations/{operation.pk}").json()
    assert body["status"] == "processed" and body["fields"] == []


def test_an_outdated_build_never_overwrites_a_newer_one(core_user, monkeypatch):
    """Builds write the automerged file's outputs before they learn they are outdated. Build N read its two files;
    meanwhile a third joined and build N+1 ran to the end; then N wrote its points over N+1's and stopped: the
    record said three files, the stored points (and GeoJSON, images) held two. Builds of one operation now run
    one at a time: N+1 waits for N."""
    needs_postgresql()
    field_create(core_user=core_user, geometry=grid_box(), name="North")
    monkeypatch.setattr(tasks.operation_build, "delay", lambda *a: None)  # builds run below, by hand
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=2))
    operation = Operation.objects.get()
    merged_points = grouping._merged_points
    newer = {}

    def join_and_build():
        processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=3))  # grouped: version N+1
        return operation_build(str(operation.pk))

    def read_then_let_a_file_join(op):
        table = merged_points(op)  # build N has read its files
        if "started" not in newer:  # (once: build N+1 reads its files here too)
            newer["started"] = True
            newer["built"] = run_meanwhile(join_and_build, grace=5.0)
        return table

    monkeypatch.setattr(grouping, "_merged_points", read_then_let_a_file_join)
    assert operation_build(str(operation.pk), operation.version) is None  # N: outdated once it had written

    assert newer["built"]().status == Operation.Status.PROCESSED
    merged = File.objects.get(pk=operation.merged_file_id)
    assert (merged.status, merged.point_count) == (FileStatus.PROCESSED, 3 * len(grid_table()))
    assert len(outputs.load_points(merged)) == merged.point_count  # the stored points are the record's
