"""Business rules of fields: created, changed (a new boundary each time), deleted, provider boundary statuses, and
the files attached to fields; the locks and the boundary history are `history`'s, auto-merge is `merge`'s. Every
write is atomic and announces itself through `event_emit` inside its transaction."""

import re
import uuid
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import Prefetch, QuerySet
from django.utils import timezone
from shapely.geometry import MultiPolygon

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_lock
from platform_site.api.errors import NOT_FOUND, ConflictError, DomainError, NotFoundError, ProviderResourceReadOnly
from webhooks.models import EventType
from webhooks.services import event_emit

from ..geometry import from_geos
from ..models import Boundary, Farm, Field, FieldFile
from ..signals import field_files_relinked
from .history import boundary_add, field_lock, user_lock
from .merge import after_boundary_change, fields_updated_announce, file_ids_of, merged_refresh

FIELD_ID_PATTERN = re.compile(r"[A-Za-z0-9._~:-]{1,255}")
# Ids that would collide with the collection routes `.../fields/intersects` and `.../fields/intersect`, and the
# path segments clients and proxies resolve before sending (`.../fields/..` is `.../users/{id}/`).
RESERVED_FIELD_IDS = frozenset({"intersects", "intersect", ".", ".."})


def field_queryset(queryset: QuerySet | None = None) -> QuerySet:
    """Fields with what their representation needs, in a fixed number of queries (no geometry of old
    boundaries is loaded: only their ids)."""
    queryset = Field.objects.all() if queryset is None else queryset
    # The merged field (its public id is `mergedFieldId`) comes in the same statement as the field: read by a second
    # query, a merged field deleted in between would be missing while the field still points at it.
    return queryset.select_related("boundary", "merged_field").prefetch_related(
        Prefetch("boundaries", queryset=Boundary.objects.only("id", "field_id", "created_at")),
        Prefetch(
            "file_links", queryset=FieldFile.objects.only("id", "field_id", "file_id", "created_at").order_by("id")
        ),
        Prefetch("sources", queryset=Field.objects.only("id", "public_id", "merged_field_id", "created_at")),
    )


def _field_reload(field: Field) -> Field:
    return field_queryset().get(pk=field.pk)


def field_check_writable(field: Field) -> None:
    """403 `providerResourceReadOnly` for a provider's field: the API changes only fields made through it."""
    if field.is_provider_field:
        raise ProviderResourceReadOnly(
            f"Field {field.public_id} comes from {field.provider_name}; change it at the provider, not here."
        )


def _check_farm(core_user: CoreUser, farm: Farm | None) -> None:
    if farm is not None and farm.core_user_id != core_user.pk:
        raise DomainError(
            "The farm does not exist for this user.", field_errors=[{"field": "farmId", "message": "Unknown farm."}]
        )


@transaction.atomic
def field_create(
    *,
    core_user: CoreUser,
    geometry: MultiPolygon,
    id: str | None = None,
    name: str = "",
    farm: Farm | None = None,
    provider_name: str | None = None,
    provider_id: int | None = None,
    provider_field_id: str | None = None,
    provider_field_name: str | None = None,
    provider_boundary_id: str | None = None,
    organization_id: str | None = None,
    provider_status: str | None = None,
) -> Field:
    """A new ORIGINAL field with its first (ACTIVE) boundary. A client id must be unused (409
    `fieldAlreadyExists`); provider sync passes the provider keys. Auto-merge runs when configured.
    Events: fieldCreated, fieldBoundaryCreated (and mergedField* when a merge happens)."""
    if id is not None and (not FIELD_ID_PATTERN.fullmatch(id) or id in RESERVED_FIELD_IDS):
        raise DomainError(
            "A field id is 1 to 255 letters, digits or . _ ~ : - (and not 'intersects', 'intersect', '.' or '..').",
            field_errors=[{"field": "id", "message": "Invalid field id."}],
        )
    _check_farm(core_user, farm)
    if not user_lock(core_user.pk, merge_may_follow=True):
        raise NotFoundError(NOT_FOUND)
    key = str(uuid.uuid4())
    field_id = id or key
    # Unique per core user: another core user's (another owner's) field of that id is none of this one's business.
    if Field.objects.filter(core_user=core_user, public_id=field_id).exists():
        raise ConflictError(f"A field with id {field_id} already exists.", error_key="fieldAlreadyExists")
    try:
        with transaction.atomic():
            field = Field.objects.create(
                id=key,
                public_id=field_id,
                core_user=core_user,
                name=name or "",
                farm=farm,
                provider_name=provider_name,
                provider_id=provider_id,
                provider_field_id=provider_field_id,
                provider_field_name=provider_field_name,
                provider_boundary_id=provider_boundary_id,
                organization_id=organization_id,
            )
    except IntegrityError:
        raise ConflictError(f"A field with id {field_id} already exists.", error_key="fieldAlreadyExists") from None
    boundary = boundary_add(
        field=field,
        geometry=geometry,
        provider_status=provider_status,
        provider_boundary_id=provider_boundary_id,
        first=True,
    )
    event_emit(type=EventType.FIELD_CREATED, core_user=core_user, payload={"fieldId": field.public_id})
    event_emit(
        type=EventType.FIELD_BOUNDARY_CREATED,
        core_user=core_user,
        payload={"fieldId": field.public_id, "boundaryId": str(boundary.pk)},
    )
    after_boundary_change(field)
    return _field_reload(field)


