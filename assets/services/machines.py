"""User-created machines (`ServiceOwn`): created, changed and deleted through the API, with their events."""

import uuid

from django.db import transaction

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_keep, core_user_lock
from platform_site.api.errors import NOT_FOUND, NotFoundError, ProviderResourceReadOnly
from platform_site.db import row_locked
from webhooks.models import EventType
from webhooks.services import event_emit

from ..models import Machine, OriginType, Provider
from ..signals import machine_deleted
from .keys import machine_keys_set, text_clean

MACHINE_ATTRIBUTES = ("name", "serial_number", "vin", "model", "make", "category", "model_year")


@transaction.atomic
def machine_create(
    *,
    core_user: CoreUser,
    name: str = "",
    serial_number: str | None = None,
    vin: str | None = None,
    model: str | None = None,
    make: str | None = None,
    category: str | None = None,
    model_year: int | None = None,
) -> Machine:
    """A USER_CREATED machine of `core_user`; the service is its provider (`ServiceOwn`) and its
    own id is the provider machine id. Emits machineCreated."""
    core_user_keep(core_user.pk)
    machine_id = uuid.uuid4()
    machine = Machine(
        id=machine_id,
        core_user=core_user,
        name=(name or "").strip(),
        provider=Provider.SERVICE_OWN,
        provider_machine_id=str(machine_id),
        origin_type=OriginType.USER_CREATED,
        serial_number=text_clean(serial_number),
        vin=text_clean(vin),
        model=text_clean(model),
        make=text_clean(make),
        category=text_clean(category),
        model_year=model_year,
    )
    machine_keys_set(machine)
    machine.save()
    event_emit(type=EventType.MACHINE_CREATED, core_user=core_user, payload={"machineId": str(machine.id)})
    return machine


def machine_check_writable(machine: Machine) -> None:
    """403 `providerResourceReadOnly` for a machine the API did not make (pooled from files or a provider)."""
    if machine.origin_type != OriginType.USER_CREATED:
        raise ProviderResourceReadOnly(
            f"Machine {machine.id} is {machine.origin_type}: only USER_CREATED machines can be changed or deleted."
        )


@transaction.atomic
def machine_update(*, machine: Machine, **changes) -> Machine:
    """Change the given attributes of a USER_CREATED machine (403 `providerResourceReadOnly`
    otherwise). Emits machineUpdated, when one of them changed."""
    machine_check_writable(machine)
    unknown = set(changes) - set(MACHINE_ATTRIBUTES)
    if unknown:
        raise ValueError(f"not machine attributes: {sorted(unknown)}")
    # Changed as it is now, locked: from the copy read before, a concurrent change was lost (every column was saved
    # back) and a machine deleted meanwhile was inserted again.
    machine = Machine.objects.select_for_update(of=("self",)).select_related("core_user").filter(pk=machine.pk).first()
    if machine is None:
        raise NotFoundError(NOT_FOUND)
    changed = False
    for attribute, value in changes.items():
        if attribute == "name":
            value = (value or "").strip()
        elif attribute != "model_year":
            value = text_clean(value)
        if getattr(machine, attribute) != value:
            setattr(machine, attribute, value)
            changed = True
    if not changed:
        return machine  # what it already was changes nothing: no updatedTime, no event
    machine_keys_set(machine)
    machine.save()
    event_emit(type=EventType.MACHINE_UPDATED, core_user=machine.core_user, payload={"machineId": str(machine.id)})
    return machine


@transaction.atomic
def machine_delete(*, machine: Machine) -> bool:
    """Delete a USER_CREATED machine and its machine files. Emits machineDeleted. False: a concurrent deletion
    deleted it first (and announced it)."""
    machine_check_writable(machine)
    machine_id = str(machine.id)
    # The core user first, as the user's derived writes lock it (`core_user_lock`) before the files they hold: the
    # deletion then updates the files that named the machine (`machine_deleted`) without taking their rows in the
    # opposite order to a build pooling into it. By id: the user may have been deleted since the machine was read.
    core_user_lock(machine.core_user_id)
    if not row_locked(Machine, machine.pk):
        return False
    core_user = CoreUser.objects.get(pk=machine.core_user_id)  # (locked: still there)
    machine.delete()
    machine_deleted.send(sender=Machine, machine_id=machine_id, core_user=core_user)
    event_emit(type=EventType.MACHINE_DELETED, core_user=core_user, payload={"machineId": machine_id})
    return True


def machines_existing(ids) -> set[str]:
    """Those of `ids` (machine ids as text) whose machine still exists: a user-created machine a file was pooled
    into may have been deleted since. No query for no ids."""
    ids = set(ids)
    if not ids:
        return set()
    return {str(pk) for pk in Machine.objects.filter(pk__in=ids).values_list("pk", flat=True)}
