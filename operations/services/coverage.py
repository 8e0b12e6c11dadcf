"""The fields an operation covers (`OperationField`), each with the percent of its active boundary covered: recorded
at each build from the fields its automerged file is attached to, and kept in step when those links change without
a build (a field deleted, a field merged, a merged field absorbed into another:
`fields.signals.field_files_relinked`)."""

from __future__ import annotations

from collections.abc import Collection

from django.utils import timezone

from conversion.links import coverage_geometry
from conversion.models import File
from fields.geodesy import SQUARE_METRES_PER_HECTARE
from fields.geometry import from_geos, overlaps
from fields.models import Boundary, Field, FieldFile

from ..models import Operation, OperationField


def fields_record(operation: Operation, merged: File, *, remeasure: Collection | None = None) -> None:
    """The fields the automerged file is attached to, each with the percent of its active boundary covered.
    `remeasure` (field pks): keep the other rows there are (the coverage figures of the build), and measure these
    and the fields the file was attached to since."""
    field_ids = set(FieldFile.objects.filter(file_id=str(merged.pk)).values_list("field_id", flat=True))
    recorded = OperationField.objects.filter(operation=operation)
    if remeasure is not None:
        field_ids -= set(recorded.exclude(field_id__in=list(remeasure)).values_list("field_id", flat=True))
        recorded = recorded.filter(field_id__in=list(remeasure))
    recorded.delete()
    # (read only when there is a field to measure: a field's deletion, every operation that covered it, has none)
    geometry = coverage_geometry(merged.summary) if field_ids else None
    if geometry is None:
        return
    fields = list(
        Field.objects.filter(pk__in=field_ids, boundary__status=Boundary.Status.ACTIVE)
        .select_related("boundary")
        .order_by("pk")
    )
    found = overlaps(
        [from_geos(f.boundary.geometry) for f in fields],
        [f.boundary.area_ha * SQUARE_METRES_PER_HECTARE for f in fields],
        geometry,
    )
    OperationField.objects.bulk_create(
        [
            OperationField(operation=operation, field=f, coverage=round(min(o.of_field, 100.0), 4))
            for f, o in zip(fields, found, strict=True)
        ]
    )


def on_field_files_relinked(sender, file_ids, taken_by=None, **kwargs) -> None:
    """`fields.signals.field_files_relinked` receiver: the operations whose automerged file is among `file_ids`
    changed fields. A field deleted took its rows with it; the merged field that took the files (`taken_by`, its
    pk: of a field that joined it, of a merged field it absorbed) is measured now, on its new outline (also where
    the operation covered it before). Either way their `updatedTime` moves."""
    operations = Operation.objects.filter(merged_file_id__in=list(file_ids))
    remeasure = [] if taken_by is None else [taken_by]
    for operation in operations.select_related("merged_file").order_by("pk"):
        if operation.status == Operation.Status.PROCESSED:
            fields_record(operation, operation.merged_file, remeasure=remeasure)
    operations.update(updated_time=timezone.now())
