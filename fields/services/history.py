"""What every field write shares: the locks it takes, in one order (core user, field, merged field), and the
immutable boundary history it adds to."""

from shapely.geometry import MultiPolygon

from configs.services import config_resolve
from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_keep, core_user_lock
from platform_site.api.errors import NOT_FOUND, NotFoundError
from platform_site.db import row_locked

from ..geodesy import geodesic_area_m2
from ..geometry import to_geos
from ..models import Boundary, Field


def user_lock(core_user_id, *, merge_may_follow: bool) -> bool:
    """The first lock of a field change, its core user's (a field's deletion takes it first too); whether the user
    is still there. Locked (`core_user_lock`) when the change may end in an auto-merge (a new boundary while
    `fieldsAutoMerge` is on), as the merge locks it so, then the partner fields. Otherwise it is only kept from
    deletion (`core_user_keep`). By id: the user may have been deleted since the field was read."""
    if merge_may_follow:
        core_user = CoreUser.objects.select_related("owner").filter(pk=core_user_id).first()
        if core_user is not None and config_resolve(core_user=core_user).get("fieldsAutoMerge"):
            return core_user_lock(core_user_id)
    return core_user_keep(core_user_id, missing_ok=True)


def merge_lock_held(core_user_id) -> bool:
    """The core user's lock a merge needs (`core_user_lock`), taken when the change began (`user_lock`: auto-merge
    was on then) or free to take now. Switched on during the change, while another change holding that lock waited
    for this one, the merge would have waited for that change: a deadlock. Then no merge: the configuration of when
    the change began decides."""
    return row_locked(CoreUser, core_user_id, no_key=True, skip_locked=True)


def field_lock(field: Field, *, missing_ok: bool = False, merge_may_follow: bool = False) -> bool:
    """Lock the field's row until the transaction ends, serialising the changes of one field: without it two
    concurrent changes each deactivate the boundary they saw and both leave theirs ACTIVE (PostgreSQL's READ
    COMMITTED does not show one the other's new row). A field deleted meanwhile is 404 `notFound`, or False
    with `missing_ok`.

    Locks are taken in one order: core user (`user_lock`), field, merged field. The core user even when no merge
    follows: a change that writes the field's row twice has it checked against the user at commit, which waited
    for a deletion that was waiting for the field, a deadlock. `FOR NO KEY UPDATE`: rows that merely reference the
    field (a file link, an operation's field) can still be inserted meanwhile."""
    if user_lock(field.core_user_id, merge_may_follow=merge_may_follow) and row_locked(Field, field.pk, no_key=True):
        return True
    if missing_ok:
        return False
    raise NotFoundError(NOT_FOUND)


def boundary_add(
    *,
    field: Field,
    geometry: MultiPolygon,
    status: str = Boundary.Status.ACTIVE,
    provider_status: str | None = None,
    provider_boundary_id: str | None = None,
    area_ha: float | None = None,
    first: bool = False,
) -> Boundary:
    """A new immutable boundary that becomes the field's current one; the previous current one, if still
    ACTIVE, becomes INACTIVE (kept as history). The caller holds the field's lock (`field_lock`) or has just
    created the field: then its `first` boundary is part of its creation, and its updatedTime stays its
    createdTime."""
    Boundary.objects.filter(field=field, status=Boundary.Status.ACTIVE).update(status=Boundary.Status.INACTIVE)
    boundary = Boundary.objects.create(
        field=field,
        geometry=to_geos(geometry),
        area_ha=area_ha if area_ha is not None else geodesic_area_m2(geometry) / 10_000.0,
        status=status,
        provider_status=provider_status,
        provider_boundary_id=provider_boundary_id,
    )
    field.boundary = boundary
    field.save(update_fields=["boundary"] if first else ["boundary", "updated_at"])
    return boundary
