"""`POST .../fields/intersects` on the hot path: one SQL query for the candidate rows, vectorised ratios.

The rule is the one of `services.fields_overlapping` (ACTIVE boundary, spatially indexed `ST_Intersects` against
the boxes of the geometry's polygons, `geometry.candidate_window`, geodesic ratios computed here with shapely and
pyproj, so PostGIS and SpatiaLite agree), but this path
builds no model instances: one hand-written query (the ORM's query building alone costs about twice the
query itself) answers exactly the columns the response needs, the boundary as WKB parsed in bulk, and the
ids of each candidate's boundaries, files and sources as JSON arrays from correlated subqueries. The SQL
is portable (`ST_Intersects`, `ST_AsBinary`, `ST_GeomFromWKB` exist in both PostGIS and SpatiaLite) but for the JSON
aggregate.
"""

import json
from functools import cache
from typing import Any

import shapely
from django.db import connection
from shapely.geometry import MultiPolygon

from platform_site.accounts.models import CoreUser

from .geodesy import SQUARE_METRES_PER_HECTARE, as_multipolygon
from .geometry import candidate_window, overlaps
from .models import Boundary, Field, FieldFile
from .serializers import FIELD_COLUMNS

# `{value}` of the rows of `{table}` matching `{where}`, in `{order}`, as a JSON array (None or "[]" if none).
# PostgreSQL orders the aggregate itself; SQLite (before 3.44) keeps the order of an ordered subquery.
_JSON_ARRAY = {
    "postgresql": "(SELECT json_agg({value} ORDER BY {order}) FROM {table} WHERE {where})",
    "sqlite": "(SELECT json_group_array(v) FROM (SELECT {value} AS v FROM {table} WHERE {where} ORDER BY {order}))",
}


@cache
def _candidates_sql(vendor: str, scope: str) -> str:
    quote = connection.ops.quote_name
    field, boundary, file, core_user = (quote(model._meta.db_table) for model in (Field, Boundary, FieldFile, CoreUser))
    array = _JSON_ARRAY[vendor].format
    columns = ", ".join(f"f.{quote(column)}" for column in FIELD_COLUMNS)
    return (
        f"SELECT {columns}, b.area_ha, ST_AsBinary(b.geometry), "
        + array(
            value="CAST(x.id AS text)", table=f"{boundary} x", where="x.field_id = f.id", order="x.created_at, x.id"
        )
        + ", "
        + array(value="x.file_id", table=f"{file} x", where="x.field_id = f.id", order="x.id")
        + ", "
        + array(value="x.public_id", table=f"{field} x", where="x.merged_field_id = f.id", order="x.public_id")
        + f", (SELECT m.public_id FROM {field} m WHERE m.id = f.merged_field_id)"
        + f" FROM {field} f JOIN {boundary} b ON b.id = f.boundary_id WHERE "
        + {
            "core_user": "f.core_user_id = %s",
            "owner": f"f.core_user_id IN (SELECT u.id FROM {core_user} u WHERE u.owner_id = %s)",
        }[scope]
        + " AND b.status = %s AND ST_Intersects(b.geometry, ST_GeomFromWKB(%s, 4326))"
        + " ORDER BY f.public_id, f.core_user_id"  # (owner-wide, two core users may each have a field of one id)
    )


def _ids(value: Any) -> list:
    """A JSON array column: a list from PostgreSQL's `json` (None when empty), text from SQLite."""
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str) else value


def fields_intersecting_rows(
    *, geometry: MultiPolygon, threshold: float, core_user: CoreUser | None = None, owner=None
) -> list[dict]:
    """The fields of `core_user` (or of every core user of `owner`) whose ACTIVE boundary overlaps
    `geometry` by at least `threshold` percent of either area, in (API) id order, as rows for
    `serializers.field_representation` (one query)."""
    if (core_user is None) == (owner is None):
        raise TypeError("give exactly one of core_user and owner")
    if core_user is not None:
        scope, scope_id = "core_user", Field._meta.get_field("core_user").get_db_prep_value(core_user.pk, connection)
    else:
        scope, scope_id = "owner", CoreUser._meta.get_field("owner").get_db_prep_value(owner.pk, connection)
    geometry = as_multipolygon(geometry)
    # The boxes of its polygons, not the geometry (`candidate_window`): the exact test is the ratio below.
    query_shape = candidate_window(geometry)
    with connection.cursor() as cursor:
        cursor.execute(
            _candidates_sql(connection.vendor, scope),
            [scope_id, Boundary.Status.ACTIVE.value, shapely.to_wkb(query_shape)],
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    width = len(FIELD_COLUMNS)
    boundaries = shapely.from_wkb([bytes(row[width + 1]) for row in rows])
    results = overlaps(boundaries, [row[width] * SQUARE_METRES_PER_HECTARE for row in rows], geometry)
    uuid_field = Boundary._meta.pk
    found = []
    for row, boundary, result in zip(rows, boundaries, results, strict=True):
        if not result.satisfies(threshold):
            continue
        values = dict(zip(FIELD_COLUMNS, row, strict=False))
        values.update(
            core_user_id=Field._meta.get_field("core_user").to_python(values["core_user_id"]),
            legacy=bool(values["legacy"]),
            area_ha=row[width],
            geometry=as_multipolygon(boundary),
            boundary_ids=[uuid_field.to_python(boundary_id) for boundary_id in _ids(row[width + 2])],
            file_ids=_ids(row[width + 3]),
            source_ids=_ids(row[width + 4]),
            merged_public_id=row[width + 5],
        )
        found.append(values)
    return found
