"""Time a page of `GET /fields` (every core user's fields of the owner) near the start, in the middle and at the end
of 40,000 fields of 20 core users, on both databases: PostGIS (DATABASE_URL) and the embedded SpatiaLite of
`make run` (a scratch file).

- HTTP: the request through Django's request handling in-process (authentication, filters, the count, the page,
  serialization), 100 fields a page.
- The page's rows alone, read as the API reads them (`pagination.page_rows`: the page's keys in the list's order,
  then those rows), next to the plain OFFSET query over every column (a field's boundary included), which the API
  ran before: ordering and skipping rows then carried every column of every row.

Each boundary is a ring of 200 positions, a field-sized outline. Prints the median of REPEAT runs.
"""

import math
import os
import time
import uuid

from _django import median_seconds, on_both_databases, scratch_database

FIELDS = int(os.environ.get("BENCH_FIELDS", 40_000))
CORE_USERS = 20
POSITIONS = 200
SIZE = 100
REPEAT = 5
CHUNK = 2_000


def ring(lon: float, lat: float) -> list:
    points = [
        [lon + 0.002 * math.cos(2 * math.pi * i / POSITIONS), lat + 0.002 * math.sin(2 * math.pi * i / POSITIONS)]
        for i in range(POSITIONS)
    ]
    return [*points, points[0]]


def load(core_users) -> None:
    """FIELDS fields spread over the core users, each with one ACTIVE boundary."""
    from django.db import connection
    from shapely.geometry import Polygon

    from fields.geodesy import geodesic_area_ha
    from fields.geometry import to_geos
    from fields.models import Boundary, Field

    for first in range(0, FIELDS, CHUNK):
        fields, boundaries = [], []
        for index in range(first, min(first + CHUNK, FIELDS)):
            shape = Polygon(ring(-1 + (index % 200) * 0.005, 47 + (index // 200) * 0.005))
            core_user = core_users[index % len(core_users)]
            field = Field(
                id=str(uuid.uuid4()), public_id=f"field-{index}", core_user=core_user, name=f"Field {index:05d}"
            )
            fields.append(field)
            boundaries.append(Boundary(field=field, geometry=to_geos(shape), area_ha=geodesic_area_ha(shape)))
        Field.objects.bulk_create(fields)
        Boundary.objects.bulk_create(boundaries)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE fields_field SET boundary_id = "
            "(SELECT b.id FROM fields_boundary b WHERE b.field_id = fields_field.id)"
        )
        cursor.execute("ANALYZE")


def measure(label: str) -> None:
    with scratch_database():
        from rest_framework.test import APIClient

        from fields import services
        from fields.models import Field
        from platform_site.api.authentication import token_issue
        from platform_site.api.pagination import page_rows
        from tests.factories import CoreUserFactory, OwnerFactory

        owner = OwnerFactory()
        started = time.perf_counter()
        load([CoreUserFactory(owner=owner) for _ in range(CORE_USERS)])
        print(f"{label:10s} loaded {FIELDS:,} fields in {time.perf_counter() - started:.1f} s")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(owner)}")
        queryset = services.field_queryset(Field.objects.filter(core_user__owner=owner)).order_by("created_at", "pk")
        last = math.ceil(FIELDS / SIZE) - 1
        for page in (0, last // 2, last):

            def request(page=page):
                response = client.get(f"/services/fields/api/fields?page={page}&size={SIZE}")
                assert response.status_code == 200 and len(response.json()) == SIZE, response.content[:300]

            start = page * SIZE
            http = median_seconds(request, REPEAT)
            keys_first = median_seconds(lambda start=start: page_rows(queryset, start, SIZE), REPEAT)
            plain = median_seconds(lambda start=start: list(queryset[start : start + SIZE]), REPEAT)
            print(
                f"{label:10s} page {page:3d} of {SIZE}: HTTP {http * 1000:7.1f} ms; rows keys first "
                f"{keys_first * 1000:7.1f} ms, plain OFFSET {plain * 1000:7.1f} ms"
            )


if __name__ == "__main__":
    on_both_databases(measure)
