"""Time `POST /users/{id}/fields/intersects` over 100,000 fields of one core user, next to the same candidate
query in raw SQL.

Run from the repository root against PostGIS (a scratch database `test_<name>` is created and destroyed):
    DATABASE_URL=postgis://platform:platform@127.0.0.1:5432/platform_bench .venv/bin/python bench/fields_intersects.py
Prints figures.

- HTTP: requests to gunicorn serving the project (bench/_floor.py: the WSGI application plus the floor route) on
  loopback (one worker, one thread, keep-alive), as deployed: sockets, HTTP parsing, URL routing, bearer
  authentication (the token judged on every request, its owner and core user kept between requests by the owner
  cache, as in production: platform_site/api/owner_cache.py), tenant scoping, validation, the indexed candidate
  query, the exact geodesic ratios and serialization.
- Test client: the same requests through Django's test client (the whole stack but the socket and HTTP parsing).
- Raw SQL, same query: the very SQL and parameters the endpoint sends (the candidate lookup with the columns the
  answer needs), timed from a Python cursor: the database's share of the work. Timed side by side with HTTP: each
  request, then its own query, so the ratio compares the two under the same machine state.
- Raw SQL, ids only: the bare candidate lookup returning ids.
- Floor: a do-nothing endpoint behind the same bearer authentication and core-user check (bench/_floor.py), over
  HTTP and through the test client: the fixed cost of any `/users/{coreUserId}/...` request; and, over HTTP, a
  plain Django view and the WSGI server answering alone, to show where that fixed cost goes.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")

import django  # noqa: E402

django.setup()

from _django import scratch_database  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
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
    from fields.geodesy import geodesic_area_ha
    from fields.geometry import to_geos
    from fields.models import Boundary, Field

    started = time.perf_counter()
    for first in range(0, FIELDS, CHUNK):
        fields, boundaries = [], []
        for index in range(first, min(first + CHUNK, FIELDS)):
            row, column = divmod(index, COLUMNS)
            lon, lat = ORIGIN[0] + column * STEP, ORIGIN[1] + row * STEP
            shape = box(lon, lat, lon + SIZE, lat + SIZE)
            field = Field(id=f"bench-{index}", public_id=f"bench-{index}", core_user=core_user, name=f"Field {index}")
            fields.append(field)
            boundaries.append(Boundary(field=field, geometry=to_geos(shape), area_ha=geodesic_area_ha(shape)))
        Field.objects.bulk_create(fields)
        Boundary.objects.bulk_create(boundaries)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE fields_field f SET boundary_id = b.id FROM fields_boundary b WHERE b.field_id = f.id")
        # Settled tables (visibility map, statistics): autovacuum would otherwise work on them while the bench runs.
        cursor.execute("VACUUM ANALYZE fields_field")
        cursor.execute("VACUUM ANALYZE fields_boundary")
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


WARM_UP = 20


def timed(call, items: list) -> list[float]:
    """`call(item)` for the first WARM_UP items untimed, then for every item: wall time of each call in ms."""
    for item in items[:WARM_UP]:
        call(item)
    timings = []
    for item in items:
        started = time.perf_counter()
        call(item)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def timed_posts(client, url: str, bodies: list[dict]) -> list[float]:
    def post(body):
        response = client.post(url, body, content_type="application/json")
        assert response.status_code == 200, response.content[:300]

    return timed(post, bodies)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gunicorn_start(port: int) -> subprocess.Popen:
    """gunicorn on loopback over the scratch database; returns once it answers."""
    db = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgis://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "bench._floor:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--worker-class",
            "platform_site.server.ProblemThreadWorker",
            "--threads",
            "1",
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            probe = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            probe.request("GET", "/health")  # (a GET of / logged a "Not Found" warning amid the figures)
            probe.getresponse().read()
            probe.close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError("gunicorn did not start")


def timed_http(port: int, token: str, url: str, bodies: list[dict]) -> list[float]:
    """POST each body over one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(body: bytes):
        conn.request("POST", url, body, headers)
        response = conn.getresponse()
        response.read()
        assert response.status == 200, (response.status, url)

    try:
        return timed(post, [json.dumps(body).encode() for body in bodies])
    finally:
        conn.close()


