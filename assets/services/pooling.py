"""Pooling: the services the conversion pipeline calls for every machine, implement and operator it finds in a
file.

Pooling is find-or-create by identity (serial number, then VIN, then name/make/model). It never
makes duplicates: the calls of one core user are serialised on a lock of the core user's row, and
partial unique constraints on the normalised keys back that up in the database (a lost race is
an IntegrityError that is retried as a lookup).
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_lock
from platform_site.api.errors import DomainError
from platform_site.db import rows_kept
from webhooks.models import EventType
from webhooks.services import event_emit

from ..models import Implement, ImplementFile, Machine, MachineFile, Operator, OperatorFile, OriginType
from .keys import OPERATOR_NAME_KEY_LENGTH, machine_keys_set, name_key, serial_key, text_clean, vin_key

M = TypeVar("M", bound=Model)


class AssetIdentityMissing(DomainError):
    error_key = "assetIdentityMissing"


def _columns_fit(model: type[Model], values: dict) -> dict:
    """`values` with each text cut to its column of `model`: names and numbers read from a file may be longer
    than the API allows (the file is kept as it is; the asset gets the start of the text)."""
    return {
        name: value[: model._meta.get_field(name).max_length] if isinstance(value, str) else value
        for name, value in values.items()
    }


@dataclass(frozen=True)
class MachineIdentity:
    """What a machine file says about the machine; serial number or VIN identify it best."""

    serial_number: str | None = None
    vin: str | None = None
    name: str | None = None
    make: str | None = None
    model: str | None = None
    category: str | None = None
    model_year: int | None = None


def _find_or_create(find: Callable[[], M | None], create: Callable[[], M]) -> tuple[M, bool]:
    """`find()`, else `create()` in a savepoint; a unique-constraint race lost to another transaction
    is answered by finding the winner's row."""
    found = find()
    if found is not None:
        return found, False
    try:
        with transaction.atomic():
            return create(), True
    except IntegrityError:
        found = find()
        if found is None:
            raise
        return found, False


def _find_machine(core_user: CoreUser, serial: str, vin: str, key: str) -> Machine | None:
    """The machine a file names, kept from deletion until the transaction ends (a user-created machine deleted
    while a file was pooled into it failed the file at commit); one deleted meanwhile is not found."""
    while (found := _find_machine_once(core_user, serial, vin, key)) is not None:
        if rows_kept(Machine, [found.pk]):
            return found
    return None


def _find_machine_once(core_user: CoreUser, serial: str, vin: str, key: str) -> Machine | None:
    machines = Machine.objects.filter(core_user=core_user).order_by("created_time", "id")
    if serial:
        found = machines.filter(serial_key=serial).first()
        if found:
            return found
    if vin:
        found = machines.filter(vin_key=vin).first()
        if found:
            return found
    if not serial and not vin and key:
        return machines.filter(name_key=key, serial_key="", vin_key="").first()
    return None


def _fill_blanks(obj: Model, values: dict) -> bool:
    """Set attributes that are still empty; return whether anything changed."""
    changed = False
    for attribute, value in values.items():
        if value not in (None, "") and getattr(obj, attribute) in (None, ""):
            setattr(obj, attribute, value)
            changed = True
    return changed


@transaction.atomic
def machine_pool_from_file(
    *,
    core_user: CoreUser,
    identity: MachineIdentity,
    core_file_id: uuid.UUID | str,
    provider: str | None = None,
    start_time: datetime | None = None,
    end_time: datetime | None = None,
    distance_value: float | None = None,
    distance_unit: str = "",
    fuel_consumption_value: float | None = None,
    fuel_consumption_unit: str = "",
) -> tuple[Machine, MachineFile]:
    """Find the core user's machine that a converted file names (same serial number, else same VIN,
    else, with neither, same name/make/model) or create it as FILE_POOLED, and record the machine
    file (time span, distance, fuel). Calling it again for the same file updates the record.

    A new machine emits machineCreated; details the file adds to a pooled machine (a VIN it lacked)
    emit machineUpdated. Machines of other origins are matched but never changed."""
    values = {
        "name": (identity.name or "").strip(),
        "serial_number": text_clean(identity.serial_number),
        "vin": text_clean(identity.vin),
        "model": text_clean(identity.model),
        "make": text_clean(identity.make),
        "category": text_clean(identity.category),
        "model_year": identity.model_year,
    }
    values = _columns_fit(Machine, values)
    serial, vin = serial_key(values["serial_number"]), vin_key(values["vin"])
    key = name_key(values["make"], values["model"], values["name"])
    # A make or model alone names no machine: every "John Deere" of the user would become one.
    if not (serial or vin or name_key(values["name"])):
        raise AssetIdentityMissing("A machine needs a serial number, a VIN or a name to be pooled.")
    core_file_id = uuid.UUID(str(core_file_id))
    core_user_lock(core_user.pk)  # one pooling at a time per core user

    def create() -> Machine:
        machine = Machine(
            core_user=core_user,
            provider=provider,
            origin_type=OriginType.FILE_POOLED,
            **{**values, "name": values["name"] or values["serial_number"] or values["vin"] or ""},
        )
        machine_keys_set(machine)
        machine.save()
        return machine

    machine, created = _find_or_create(lambda: _find_machine(core_user, serial, vin, key), create)
    payload = {"machineId": str(machine.id)}
    if created:
        event_emit(type=EventType.MACHINE_CREATED, core_user=core_user, payload=payload)
    elif machine.origin_type == OriginType.FILE_POOLED and _machine_enrich(machine, values):
        event_emit(type=EventType.MACHINE_UPDATED, core_user=core_user, payload=payload)

    machine_file, _ = MachineFile.objects.update_or_create(
        machine=machine,
        core_file_id=core_file_id,
        defaults={
            "core_user": core_user,
            "origin_type": OriginType.FILE_POOLED,
            "start_time": start_time,
            "end_time": end_time,
            "distance_value": distance_value,
            "distance_unit": distance_unit or "",
            "fuel_consumption_value": fuel_consumption_value,
            "fuel_consumption_unit": fuel_consumption_unit or "",
        },
    )
    return machine, machine_file


