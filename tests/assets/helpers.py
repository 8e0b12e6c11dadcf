"""Builders of asset rows for the API tests (the pooling services are tested on their own)."""

import threading
import uuid
from datetime import UTC, datetime

from django.db import connection

from assets.models import Implement, Machine, MachineFile, Operator, OriginType
from assets.services import name_key, serial_key

BASE = "/services/beta/api/users"


def ts(text: str) -> datetime:
    """A UTC datetime from `YYYY-MM-DDTHH:MM:SS[.fff]`."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def machine_make(core_user, **values) -> Machine:
    values.setdefault("origin_type", OriginType.PROVIDER_POOLED)
    values.setdefault("name", "Machine")
    machine = Machine(core_user=core_user, **values)
    machine.serial_key = serial_key(machine.serial_number)
    machine.vin_key = serial_key(machine.vin)
    machine.name_key = name_key(machine.make, machine.model, machine.name)
    machine.save()
    return machine


def machine_file_make(machine, **values) -> MachineFile:
    values.setdefault("core_file_id", uuid.uuid4())
    return MachineFile.objects.create(machine=machine, core_user=machine.core_user, **values)


def implement_make(core_user, **values) -> Implement:
    values.setdefault("origin_type", OriginType.PROVIDER_POOLED)
    return Implement.objects.create(core_user=core_user, **values)


def operator_make(core_user, **values) -> Operator:
    values.setdefault("origin_type", OriginType.PROVIDER_POOLED)
    return Operator.objects.create(core_user=core_user, **values)


def run_in_threads(count: int, work) -> list:
    """Run `work(i)` in `count` threads released together; each thread has its own connection."""
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list = []

    def target(i):
        try:
            barrier.wait()
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    return results