def timed_side_by_side(port: int, token: str, url: str, bodies: list[dict], sql: str, parameter_lists: list[list]):
    """For each body in turn: the HTTP request, then its own candidate query in raw SQL, so both see the same
    machine at the same moment (load from other processes, autovacuum, CPU frequency). Wall times in ms:
    (HTTP, SQL)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def pair(item):
        body, params = item
        started = time.perf_counter()
        conn.request("POST", url, body, headers)
        response = conn.getresponse()
        response.read()
        between = time.perf_counter()
        assert response.status == 200, (response.status, url)
        cursor.execute(sql, params)
        cursor.fetchall()
        return (between - started) * 1000, (time.perf_counter() - between) * 1000

    items = list(zip([json.dumps(body).encode() for body in bodies], parameter_lists, strict=True))
    try:
        with connection.cursor() as cursor:
            for item in items[:WARM_UP]:
                pair(item)
            pairs = [pair(item) for item in items]
    finally:
        conn.close()
    return [http_ms for http_ms, _ in pairs], [sql_ms for _, sql_ms in pairs]


def timed_sql(sql: str, parameter_lists: list[list]) -> list[float]:
    with connection.cursor() as cursor:

        def query(params):
            cursor.execute(sql, params)
            cursor.fetchall()

        return timed(query, parameter_lists)


def line(label: str, timings: list[float]) -> str:
    return f"{label:58s} p50 {statistics.median(timings):6.2f} ms  p95 {percentile(timings, 0.95):6.2f} ms"


def bench(core_user, owner) -> None:
    import shapely

    from fields.geodesy import as_multipolygon
    from fields.geometry import candidate_window, to_geojson
    from fields.intersects import _candidates_sql
    from fields.models import Boundary
    from platform_site.api.authentication import token_issue

    token = token_issue(owner)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = f"/services/fields/api/users/{core_user.id}/fields/intersects"
    shapes = query_geometries(REQUESTS)
    ids_sql = (
        "SELECT f.id FROM fields_field f JOIN fields_boundary b ON b.id = f.boundary_id "
        "WHERE f.core_user_id = %s AND b.status = 'ACTIVE' AND ST_Intersects(b.geometry, ST_GeomFromWKB(%s, 4326))"
    )
    bodies = [{"geometry": to_geojson(shape), "intersectionThreshold": 0.01} for shape in shapes]
    found = [len(client.post(url, body, content_type="application/json").json()) for body in bodies]
    client_ms = timed_posts(client, url, bodies)
    floor_url = f"/floor/{core_user.id}"
    with override_settings(ROOT_URLCONF="bench._floor"):
        floor_ms = timed_posts(client, floor_url, bodies)
    same_sql = _candidates_sql("postgresql", "core_user")
    same_params = [
        [str(core_user.id), Boundary.Status.ACTIVE.value, shapely.to_wkb(candidate_window(as_multipolygon(shape)))]
        for shape in shapes
    ]
    ids_ms = timed_sql(ids_sql, [[str(core_user.id), shapely.to_wkb(shape)] for shape in shapes])
    port = free_port()
    server = gunicorn_start(port)
    try:
        http_ms, same_ms = timed_side_by_side(port, token, url, bodies, same_sql, same_params)
        http_floor_ms = timed_http(port, token, floor_url, bodies)
        django_ms = timed_http(port, token, "/floor/django", bodies)
        wsgi_ms = timed_http(port, token, "/floor/wsgi", bodies)
    finally:
        server.terminate()
        server.wait(timeout=30)

    http_p50, same_p50 = statistics.median(http_ms), statistics.median(same_ms)
    print(f"{REQUESTS} queries, {statistics.mean(found):.2f} fields answered on average")
    print(line("POST .../fields/intersects, HTTP (gunicorn):", http_ms))
    print(line("raw SQL, the endpoint's own candidate query:", same_ms))
    print("  (those two side by side: each request, then its own query)")
    print(line("POST .../fields/intersects, Django test client:", client_ms))
    print(line("raw SQL, candidate ids only:", ids_ms))
    print(line("floor, HTTP: do-nothing endpoint, same auth + core user:", http_floor_ms))
    print(line("floor, test client:", floor_ms))
    print(line("floor, HTTP: plain Django view, no DRF, no auth:", django_ms))
    print(line("floor, HTTP: WSGI server alone, before Django:", wsgi_ms))
    print(
        f"ratio HTTP / same SQL: p50 {http_p50 / same_p50:.1f}x  p95 "
        f"{percentile(http_ms, 0.95) / percentile(same_ms, 0.95):.1f}x (goal: p50 under 30 ms and within 3x)"
    )
    each = [h / q for h, q in zip(http_ms, same_ms, strict=True)]
    print(
        f"ratio of each request to its own query: p50 {statistics.median(each):.1f}x  p95 {percentile(each, 0.95):.1f}x"
    )
    print(f"ratio HTTP / ids-only SQL: p50 {http_p50 / statistics.median(ids_ms):.1f}x")
    print(f"ratio test client / same SQL: p50 {statistics.median(client_ms) / same_p50:.1f}x")
    print(
        f"ratio HTTP floor / same SQL: p50 {statistics.median(http_floor_ms) / same_p50:.1f}x "
        "(what any authenticated /users/{coreUserId}/... request costs before doing anything)"
    )
    floor_p50 = statistics.median(http_floor_ms)
    print(
        f"3x budget: {3 * same_p50:.2f} ms; authenticated floor + the same SQL alone: {floor_p50 + same_p50:.2f} ms "
        f"({(floor_p50 + same_p50) / same_p50:.1f}x) before parsing, ratios or serialization"
    )


def main() -> None:
    if connection.vendor != "postgresql":
        sys.exit("run against PostGIS: DATABASE_URL=postgis://...")
    setup_test_environment()
    with scratch_database():
        from tests.factories import CoreUserFactory, OwnerFactory

        owner = OwnerFactory()
        core_user = CoreUserFactory(owner=owner)
        load(core_user)
        bench(core_user, owner)


if __name__ == "__main__":
    main()
