"""Boundary areas measured again, exactly for the flat edges GeoJSON means (`fields.geodesy.geodesic_areas_m2`):
they were measured with geodesic edges, so a field's stored area and the area of its overlap with a geometry, now
measured the new way, could differ by up to 1e-5 for long slanted edges, enough to miss a threshold of 100 %."""

import shapely
from django.db import migrations

from fields.geodesy import SQUARE_METRES_PER_HECTARE, geodesic_areas_m2

CHUNK = 2000


def measure_again(apps, schema_editor):
    Boundary = apps.get_model("fields", "Boundary")
    last = None
    while True:
        page = Boundary.objects.order_by("pk").only("pk", "geometry", "area_ha")
        if last is not None:
            page = page.filter(pk__gt=last)
        boundaries = list(page[:CHUNK])
        if not boundaries:
            return
        last = boundaries[-1].pk
        shapes = [shapely.from_wkb(bytes(b.geometry.wkb)) for b in boundaries]
        changed = []
        for boundary, area_m2 in zip(boundaries, geodesic_areas_m2(shapes).tolist(), strict=True):
            area_ha = area_m2 / SQUARE_METRES_PER_HECTARE
            if area_ha != boundary.area_ha:
                boundary.area_ha = area_ha
                changed.append(boundary)
        Boundary.objects.bulk_update(changed, ["area_ha"])


class Migration(migrations.Migration):
    dependencies = [
        ("fields", "0003_field_public_id"),
    ]

    operations = [migrations.RunPython(measure_again, migrations.RunPython.noop)]
