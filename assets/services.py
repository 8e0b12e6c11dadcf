"""Business rules of the assets: user-created machines and their events, and the pooling services
that the conversion pipeline calls for every machine, implement and operator it finds in a file.

Pooling is find-or-create by identity (serial number, then VIN, then name/make/model). It never
makes duplicates: the calls of one core user are serialised on a lock of the core user's row, and
partial unique constraints on the normalised keys back that up in the database (a lost race is
an IntegrityError that is retried as a lookup).
"""

import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_keep, core_user_lock
from platform_site.api.errors import NOT_FOUND, DomainError, NotFoundError, ProviderResourceReadOnly
from platform_site.db import row_locked, rows_kept
from platform_site.text import fit
from webhooks.models import EventType
from webhooks.services import event_emit

from .models import Implement, ImplementFile, Machine, MachineFile, Operator, OperatorFile, OriginType, Provider

M = TypeVar("M", bound=Model)

MACHINE_ATTRIBUTES = ("name", "serial_number", "vin", "model", "make", "category", "model_year")


class AssetIdentityMissing(DomainError):
    error_key = "assetIdentityMissing"


NAME_KEY_LENGTH = 800  # the columns of the keys (Operator.name_key: OPERATOR_NAME_KEY_LENGTH)
OPERATOR_NAME_KEY_LENGTH = 255
SERIAL_KEY_LENGTH = 255
VIN_KEY_LENGTH = 64


def name_key(*parts: str | None, length: int = NAME_KEY_LENGTH) -> str:
    """Case-, accent-, punctuation- and whitespace-insensitive key of a name ("John Deere  8R!" and
    "john deere 8r" are one), at most `length` characters (normalising can lengthen a text that fits its own
    column: 'ß' upper-cases to 'SS', one Arabic ligature decomposes into 18 letters)."""
    text = " ".join(p for p in parts if p)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return fit(" ".join(re.sub(r"[\W_]+", " ", text).split()), length)


def serial_key(value: str | None, length: int = SERIAL_KEY_LENGTH) -> str:
    """Serial numbers and VINs compare upper-case without spaces, dashes or dots (at most `length` characters)."""
    return fit(re.sub(r"[\s\-._/]+", "", value or "").upper(), length)


def vin_key(value: str | None) -> str:
    return serial_key(value, VIN_KEY_LENGTH)


def _columns_fit(model: type[Model], values: dict) -> dict:
    """`values` with each text cut to its column of `model`: names and numbers read from a file may be longer
    than the API allows (the file is kept as it is; the asset gets the start of the text)."""
    return {
        name: value[: model._meta.get_field(name).max_length] if isinstance(value, str) else value
        for name, value in values.items()
    }


def _clean(value: str | None) -> str | None:
    """Strip text; an empty string is stored as null (not known)."""
    if value is None:
        return None
    value = value.strip()
    return value or None


def _machine_keys(machine: Machine) -> None:
    machine.serial_key = serial_key(machine.serial_number)
    machine.vin_key = vin_key(machine.vin)
    machine.name_key = name_key(machine.make, machine.model, machine.name)


# -- user-created machines -------------------------------------------------------------------------------


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
        serial_number=_clean(serial_number),
        vin=_clean(vin),
        model=_clean(model),
        make=_clean(make),
        category=_clean(category),
        model_year=model_year,
    )
    _machine_keys(machine)
    machine.save()
    event_emit(type=EventType.MACHINE_CREATED, core_user=core_user, payload={"machineId": str(machine.id)})
    return machine


def _ensure_user_created(machine: Machine) -> None:
    if machine.origin_type != OriginType.USER_CREATED:
        raise ProviderResourceReadOnly(
            f"Machine {machine.id} is {machine.origin_type}: only USER_CREATED machines can be changed or deleted."
        )


