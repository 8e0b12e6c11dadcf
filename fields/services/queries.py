"""Geometric questions about the fields of core users: which fields a geometry overlaps (the spec's intersection
threshold rule) and the common area of several fields. Ratios are geodesic and computed here, so PostGIS and
SpatiaLite agree; the database only supplies candidates through its spatial index."""

from collections.abc import Iterable

from django.db.models import QuerySet
from shapely.geometry import MultiPolygon

from platform_site.accounts.models import CoreUser
from platform_site.api.errors import DomainError, list_item_errors
from platform_site.text import named_first

from ..geodesy import SQUARE_METRES_PER_HECTARE, as_multipolygon
from ..geometry import Overlap, candidate_window, from_geos, overlaps, to_geos
from ..models import Boundary, Field

DEFAULT_INTERSECTION_THRESHOLD = 0.01


def fields_overlapping(
    *,
    core_users: Iterable[CoreUser] | QuerySet,
    geometry: MultiPolygon,
    threshold: float = DEFAULT_INTERSECTION_THRESHOLD,
    types: Iterable[str] | None = None,
    queryset: QuerySet | None = None,
) -> list[tuple[Field, Overlap]]:
    """Fields of `core_users` whose ACTIVE boundary overlaps `geometry` by at least `threshold` percent of
    either area (the spec's intersection threshold rule), with the overlap, in a stable order (id).

    Candidates come from the spatially indexed `intersects` lookup against the boxes of `geometry`'s polygons
    (`geometry.candidate_window`); the ratios are geodesic and computed here, so PostGIS and SpatiaLite agree.
    Conversion uses it to attach files (`fieldsAttachIntersection`)."""
    queryset = Field.objects.all() if queryset is None else queryset
    candidates = queryset.filter(
        core_user__in=core_users,
        boundary__status=Boundary.Status.ACTIVE,
        boundary__geometry__intersects=to_geos(candidate_window(geometry)),
    ).select_related("boundary")
    if types is not None:
        candidates = candidates.filter(type__in=list(types))
    candidates = list(candidates.order_by("pk"))
    results = overlaps(
        [from_geos(field.boundary.geometry) for field in candidates],
        [field.boundary.area_ha * SQUARE_METRES_PER_HECTARE for field in candidates],
        geometry,
    )
    return [(field, result) for field, result in zip(candidates, results, strict=True) if result.satisfies(threshold)]


def fields_intersection(*, core_user: CoreUser, field_ids: list[str]) -> MultiPolygon:
    """The common area of the ACTIVE boundaries of at least two distinct fields of `core_user` (400
    otherwise), as a MultiPolygon (empty when they do not overlap)."""
    ids = list(dict.fromkeys(field_ids))
    if len(ids) < 2:
        message = "Give the ids of at least two different fields."
        raise DomainError(message, error_key="validation", field_errors=[{"field": "", "message": message}])
    fields = {
        f.public_id: f
        for f in Field.objects.filter(
            core_user=core_user, public_id__in=ids, boundary__status=Boundary.Status.ACTIVE
        ).select_related("boundary")
    }
    missing = [i for i in ids if i not in fields]
    if missing:
        named = named_first(missing, 10)
        raise DomainError(
            f"Not fields of this user (or without an active boundary): {named}.",
            error_key="validation",
            # Places in the body as sent: counted over the ids without their repeats, ["a", "a", "missing"] named [1]
            field_errors=list_item_errors(field_ids, set(missing), lambda _id: "Unknown field."),
        )
    result = from_geos(fields[ids[0]].boundary.geometry)
    for field_id in ids[1:]:
        result = result.intersection(from_geos(fields[field_id].boundary.geometry))
    return as_multipolygon(result)
