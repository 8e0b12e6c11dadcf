"""Migrations of the fields app that change data: run forwards over rows written in the older schema."""

import pytest
from shapely.geometry import Polygon

from fields.geodesy import geodesic_area_ha
from fields.geometry import to_geos
from tests.migrating import migrate

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded,
    pytest.mark.usefixtures("latest_schema_after"),
]

BEFORE, AFTER = ("fields", "0003_field_public_id"), ("fields", "0004_boundary_area_flat_edges")


def test_stored_areas_are_measured_again_for_flat_edges(core_user):
    apps = migrate(BEFORE)
    Field, Boundary = apps.get_model("fields", "Field"), apps.get_model("fields", "Boundary")
    # A field-sized triangle with a long slanted edge, its area as geodesic edges measured it
    outline = Polygon([(30.0, 45.0), (30.02, 45.0), (30.01, 45.01)])
    field = Field.objects.create(id="f1", public_id="f1", core_user_id=core_user.pk, name="Field")
    old = Boundary.objects.create(
        field=field, geometry=to_geos(outline), area_ha=geodesic_area_ha(outline) * (1 + 4e-5)
    )

    Boundary = migrate(AFTER).get_model("fields", "Boundary")

    assert Boundary.objects.get(pk=old.pk).area_ha == geodesic_area_ha(outline)
