"""Migrations of the catalogs app that change data: run forwards over rows written in the older schema."""

import uuid

import pytest

from tests.migrating import migrate

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded,
    pytest.mark.usefixtures("latest_schema_after"),
]


def test_crops_cut_on_a_space_lose_it(core_user):
    apps = migrate(("catalogs", "0001_initial"))
    Variety, VarietyFile = apps.get_model("catalogs", "Variety"), apps.get_model("catalogs", "VarietyFile")
    variety = Variety.objects.create(core_user_id=core_user.pk, name="V", normalized_name="v")
    one, other = uuid.uuid4(), uuid.uuid4()
    cut = VarietyFile.objects.create(variety=variety, core_file_id=one, crop="a" * 99 + " ")
    VarietyFile.objects.create(variety=variety, core_file_id=other, crop="a" * 99 + " ")
    VarietyFile.objects.create(variety=variety, core_file_id=other, crop="a" * 99)  # the same link, stripped
    kept = VarietyFile.objects.create(variety=variety, core_file_id=one, crop="corn")

    apps = migrate(("catalogs", "0002_variety_crop_no_trailing_space"))
    VarietyFile = apps.get_model("catalogs", "VarietyFile")

    assert sorted(VarietyFile.objects.values_list("core_file_id", "crop")) == sorted(
        [(one, "a" * 99), (other, "a" * 99), (one, "corn")]
    )
    assert VarietyFile.objects.get(pk=cut.pk).crop == "a" * 99 and VarietyFile.objects.get(pk=kept.pk).crop == "corn"
