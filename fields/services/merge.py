"""Auto-merge: an ORIGINAL field whose new boundary overlaps others of its core user (inherited `fieldsAutoMerge`,
`fieldsMergeIntersection`) joins them in one MERGED field, whose boundary is the union of its sources' and follows
their changes."""

import uuid

from django.utils import timezone
from shapely.ops import unary_union

from configs.services import config_resolve
from webhooks.models import EventType
from webhooks.services import event_emit

from ..geodesy import as_multipolygon
from ..geometry import from_geos
from ..models import Boundary, Field, FieldFile
from ..signals import field_files_relinked
from .history import boundary_add, field_lock, merge_lock_held
from .queries import DEFAULT_INTERSECTION_THRESHOLD, fields_overlapping


def after_boundary_change(field: Field) -> None:
    """Auto-merge (inherited `fieldsAutoMerge`, `fieldsMergeIntersection`) after an ORIGINAL field got a new
    active boundary; otherwise keep an existing merged field in step with its source."""
    if field.type != Field.Type.ORIGINAL:
        return
    config = config_resolve(core_user=field.core_user)
    if (
        config.get("fieldsAutoMerge")
        and field.boundary_id
        and field.boundary.status == Boundary.Status.ACTIVE
        and merge_lock_held(field.core_user_id)
    ):
        partners = [
            other
            for other, _ in fields_overlapping(
                core_users=[field.core_user],
                geometry=from_geos(field.boundary.geometry),
                threshold=float(config.get("fieldsMergeIntersection") or DEFAULT_INTERSECTION_THRESHOLD),
                types=[Field.Type.ORIGINAL],
            )
            if other.pk != field.pk
        ]
        if partners:
            _merge(field=field, partners=partners)
            return
    if field.merged_field_id:
        merged_refresh(merged=field.merged_field)


def fields_updated_announce(core_user, public_ids) -> None:
    """fieldUpdated for each of these fields: they joined or left a merged field (`mergedFieldId` changed)."""
    for public_id in public_ids:
        event_emit(type=EventType.FIELD_UPDATED, core_user=core_user, payload={"fieldId": public_id})


def _merge(*, field: Field, partners: list[Field]) -> None:
    group = {f.pk: f for f in [field, *partners]}
    merged_ids = {f.merged_field_id for f in group.values() if f.merged_field_id}
    merged_fields = list(Field.objects.filter(pk__in=merged_ids).order_by("created_at", "pk"))
    created = not merged_fields
    now = timezone.now()  # `update()` leaves `updated_at` alone: a field that joins a merged field has changed
    if created:
        key = str(uuid.uuid4())
        target = Field.objects.create(id=key, public_id=key, core_user=field.core_user, type=Field.Type.MERGED)
        joined = True
    else:
        target = merged_fields[0]
        joined = len(merged_fields) > 1 or any(f.merged_field_id != target.pk for f in group.values())
    absorbed = merged_fields[1:]
    joining = Field.objects.filter(pk__in=list(group)).exclude(merged_field=target)
    # The fields whose `mergedFieldId` changes are announced as updated (the field changing now has its events).
    moving = joining | Field.objects.filter(merged_field__in=absorbed)
    announced = sorted(moving.exclude(pk=field.pk).values_list("public_id", flat=True))
    # The files of the fields joining it are the merged field's too (the spec: operations are found by the merged
    # field and by each field merged in it), as are those of a merged field it absorbs.
    relinked = set(FieldFile.objects.filter(field__in=moving).values_list("file_id", flat=True)) - file_ids_of(target)
    FieldFile.objects.bulk_create([FieldFile(field=target, file_id=f) for f in relinked], ignore_conflicts=True)
    for other in absorbed:
        # Two merged fields now overlap through this field: one merged field keeps them all, and the files the
        # absorbed one covered (it was deleted with its links), as their operations are found by it.
        Field.objects.filter(merged_field=other).update(merged_field=target, updated_at=now)
        files = file_ids_of(other)
        FieldFile.objects.bulk_create([FieldFile(field=target, file_id=f) for f in files], ignore_conflicts=True)
        relinked |= files
        other.delete()
    joining.update(merged_field=target, updated_at=now)
    fields_updated_announce(field.core_user, announced)
    field.merged_field = target
    merged_refresh(merged=target, created=created, sources_changed=joined)
    if relinked:
        # After the refresh: an operation's coverage of the merged field is measured on its new outline.
        field_files_relinked.send(sender=Field, file_ids=sorted(relinked), taken_by=target.pk)


def file_ids_of(field: Field) -> set[str]:
    """The ids of the files attached to the field (`FieldFile`)."""
    return set(FieldFile.objects.filter(field=field).values_list("file_id", flat=True))


def merged_refresh(*, merged: Field, created: bool = False, sources_changed: bool = False) -> None:
    """Give a MERGED field a new boundary: the union of its sources' ACTIVE boundaries. When the union is
    unchanged but `sources_changed` (a field joined or left), it is updated all the same (`updatedTime`, event
    mergedFieldUpdated with its current boundary): its `sources` changed. When no source has an ACTIVE boundary,
    neither has the merged field: its last one becomes INACTIVE (named by the event). The merged field is locked
    before the sources are read: a concurrent change of another source then waits, and reads this one's boundary
    once this transaction commits (reading first, each would union the other's old boundary)."""
    if not field_lock(merged, missing_ok=True):
        return
    merged.refresh_from_db(fields=["boundary"])
    sources = list(
        Field.objects.filter(merged_field=merged, boundary__status=Boundary.Status.ACTIVE).select_related("boundary")
    )
    if not sources:
        # No source has an outline now (the provider deleted or deactivated them all): neither has the merged
        # field, until one has again. Its last outline becomes INACTIVE; kept, it still answered intersects.
        boundary = merged.boundary
        if boundary is None and not sources_changed:
            return
        if boundary is not None:
            Boundary.objects.filter(pk=boundary.pk).update(status=Boundary.Status.INACTIVE)
        merged.boundary = None
        merged.save(update_fields=["boundary", "updated_at"])
    else:
        union = as_multipolygon(unary_union([from_geos(s.boundary.geometry) for s in sources]))
        if merged.boundary_id and not created and from_geos(merged.boundary.geometry).equals(union):
            if not sources_changed:
                return
            merged.save(update_fields=["updated_at"])
            boundary = merged.boundary
        else:
            boundary = boundary_add(field=merged, geometry=union, first=created)
    source_ids = sorted(Field.objects.filter(merged_field=merged).values_list("public_id", flat=True))
    payload = {"fieldId": merged.public_id, "boundaryId": str(boundary.pk) if boundary else None, "sources": source_ids}
    event_emit(
        type=EventType.MERGED_FIELD_CREATED if created else EventType.MERGED_FIELD_UPDATED,
        core_user=merged.core_user,
        payload=payload,
    )