@transaction.atomic
def field_update(*, field: Field, changes: dict) -> Field:
    """PATCH: any of `name`, `farm` (None detaches), `geometry` (a new boundary). Provider fields are
    read-only (403 `providerResourceReadOnly`). Event fieldUpdated (and the boundary's events), when something
    changed."""
    field_check_writable(field)
    field_lock(field, merge_may_follow="geometry" in changes)
    # Compared with the field as it is now that it is locked: the copy the view read may predate a concurrent change
    # (two PATCHes of one name announced it twice, and of 'C' and 'B' sent at once, 'B' was dropped as unchanged).
    field.refresh_from_db(fields=["name", "farm"])
    update_fields = []
    if "name" in changes and field.name != (changes["name"] or ""):
        field.name = changes["name"] or ""
        update_fields.append("name")
    if "farm" in changes:
        _check_farm(field.core_user, changes["farm"])
        farm_id = changes["farm"].pk if changes["farm"] is not None else None
        if field.farm_id != farm_id:
            field.farm = changes["farm"]
            update_fields.append("farm")
    if update_fields:
        field.save(update_fields=[*update_fields, "updated_at"])
    if "geometry" in changes and _boundary_set(field=field, geometry=changes["geometry"]):
        return _field_reload(field)  # its events are sent
    # What it already was (a name, a farm, an outline sent again) changes nothing: no updatedTime, no event.
    if update_fields:
        event_emit(type=EventType.FIELD_UPDATED, core_user=field.core_user, payload={"fieldId": field.public_id})
    return _field_reload(field)


@transaction.atomic
def field_boundary_set(*, field: Field, geometry: MultiPolygon) -> Field:
    """Make `geometry` the field's active boundary; the previous one stays, INACTIVE. The geometry of a
    MERGED field is the union of its sources and cannot be set. Events fieldBoundaryUpdated, fieldUpdated;
    a merged field containing this one is updated (mergedFieldUpdated)."""
    field_check_writable(field)
    field_lock(field, merge_may_follow=True)
    _boundary_set(field=field, geometry=geometry)
    return _field_reload(field)


def _boundary_set(*, field: Field, geometry: MultiPolygon) -> bool:
    """`field_boundary_set` once the field is locked (PATCH with a geometry takes the lock itself). False when
    `geometry` is the active boundary's outline already: nothing changes, no boundary, no event (the spec's
    condition is "a new boundary geometry is sent"; a repeated PUT changes nothing)."""
    if field.type == Field.Type.MERGED:
        raise DomainError(
            "The geometry of a MERGED field is the union of its sources; change a source instead.",
            error_key="mergedFieldGeometry",
            field_errors=[{"field": "geometry", "message": "Not settable on a MERGED field."}],
        )
    # As it is now that the field is locked: a merged field deleted meanwhile has freed it (its id was stale).
    field.refresh_from_db(fields=["boundary", "merged_field"])
    current = field.boundary
    if (
        current is not None
        and current.status == Boundary.Status.ACTIVE
        and from_geos(current.geometry).equals(geometry)
    ):
        return False
    boundary = boundary_add(field=field, geometry=geometry)
    event_emit(
        type=EventType.FIELD_BOUNDARY_UPDATED,
        core_user=field.core_user,
        payload={"fieldId": field.public_id, "boundaryId": str(boundary.pk)},
    )
    event_emit(type=EventType.FIELD_UPDATED, core_user=field.core_user, payload={"fieldId": field.public_id})
    after_boundary_change(field)
    return True


