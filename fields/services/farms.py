"""Farms and growers of a core user: plain records with PUT semantics; a grower of another core user is a 400."""

from django.db import transaction

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_keep
from platform_site.api.errors import DomainError

from ..models import Farm, Grower


def _check_grower(core_user_id, grower: Grower | None) -> None:
    if grower is not None and grower.core_user_id != core_user_id:
        raise DomainError(
            "The grower does not exist for this user.",
            field_errors=[{"field": "growerId", "message": "Unknown grower."}],
        )


@transaction.atomic
def farm_create(*, core_user: CoreUser, name: str | None = None, grower: Grower | None = None) -> Farm:
    """A farm of `core_user`, optionally of one of its growers."""
    _check_grower(core_user.pk, grower)
    core_user_keep(core_user.pk)
    return Farm.objects.create(core_user=core_user, name=name, grower=grower)


@transaction.atomic
def farm_replace(*, farm: Farm, name: str | None = None, grower: Grower | None = None) -> Farm:
    """PUT: the farm's name and grower become exactly what is given (absent means none). A farm goes only with its
    core user: kept, it cannot go meanwhile (and gone, the PUT is a 404, not a 500 for an update of no row, nor
    for the user read after its deletion)."""
    core_user_keep(farm.core_user_id)
    _check_grower(farm.core_user_id, grower)
    farm.name, farm.grower = name, grower
    farm.save(update_fields=["name", "grower", "updated_at"])
    return farm


@transaction.atomic
def grower_create(*, core_user: CoreUser, name: str | None = None) -> Grower:
    """A grower of `core_user`."""
    core_user_keep(core_user.pk)
    return Grower.objects.create(core_user=core_user, name=name)


@transaction.atomic
def grower_replace(*, grower: Grower, name: str | None = None) -> Grower:
    """PUT: the grower's name becomes exactly what is given (absent means none); kept as a farm's PUT is."""
    core_user_keep(grower.core_user_id)
    grower.name = name
    grower.save(update_fields=["name", "updated_at"])
    return grower