def _machine_enrich(machine: Machine, values: dict) -> bool:
    """Fill a pooled machine's blanks from a file. A serial number or VIN that another machine of
    the user already carries is not copied (it would make the two machines one identity)."""
    values = dict(values)
    others = Machine.objects.filter(core_user=machine.core_user).exclude(pk=machine.pk)
    if machine.serial_key == "" and values["serial_number"]:
        if others.filter(serial_key=serial_key(values["serial_number"])).exists():
            values["serial_number"] = None
    if machine.vin_key == "" and values["vin"]:
        if others.filter(vin_key=vin_key(values["vin"])).exists():
            values["vin"] = None
    if not _fill_blanks(machine, values):
        return False
    # The name key stays the one the machine was found by: recomputed from blanks filled ("Deere 8R" with make
    # "Deere" becomes "deere deere 8r"), the next file of the same identity made a second machine, or the save
    # broke the unique name key of another and failed the file.
    machine.serial_key = serial_key(machine.serial_number)
    machine.vin_key = vin_key(machine.vin)
    machine.save()
    return True


@transaction.atomic
def implement_pool_from_file(
    *,
    core_user: CoreUser,
    core_file_id: uuid.UUID | str,
    serial_number: str | None = None,
    name: str | None = None,
    make: str | None = None,
    model: str | None = None,
    category: str | None = None,
    provider: str | None = None,
) -> Implement:
    """Find the core user's implement (same serial number, else same name/make/model) or create it
    as FILE_POOLED, and record that the file saw it. Emits implementCreated, or implementUpdated
    when the file fills details a pooled implement lacked."""
    values = {
        "name": (name or "").strip(),
        "serial_number": text_clean(serial_number),
        "make": text_clean(make),
        "model": text_clean(model),
        "category": text_clean(category),
    }
    values = _columns_fit(Implement, values)
    serial, key = serial_key(values["serial_number"]), name_key(values["make"], values["model"], values["name"])
    if not (serial or name_key(values["name"])):
        raise AssetIdentityMissing("An implement needs a serial number or a name to be pooled.")
    core_file_id = uuid.UUID(str(core_file_id))
    core_user_lock(core_user.pk)  # one pooling at a time per core user
    implements = Implement.objects.filter(core_user=core_user).order_by("created_time", "id")

    def find() -> Implement | None:
        if serial:
            return implements.filter(serial_key=serial).first()
        return implements.filter(name_key=key, serial_key="").first()

    def create() -> Implement:
        return Implement.objects.create(
            core_user=core_user,
            provider=provider,
            origin_type=OriginType.FILE_POOLED,
            serial_key=serial,
            name_key=key,
            **{**values, "name": values["name"] or values["serial_number"] or ""},
        )

    implement, created = _find_or_create(find, create)
    payload = {"implementId": str(implement.id)}
    if created:
        event_emit(type=EventType.IMPLEMENT_CREATED, core_user=core_user, payload=payload)
    elif implement.origin_type == OriginType.FILE_POOLED and _fill_blanks(implement, values):
        implement.updated_time = timezone.now()
        implement.save()
        event_emit(type=EventType.IMPLEMENT_UPDATED, core_user=core_user, payload=payload)
    ImplementFile.objects.get_or_create(implement=implement, core_file_id=core_file_id)
    return implement


@transaction.atomic
def operator_pool_from_file(
    *,
    core_user: CoreUser,
    core_file_id: uuid.UUID | str,
    name: str,
    license: str | None = None,
    provider: str | None = None,
) -> Operator:
    """Find the core user's operator of that name (case, accents, punctuation and spacing aside) or
    create it as FILE_POOLED and ACTIVE, and record that the file saw it."""
    fitted = _columns_fit(Operator, {"name": name.strip(), "license": text_clean(license)})
    name, license = fitted["name"], fitted["license"]
    key = name_key(name, length=OPERATOR_NAME_KEY_LENGTH)
    if not key:
        raise AssetIdentityMissing("An operator needs a name to be pooled.")
    core_file_id = uuid.UUID(str(core_file_id))
    core_user_lock(core_user.pk)  # one pooling at a time per core user
    operators = Operator.objects.filter(core_user=core_user).order_by("created_time", "id")

    def create() -> Operator:
        return Operator.objects.create(
            core_user=core_user,
            name=name.strip(),
            name_key=key,
            license=text_clean(license),
            provider=provider,
            origin_type=OriginType.FILE_POOLED,
        )

    operator, _ = _find_or_create(lambda: operators.filter(name_key=key).first(), create)
    if operator.origin_type == OriginType.FILE_POOLED and _fill_blanks(operator, {"license": text_clean(license)}):
        operator.updated_time = timezone.now()
        operator.save()
    OperatorFile.objects.get_or_create(operator=operator, core_file_id=core_file_id)
    return operator