@transaction.atomic
def field_delete(*, field: Field) -> bool:
    """Delete a field created through the service (403 `providerResourceReadOnly` for provider fields).
    Deleting a MERGED field frees its sources; deleting a source shrinks its merged field, which is
    deleted too when fewer than two sources remain. False: a concurrent deletion deleted it first."""
    field_check_writable(field)
    # Locked first, so the boundaries a concurrent change is adding are committed and deleted with the field
    # (otherwise they would reference a field being deleted: a foreign-key violation). Gone already: done.
    # The lock order of every change: core user, fields, merged field. The core user always: the deletion
    # cascades to rows that merges and operation builds write while they hold its lock (`core_user_lock`, which
    # does not wait for writes that only keep the user: as FOR UPDATE it never came under a stream of changes of
    # the user's other fields, and a crop that had locked the field waited for it at its commit while it waited for
    # the crop, a deadlock). A MERGED field's sources before it, as its deletion updates them.
    core_user_lock(field.core_user_id)
    if field.type == Field.Type.MERGED:
        list(Field.objects.select_for_update(no_key=True).filter(merged_field=field).order_by("pk").values_list("pk"))
    if not field_lock(field, missing_ok=True):
        return False
    field.refresh_from_db(fields=["merged_field"])
    merged = field.merged_field
    if field.type == Field.Type.MERGED:
        _sources_free(field)
    relinked = file_ids_of(field)
    field.delete()
    # Counted once the merged field is locked: a concurrent deletion of another source is then visible (or it
    # removed the merged field).
    if merged is not None and field_lock(merged, missing_ok=True):
        remaining = list(merged.sources.all())
        if len(remaining) < 2:
            _sources_free(merged)
            relinked |= file_ids_of(merged)
            merged.delete()
        else:
            merged_refresh(merged=merged, sources_changed=True)
    if relinked:
        # The files (and so their operations) that named a deleted field changed: their `updatedTime` moves.
        field_files_relinked.send(sender=Field, file_ids=sorted(relinked))
    return True


def _sources_free(merged: Field) -> None:
    """The sources of a MERGED field about to be deleted leave it: they changed, so their `updatedTime` moves, and
    each is announced (fieldUpdated)."""
    sources = Field.objects.filter(merged_field=merged)
    freed = sorted(sources.values_list("public_id", flat=True))
    sources.update(merged_field=None, updated_at=timezone.now())
    fields_updated_announce(merged.core_user, freed)


