"""Time `POST /users/{id}/fields/intersects` over 100,000 fields of one core user, next to the same candidate
query in raw SQL.

Run from the repository root against PostGIS (a scratch database `test_<name>` is created and destroyed):
    DATABASE_URL=postgis://platform:platform@127.0.0.1:5432/platform_bench .venv/bin/python bench/fields_intersects.py
Requests go through Django's test client (the whole stack: URL routing, bearer authentication, tenant scoping,
validation, the indexed candidate lookup, the exact geodesic ratios and serialization; no socket). Prints figures.

The raw SQL line is the bare candidate lookup (ids only), the database's share of the work. The floor line is a
do-nothing endpoint behind the same bearer authentication and core-user check, through the same client: the fixed
cost of any `/users/{coreUserId}/...` request, which the endpoint cannot go below.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from django.urls import include, path  # noqa: E402
from shapely.geometry import box  # noqa: E402

FIELDS = int(os.environ.get("BENCH_FIELDS", 100_000))
COLUMNS = 400
SIZE = 0.005  # degrees: about 370 m x 555 m at 48 N, ~20 ha, a field-sized square
STEP = 0.006
ORIGIN = (-1.0, 47.0)
REQUESTS = 300
CHUNK = 5_000


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def load(core_user) -> None:
    """Bulk-load FIELDS square fields on a grid, each with one ACTIVE boundary."""
    from fields.geometry import geodesic_area_ha, to_geos
    from fields.models import Boundary, Field

    started = time.perf_counter()
    for first in range(0, FIELDS, CHUNK):
        fields, boundaries = [], []
        for index in range(first, min(first + CHUNK, FIELDS)):
            row, column = divmod(index, COLUMNS)
            lon, lat = ORIGIN[0] + column * STEP, ORIGIN[1] + row * STEP
            shape = box(lon, lat, lon + SIZE, lat + SIZE)
            field = Field(id=f"bench-{index}", core_user=core_user, name=f"Field {index}")
            fields.append(field)
            boundaries.append(Boundary(field=field, geometry=to_geos(shape), area_ha=geodesic_area_ha(shape)))
        Field.objects.bulk_create(fields)
        Boundary.objects.bulk_create(boundaries)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE fields_field f SET boundary_id = b.id FROM fields_boundary b WHERE b.field_id = f.id")
        cursor.execute("ANALYZE fields_field")
        cursor.execute("ANALYZE fields_boundary")
    print(f"loaded {FIELDS:,} fields in {time.perf_counter() - started:.1f} s")


def query_geometries(count: int) -> list:
    """Field-sized squares at random places of the grid, each overlapping up to four fields."""
    rng = random.Random(7)
    rows = FIELDS // COLUMNS
    shapes = []
    for _ in range(count):
        lon = ORIGIN[0] + rng.uniform(0, (COLUMNS - 2) * STEP)
        lat = ORIGIN[1] + rng.uniform(0, (rows - 2) * STEP)
        shapes.append(box(lon, lat, lon + SIZE, lat + SIZE))
    return shapes


def floor_urlconf() -> str:
    """A urlconf with the project's routes plus `floor/<coreUserId>`: a core-user-scoped viewset that answers
    `[]` (authentication, the core-user lookup, body parsing and rendering; nothing of the fields app)."""
    from rest_framework.response import Response

    from platform_site.api.viewsets import CoreUserScopedViewSet

    class FloorViewSet(CoreUserScopedViewSet):
        def floor(self, request, coreUserId=None):
            request.data  # noqa: B018 (parse the body, as the endpoint does)
            return Response([])

    module = types.ModuleType("bench_floor_urls")
    module.urlpatterns = [
        path("floor/<str:coreUserId>", FloorViewSet.as_view({"post": "floor"})),
        path("", include(settings.ROOT_URLCONF)),
    ]
    sys.modules[module.__name__] = module
    return module.__name__


def timed_posts(client, url: str, bodies: list[dict]) -> list[float]:
    timings = []
    for body in bodies:
        started = time.perf_counter()
        response = client.post(url, body, content_type="application/json")
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:300]
    return timings


def bench(core_user, owner) -> None:
    from fields.geometry import to_geojson
    from platform_site.api.authentication import token_issue

    client = Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(owner)}")
    url = f"/services/fields/api/users/{core_user.id}/fields/intersects"
    shapes = query_geometries(REQUESTS)
    sql = (
        "SELECT f.id FROM fields_field f JOIN fields_boundary b ON b.id = f.boundary_id "
        "WHERE f.core_user_id = %s AND b.status = 'ACTIVE' AND ST_Intersects(b.geometry, ST_GeomFromText(%s, 4326))"
    )

    bodies = [{"geometry": to_geojson(shape), "intersectionThreshold": 0.01} for shape in shapes]
    for body in bodies[:20]:  # warm up both paths
        client.post(url, body, content_type="application/json")
    found = [len(client.post(url, body, content_type="application/json").json()) for body in bodies]
    http_ms, sql_ms = timed_posts(client, url, bodies), []
    with override_settings(ROOT_URLCONF=floor_urlconf()):
        floor_url = f"/floor/{core_user.id}"
        timed_posts(client, floor_url, bodies[:20])
        floor_ms = timed_posts(client, floor_url, bodies)
    with connection.cursor() as cursor:
        for shape in shapes[:20]:
            cursor.execute(sql, [str(core_user.id), shape.wkt])
            cursor.fetchall()
        for shape in shapes:
            started = time.perf_counter()
            cursor.execute(sql, [str(core_user.id), shape.wkt])
            cursor.fetchall()
            sql_ms.append((time.perf_counter() - started) * 1000)

    http_p50, http_p95 = statistics.median(http_ms), percentile(http_ms, 0.95)
    sql_p50, sql_p95 = statistics.median(sql_ms), percentile(sql_ms, 0.95)
    floor_p50, floor_p95 = statistics.median(floor_ms), percentile(floor_ms, 0.95)
    print(f"{REQUESTS} queries, {statistics.mean(found):.2f} fields answered on average")
    print(f"POST .../fields/intersects (Django test client): p50 {http_p50:.2f} ms  p95 {http_p95:.2f} ms")
    print(f"raw SQL candidate query:                         p50 {sql_p50:.2f} ms  p95 {sql_p95:.2f} ms")
    print(f"floor: do-nothing endpoint, same auth + core user:  p50 {floor_p50:.2f} ms  p95 {floor_p95:.2f} ms")
    print(f"ratio HTTP / SQL: p50 {http_p50 / sql_p50:.1f}x  p95 {http_p95 / sql_p95:.1f}x")
    print(f"ratio floor / SQL: p50 {floor_p50 / sql_p50:.1f}x (the best any endpoint of this client can do)")
    print(f"endpoint above the floor: p50 {http_p50 - floor_p50:.2f} ms ({(http_p50 - floor_p50) / sql_p50:.1f}x SQL)")


def main() -> None:
    if connection.vendor != "postgresql":
        sys.exit("run against PostGIS: DATABASE_URL=postgis://...")
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        from tests.factories import CoreUserFactory, OwnerFactory

        owner = OwnerFactory()
        core_user = CoreUserFactory(owner=owner)
        load(core_user)
        bench(core_user, owner)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
