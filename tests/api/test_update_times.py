"""A resource never changed answers `updatedTime` equal to its `createdTime`; a change moves it on.

Its first boundary is part of a field's creation (and a merged field's), a product's or variety's first file part of
its creation, and a new row's two times are one clock read."""

import uuid

import pytest

from assets.models import Machine
from catalogs.services import product_record, variety_record
from configs.services import config_owner_update
from fields.models import Grower
from tests.fields.helpers import create_field, field_url, square

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def test_a_new_field_and_a_new_merged_field_were_never_updated(api_client, owner, core_user):
    field = create_field(api_client, core_user, square(10, 50), name="North")
    assert field["updatedTime"] == field["createdTime"]
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    partner = create_field(api_client, core_user, square(10.005, 50), name="East")
    merged = api_client.get(field_url(core_user, partner["mergedFieldId"])).json()
    assert merged["type"] == "MERGED" and merged["updatedTime"] == merged["createdTime"]
    renamed = api_client.patch(field_url(core_user, field["id"]), {"name": "N"}, format="json").json()
    assert renamed["updatedTime"] > renamed["createdTime"] == field["createdTime"]


def test_a_new_product_or_variety_from_a_file_was_never_updated(api_client, core_user):
    product = product_record(core_user=core_user, name="Roundup", core_file_id=uuid.uuid4())
    variety = variety_record(core_user=core_user, name="P1197", crop="corn", core_file_id=uuid.uuid4())
    for record in (product, variety):
        record.refresh_from_db()
        assert record.updated_time == record.created_time
    # A second file names it: that changes it
    product_record(core_user=core_user, name="ROUNDUP", core_file_id=uuid.uuid4())
    product.refresh_from_db()
    assert product.updated_time > product.created_time


def test_a_new_machine_was_never_updated(api_client, core_user):
    machine = api_client.post(f"/services/beta/api/users/{core_user.id}/machines", {"name": "8R"}, format="json")
    assert machine.status_code == 201, machine.content
    row = Machine.objects.get(pk=machine.json()["id"])  # (the API shows a machine's createdTime only)
    assert row.updated_time == row.created_time


def test_a_new_rows_two_times_are_one_clock_read(core_user):
    """Two `auto_now` reads differed by microseconds, now and then across the millisecond the API shows."""
    growers = [Grower.objects.create(core_user=core_user, name=str(n)) for n in range(50)]
    assert all(g.updated_at == g.created_at for g in Grower.objects.filter(pk__in=[g.pk for g in growers]))
    grower = growers[0]
    grower.name = "renamed"
    grower.save()
    grower.refresh_from_db()
    assert grower.updated_at > grower.created_at