@transaction.atomic
def boundary_provider_sync(
    *,
    field: Field,
    provider_boundary_id: str,
    geometry: MultiPolygon | None = None,
    provider_status: str | None = None,
    deleted: bool = False,
) -> Boundary | None:
    """What provider sync calls when the provider reports on one of its boundaries of `field` (the boundary
    table of the spec):

    - `deleted`: the boundary becomes DELETED_ON_PROVIDER; the field has no current boundary any more.
    - a new `geometry` for the same provider boundary id: the old boundary becomes OUTDATED_ON_PROVIDER
      and a new one is created with the geometry (and `provider_status`, default ACTIVE).
    - only a new `provider_status`: a new boundary with the same geometry and that provider status is
      created to keep the history; its status follows (ACTIVE or INACTIVE).
    - an unknown provider boundary id: it is created as the field's current boundary.

    Returns the new boundary (None when nothing changed or on deletion). Event fieldBoundaryUpdated."""
    if provider_status is not None and provider_status not in Boundary.ProviderStatus.values:
        raise ValueError(f"unknown provider status {provider_status!r}")
    field_lock(field, merge_may_follow=True)
    # As it is now that the field is locked: the caller's copy may predate a merge, or a merged field's deletion.
    field.refresh_from_db(fields=["boundary", "merged_field", "provider_boundary_id"])
    current = (
        Boundary.objects.select_for_update()
        .filter(field=field, provider_boundary_id=provider_boundary_id)
        .exclude(status__in=[Boundary.Status.OUTDATED_ON_PROVIDER, Boundary.Status.DELETED_ON_PROVIDER])
        .order_by("-created_at")
        .first()
    )
    new: Boundary | None = None
    if deleted:
        if current is None:
            return None
        current.status = Boundary.Status.DELETED_ON_PROVIDER
        current.save(update_fields=["status"])
        # The field no longer has that boundary, nor the provider's id of it (`providerBoundaryId` named a boundary
        # the provider had deleted).
        changed = []
        if field.boundary_id == current.pk:
            field.boundary = None
            changed.append("boundary")
        if field.provider_boundary_id == provider_boundary_id:
            field.provider_boundary_id = None
            changed.append("provider_boundary_id")
        if changed:
            field.save(update_fields=[*changed, "updated_at"])
    else:
        old_geometry = from_geos(current.geometry) if current is not None else None
        status = provider_status or (current.provider_status if current else None) or Boundary.ProviderStatus.ACTIVE
        if geometry is None:
            if current is None:
                raise ValueError("a geometry is needed for a provider boundary the service does not know yet")
            if status == current.provider_status:
                return None
            geometry, area_ha = old_geometry, current.area_ha
            current.status = Boundary.Status.INACTIVE
        else:
            if current is not None and geometry.equals(old_geometry) and status == current.provider_status:
                return None
            area_ha = None
            if current is not None:
                current.status = Boundary.Status.OUTDATED_ON_PROVIDER
        if current is not None:
            current.save(update_fields=["status"])
        new = boundary_add(
            field=field,
            geometry=geometry,
            status=Boundary.Status.ACTIVE if status == Boundary.ProviderStatus.ACTIVE else Boundary.Status.INACTIVE,
            provider_status=status,
            provider_boundary_id=provider_boundary_id,
            area_ha=area_ha,
        )
        field.provider_boundary_id = provider_boundary_id
        field.save(update_fields=["provider_boundary_id", "updated_at"])
    payload = {"fieldId": field.public_id, "boundaryId": str((new or current).pk)}
    event_emit(type=EventType.FIELD_BOUNDARY_UPDATED, core_user=field.core_user, payload=payload)
    if new is not None and new.status == Boundary.Status.ACTIVE:
        after_boundary_change(field)
    elif field.merged_field_id:
        merged_refresh(merged=field.merged_field)
    return new


# --- files attached to fields (called by the conversion app) --------------------------------------


@transaction.atomic
def field_files_attach(*, fields: Iterable[Field], file_id: str) -> None:
    """Record that the file `file_id` covers `fields`, and no other field (idempotent): a file converted again (an
    operation's automerged file at each build) leaves the fields it no longer covers, as it takes the ones it now
    covers. A field deleted since it was found is left out: its row is locked against deletion first (in id
    order, with the fields the file leaves), and a field already gone is not linked (a link to it would be a
    foreign-key violation that fails the file's processing). A source's merged field is taken with it (the spec:
    operations are found by the merged field and by each field merged in it), locked after the fields, as every
    change locks them. A field whose `files` change has changed: its `updatedTime` moves."""
    linked = FieldFile.objects.filter(file_id=str(file_id))
    found = {f.pk for f in fields}
    before = set(linked.values_list("field_id", flat=True))
    present = Field.objects.select_for_update(no_key=True).filter(pk__in=found | before).order_by("pk")
    kept = [pk for pk in present.values_list("pk", flat=True) if pk in found]
    merged = set(Field.objects.filter(pk__in=kept, merged_field__isnull=False).values_list("merged_field", flat=True))
    if merged := merged.difference(kept):
        locked = Field.objects.select_for_update(no_key=True).filter(pk__in=merged).order_by("pk")
        kept += locked.values_list("pk", flat=True)
    linked.exclude(field_id__in=kept).delete()
    FieldFile.objects.bulk_create([FieldFile(field_id=pk, file_id=str(file_id)) for pk in kept], ignore_conflicts=True)
    _files_changed(before.symmetric_difference(kept))


def _files_changed(field_ids) -> None:
    """The fields whose `files` changed have changed (as a product or variety a file joins)."""
    if field_ids:
        Field.objects.filter(pk__in=list(field_ids)).update(updated_at=timezone.now())
