"""Migrations of the conversion app that change data: run forwards over rows written in the older schema."""

import pytest

from tests.migrating import migrate

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded,
    pytest.mark.usefixtures("latest_schema_after"),
]

BEFORE, AFTER = ("conversion", "0002_dataset_progress_at"), ("conversion", "0003_summary_machinery_keys")


def test_stored_summaries_get_the_apis_spelling_of_machinery_keys(core_user):
    File = migrate(BEFORE).get_model("conversion", "File")
    machine = {"kind": "machine", "name": "Fendt", "serial_number": "S-1", "category": "tractor"}
    old = File.objects.create(
        core_user_id=core_user.pk,
        file_name="old",
        file_format="ISOXML",
        provider="Other",
        summary={"type": "Feature", "properties": {"machinery": [machine], "pointCount": 3}},
    )
    without = File.objects.create(core_user_id=core_user.pk, file_name="none", file_format="ISOXML", provider="Other")
    current = {"type": "Feature", "properties": {"machinery": [{"kind": "machine", "serialNumber": "S-2"}]}}
    new = File.objects.create(
        core_user_id=core_user.pk, file_name="new", file_format="ISOXML", provider="Other", summary=current
    )

    File = migrate(AFTER).get_model("conversion", "File")

    assert File.objects.get(pk=old.pk).summary == {
        "type": "Feature",
        "properties": {
            "machinery": [{"kind": "machine", "name": "Fendt", "serialNumber": "S-1", "category": "tractor"}],
            "pointCount": 3,
        },
    }
    assert File.objects.get(pk=without.pk).summary is None
    assert File.objects.get(pk=new.pk).summary == current
