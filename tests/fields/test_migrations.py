"""Migrations of the fields app that change data: run forwards over rows written in the older schema."""

import pytest
from django.contrib.gis.geos import MultiPolygon, Polygon
from django.db import IntegrityError, transaction

from tests.migrating import migrate

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded,
    pytest.mark.usefixtures("latest_schema_after"),
]

BEFORE, AFTER = ("fields", "0001_initial"), ("fields", "0002_boundary_one_active_per_field")


def test_one_active_boundary_migration_keeps_the_current_boundary_active(core_user):
    apps = migrate(BEFORE)
    Field, Boundary = apps.get_model("fields", "Field"), apps.get_model("fields", "Boundary")
    shape = MultiPolygon(Polygon(((10, 50), (10.01, 50), (10.01, 50.01), (10, 50.01), (10, 50))), srid=4326)

    def field_with(statuses, current):
        field = Field.objects.create(id=f"f-{len(statuses)}-{current}", core_user_id=core_user.pk, name="x")
        made = [Boundary.objects.create(field=field, geometry=shape, area_ha=1.0, status=s) for s in statuses]
        field.boundary = made[current] if current is not None else None
        field.save()
        return field, made

    crowded, crowded_boundaries = field_with(["INACTIVE", "ACTIVE", "ACTIVE", "ACTIVE"], 2)
    orphaned, orphaned_boundaries = field_with(["ACTIVE", "ACTIVE", "DELETED_ON_PROVIDER"], None)
    tidy, tidy_boundaries = field_with(["INACTIVE", "ACTIVE"], 1)

    apps = migrate(AFTER)
    Boundary = apps.get_model("fields", "Boundary")

    def statuses(made):
        return [Boundary.objects.get(pk=b.pk).status for b in made]

    assert statuses(crowded_boundaries) == ["INACTIVE", "INACTIVE", "ACTIVE", "INACTIVE"]
    assert statuses(orphaned_boundaries) == ["INACTIVE", "INACTIVE", "DELETED_ON_PROVIDER"]
    assert statuses(tidy_boundaries) == ["INACTIVE", "ACTIVE"]
    assert apps.get_model("fields", "Field").objects.get(pk=crowded.pk).boundary_id == crowded_boundaries[2].pk
    with pytest.raises(IntegrityError), transaction.atomic():
        Boundary.objects.create(field_id=tidy.pk, geometry=shape, area_ha=1.0, status="ACTIVE")


def test_split_ids_migration_keeps_each_fields_id_as_its_api_id(core_user):
    apps = migrate(AFTER)
    Field = apps.get_model("fields", "Field")
    for field_id in ("north-40", "8f2c0a4e-5a51-4f0c-9a7e-0d6b8f1c2a33"):
        Field.objects.create(id=field_id, core_user_id=core_user.pk, name=field_id)

    apps = migrate(("fields", "0003_field_public_id"))
    Field = apps.get_model("fields", "Field")

    # Each field answers under the id it had, and a second field of that id for the same user is refused
    assert sorted(Field.objects.values_list("pk", "public_id")) == sorted(
        [("north-40", "north-40"), ("8f2c0a4e-5a51-4f0c-9a7e-0d6b8f1c2a33", "8f2c0a4e-5a51-4f0c-9a7e-0d6b8f1c2a33")]
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Field.objects.create(id="another-key", public_id="north-40", core_user_id=core_user.pk)


def test_stored_areas_are_measured_again_for_flat_edges(core_user):
    from shapely.geometry import Polygon as ShapelyPolygon

    from fields.geodesy import geodesic_area_ha
    from fields.geometry import to_geos

    apps = migrate(("fields", "0003_field_public_id"))
    Field, Boundary = apps.get_model("fields", "Field"), apps.get_model("fields", "Boundary")
    # A field-sized triangle with a long slanted edge, its area as geodesic edges measured it
    outline = ShapelyPolygon([(30.0, 45.0), (30.02, 45.0), (30.01, 45.01)])
    field = Field.objects.create(id="f1", public_id="f1", core_user_id=core_user.pk, name="Field")
    old = Boundary.objects.create(
        field=field, geometry=to_geos(outline), area_ha=geodesic_area_ha(outline) * (1 + 4e-5)
    )

    Boundary = migrate(("fields", "0004_boundary_area_flat_edges")).get_model("fields", "Boundary")

    assert Boundary.objects.get(pk=old.pk).area_ha == geodesic_area_ha(outline)
