"""Operation builds racing changes of the fields they cover (PostgreSQL: SQLite serialises writers)."""

import pytest

from fields.services import field_create
from operations import services, tasks
from operations.models import Operation, OperationField
from operations.services import operation_build
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
    overlaps = services.overlaps

    def overlaps_while_deleting(*args):
        deletion["answer"] = run_meanwhile(request_later(make_client, owner, "delete", url))
        return overlaps(*args)

    monkeypatch.setattr(services, "overlaps", overlaps_while_deleting)
    built = operation_build(str(operation.pk), operation.version)

    assert deletion["answer"]().status_code == 204
    assert built is not None and built.status == Operation.Status.PROCESSED
    assert not OperationField.objects.exists()
    body = make_client(owner).get(f"/services/operations/api/operations/{operation.pk}").json()
    assert body["status"] == "processed" and body["fields"] == []
