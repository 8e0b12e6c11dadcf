"""The fields service's business rules, one module per concern; import them from here.

- `writes`: fields and their immutable boundary history, provider boundary statuses, auto-merge, files on fields.
- `queries`: geometric questions (fields a geometry overlaps, the common area of fields).
- `farms`: farms and growers.
"""

from .farms import farm_create, farm_replace, grower_create, grower_replace
from .queries import DEFAULT_INTERSECTION_THRESHOLD, fields_intersection, fields_overlapping
from .writes import (
    boundary_provider_sync,
    field_boundary_set,
    field_check_writable,
    field_create,
    field_delete,
    field_files_attach,
    field_queryset,
    field_update,
)

__all__ = [
    "DEFAULT_INTERSECTION_THRESHOLD",
    "boundary_provider_sync",
    "farm_create",
    "farm_replace",
    "field_boundary_set",
    "field_check_writable",
    "field_create",
    "field_delete",
    "field_files_attach",
    "field_queryset",
    "field_update",
    "fields_intersection",
    "fields_overlapping",
    "grower_create",
    "grower_replace",
]