@transaction.atomic
def machine_update(*, machine: Machine, **changes) -> Machine:
    """Change the given attributes of a USER_CREATED machine (403 `providerResourceReadOnly`
    otherwise). Emits machineUpdated."""
    _ensure_user_created(machine)
    unknown = set(changes) - set(MACHINE_ATTRIBUTES)
    if unknown:
        raise ValueError(f"not machine attributes: {sorted(unknown)}")
    # Changed as it is now, locked: from the copy read before, a concurrent change was lost (every column was saved
    # back) and a machine deleted meanwhile was inserted again.
    machine = Machine.objects.select_for_update(of=("self",)).select_related("core_user").filter(pk=machine.pk).first()
    if machine is None:
        raise NotFoundError(NOT_FOUND)
    for attribute, value in changes.items():
        if attribute == "name":
            value = (value or "").strip()
        elif attribute != "model_year":
            value = _clean(value)
        setattr(machine, attribute, value)
    _machine_keys(machine)
    machine.save()
    event_emit(type=EventType.MACHINE_UPDATED, core_user=machine.core_user, payload={"machineId": str(machine.id)})
    return machine


@transaction.atomic
def machine_delete(*, machine: Machine) -> None:
    """Delete a USER_CREATED machine and its machine files. Emits machineDeleted."""
    _ensure_user_created(machine)
    machine_id, core_user = str(machine.id), machine.core_user
    if not row_locked(Machine, machine.pk):
        return  # deleted meanwhile, and announced by that deletion
    machine.delete()
    event_emit(type=EventType.MACHINE_DELETED, core_user=core_user, payload={"machineId": machine_id})


def machines_existing(ids) -> set[str]:
    """Those of `ids` (machine ids as text) whose machine still exists: a user-created machine a file was pooled
    into may have been deleted since. No query for no ids."""
    ids = set(ids)
    if not ids:
        return set()
    return {str(pk) for pk in Machine.objects.filter(pk__in=ids).values_list("pk", flat=True)}


# -- pooling from converted files ------------------------------------------------------------------------


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
        "serial_number": _clean(identity.serial_number),
        "vin": _clean(identity.vin),
        "model": _clean(identity.model),
        "make": _clean(identity.make),
        "category": _clean(identity.category),
        "model_year": identity.model_year,
    }
    values = _columns_fit(Machine, values)
    serial, vin = serial_key(values["serial_number"]), vin_key(values["vin"])
    key = name_key(values["make"], values["model"], values["name"])
    # A make or model alone names no machine: every "John Deere" of the user would become one.
    if not (serial or vin or name_key(values["name"])):
        raise AssetIdentityMissing("A machine needs a serial number, a VIN or a name to be pooled.")
    core_file_id = uuid.UUID(str(core_file_id))
    core_user_lock(core_user.pk, no_key=True)  # one pooling at a time per core user

    def create() -> Machine:
        machine = Machine(
            core_user=core_user,
            provider=provider,
            origin_type=OriginType.FILE_POOLED,
            **{**values, "name": values["name"] or values["serial_number"] or values["vin"] or ""},
        )
        _machine_keys(machine)
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
        "serial_number": _clean(serial_number),
        "make": _clean(make),
        "model": _clean(model),
        "category": _clean(category),
    }
    values = _columns_fit(Implement, values)
    serial, key = serial_key(values["serial_number"]), name_key(values["make"], values["model"], values["name"])
    if not (serial or name_key(values["name"])):
        raise AssetIdentityMissing("An implement needs a serial number or a name to be pooled.")
    core_file_id = uuid.UUID(str(core_file_id))
    core_user_lock(core_user.pk, no_key=True)  # one pooling at a time per core user
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
    fitted = _columns_fit(Operator, {"name": name.strip(), "license": _clean(license)})
    name, license = fitted["name"], fitted["license"]
    key = name_key(name, length=OPERATOR_NAME_KEY_LENGTH)
    if not key:
        raise AssetIdentityMissing("An operator needs a name to be pooled.")
    core_file_id = uuid.UUID(str(core_file_id))
    core_user_lock(core_user.pk, no_key=True)  # one pooling at a time per core user
    operators = Operator.objects.filter(core_user=core_user).order_by("created_time", "id")

    def create() -> Operator:
        return Operator.objects.create(
            core_user=core_user,
            name=name.strip(),
            name_key=key,
            license=_clean(license),
            provider=provider,
            origin_type=OriginType.FILE_POOLED,
        )

    operator, _ = _find_or_create(lambda: operators.filter(name_key=key).first(), create)
    if operator.origin_type == OriginType.FILE_POOLED and _fill_blanks(operator, {"license": _clean(license)}):
        operator.updated_time = timezone.now()
        operator.save()
    OperatorFile.objects.get_or_create(operator=operator, core_file_id=core_file_id)
    return operator
