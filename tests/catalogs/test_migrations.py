"""Migrations of the catalogs app that change data: run forwards over rows written in the older schema."""

import uuid

import pytest

from platform_site.text import fit
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


def test_normalized_names_are_computed_again_keeping_other_scripts_marks(core_user):
    apps = migrate(("catalogs", "0002_variety_crop_no_trailing_space"))
    Product, ProductFile = apps.get_model("catalogs", "Product"), apps.get_model("catalogs", "ProductFile")
    Variety, VarietyFile = apps.get_model("catalogs", "Variety"), apps.get_model("catalogs", "VarietyFile")
    one, other = uuid.uuid4(), uuid.uuid4()
    # Given records keyed by the old rule: every mark dropped, a Devanagari vowel sign a space
    ga = Product.objects.create(core_user_id=core_user.pk, name="ガス", normalized_name="カス")
    kit = Product.objects.create(core_user_id=core_user.pk, name="किट", normalized_name="क ट")
    acid = Product.objects.create(core_user_id=core_user.pk, name="Säure", normalized_name="saure")
    cut = fit(" ".join(["कीट"] * 80), 255)  # cut with a digest of the whole, which is gone
    long = Product.objects.create(core_user_id=core_user.pk, name=cut, normalized_name=fit(" ".join(["क ट"] * 80), 255))
    # ...and two that the new rule makes one (U+034F, the combining grapheme joiner, was a space; it is dropped)
    first = Product.objects.create(core_user_id=core_user.pk, name="Atra\u034fzine", normalized_name="atra zine")
    second = Product.objects.create(core_user_id=core_user.pk, name="ATRAZINE", normalized_name="atrazine")
    ProductFile.objects.create(product=first, core_file_id=one)
    ProductFile.objects.create(product=second, core_file_id=one)
    ProductFile.objects.create(product=second, core_file_id=other)
    variety = Variety.objects.create(core_user_id=core_user.pk, name="कीट", normalized_name="क ट")
    VarietyFile.objects.create(variety=variety, core_file_id=one, crop="corn")

    # When
    apps = migrate(("catalogs", "0003_normalized_name_keeps_other_scripts_marks"))
    Product, ProductFile = apps.get_model("catalogs", "Product"), apps.get_model("catalogs", "ProductFile")
    Variety = apps.get_model("catalogs", "Variety")

    # Then each is keyed by the name it shows; the two records of one key are one, the first seen's name kept
    assert dict(Product.objects.values_list("pk", "normalized_name")) == {
        ga.pk: "ガス",
        kit.pk: "किट",
        acid.pk: "saure",
        long.pk: fit(" ".join(["क ट"] * 80), 255),
        second.pk: "atrazine",
    }
    assert Product.objects.get(pk=second.pk).name == "Atra\u034fzine"
    assert sorted(ProductFile.objects.values_list("product_id", "core_file_id")) == sorted(
        [(second.pk, one), (second.pk, other)]
    )
    assert Variety.objects.get(pk=variety.pk).normalized_name == "कीट" and variety.files.count() == 1
