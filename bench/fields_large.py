"""Time creating a field from a large boundary (`POST /users/{id}/fields`, through Django's request handling
in-process) on both databases: PostGIS (DATABASE_URL) and the embedded SpatiaLite of `make run` (a scratch file).

A ring of 2,000, 20,000 and 200,000 positions (the most a geometry may have, `fields.geometry.MAX_POSITIONS`), each
created REPEAT times: the request's body parsed and checked, the area measured, the field and its boundary written,
the events emitted and the field answered. Prints the median per size and database. Then `intersects` of a boundary
with 49,998 holes against a field of the same boundary (SpatiaLite's own `ST_Intersects` took 163 s over it).
"""

import math
import statistics
import time

from _django import on_both_databases, scratch_database

SIZES = (2_000, 20_000, 200_000)
REPEAT = 3
HOLES = 49_998  # with the outline, 199,997 positions: at the limit


def ring(size: int) -> list:
    points = [
        [-80 + 0.01 * math.cos(2 * math.pi * i / (size - 1)), 50 + 0.01 * math.sin(2 * math.pi * i / (size - 1))]
        for i in range(size - 1)
    ]
    return [*points, points[0]]


def holey(holes: int) -> dict:
    """A 10 x 10 degree square with `holes` small triangular holes on a grid (4 positions each, the outline 5)."""
    side = math.ceil(math.sqrt(holes))
    step = 10 / (side + 1)
    rings = [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]
    for index in range(holes):
        x, y = step * (1 + index % side), step * (1 + index // side)
        rings.append([[x, y], [x, y + step / 3], [x + step / 3, y], [x, y]])
    return {"type": "Polygon", "coordinates": rings}


def measure(label: str) -> None:
    with scratch_database():
        from rest_framework.test import APIClient

        from platform_site.api.authentication import token_issue
        from tests.factories import CoreUserFactory, OwnerFactory

        owner = OwnerFactory()
        core_user = CoreUserFactory(owner=owner)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(owner)}")
        url = f"/services/fields/api/users/{core_user.id}/fields"
        for size in SIZES:
            body = {"geometry": {"type": "Polygon", "coordinates": [ring(size)]}}
            timings = []
            for _ in range(REPEAT):
                started = time.perf_counter()
                response = client.post(url, body, format="json")
                timings.append(time.perf_counter() - started)
                assert response.status_code == 201, response.content[:300]
            print(f"{label:10s} create a field of {size:7,} positions: median {statistics.median(timings):6.2f} s")
        # Boundaries full of holes, one overlapping the other: the candidate test SpatiaLite ran took minutes
        shape = holey(HOLES)
        assert client.post(url, {"geometry": shape}, format="json").status_code == 201
        started = time.perf_counter()
        response = client.post(f"{url}/intersects", {"geometry": shape}, format="json")
        assert response.status_code == 200 and len(response.json()) == 1, response.content[:300]
        print(
            f"{label:10s} intersects, {HOLES:,} holes against {HOLES:,} holes: {time.perf_counter() - started:6.2f} s"
        )


if __name__ == "__main__":
    on_both_databases(measure)
