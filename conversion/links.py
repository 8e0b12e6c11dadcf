"""What a converted file tells the lower apps: the fields it covers, the machines, implements and operators it
names, the products and varieties it used. Each call goes through the owning app's service (ARCHITECTURE.md)."""

from __future__ import annotations

import logging

from django.db import connection
from django.db.models import UUIDField, Value
from django.db.models.functions import Cast, Replace
from django.utils import timezone
from shapely.geometry import MultiPolygon, shape

from assets import services as assets
from catalogs import services as catalogs
from configs.services import config_resolve
from fields import services as fields
from fields.models import FieldFile

from .models import File
from .readers.base import PointTable
from .readers.units import convert

log = logging.getLogger(__name__)


def coverage_geometry(summary: dict | None) -> MultiPolygon | None:
    geometry = (summary or {}).get("geometry")
    if not geometry or not geometry.get("coordinates"):
        return None
    geom = shape(geometry)
    if geom.is_empty:
        return None
    return geom if isinstance(geom, MultiPolygon) else MultiPolygon([geom])


def attach_fields(file: File, summary: dict | None) -> list:
    """Attach the file to the core user's fields its coverage overlaps by `fieldsAttachIntersection` percent
    (of the coverage or of the field). Returns the fields with their overlaps."""
    geometry = coverage_geometry(summary)
    if geometry is None:
        return []
    threshold = float(config_resolve(core_user=file.core_user)["fieldsAttachIntersection"])
    found = fields.fields_overlapping(core_users=[file.core_user], geometry=geometry, threshold=threshold)
    fields.field_files_attach(fields=[f for f, _ in found], file_id=str(file.pk))
    return found


def file_field_ids(file_ids: list) -> dict[str, list[str]]:
    """{file id: [field ids]} for the given files (read from the fields app's link table): the fields' API ids."""
    out: dict[str, list[str]] = {str(i): [] for i in file_ids}
    rows = (
        FieldFile.objects.filter(file_id__in=list(out))
        .order_by("field__public_id", "field_id")
        .values_list("file_id", "field__public_id")
    )
    for file_id, field_id in rows:
        out[file_id].append(str(field_id))
    return out


def file_machine_ids(files) -> dict[str, list[str]]:
    """{file id: [machine ids]}: the machines each file was pooled into (in the order it named them) that still
    exist; a user-created machine that collected a file may be deleted since. One query for all the files."""
    present = assets.machines_existing(m for f in files for m in f.machine_ids)
    return {str(f.pk): [m for m in f.machine_ids if m in present] for f in files}


def linked_file_ids(links=None):
    """The ids of the files of `links` (FieldFile rows; all of them by default), as a subquery to compare `File.pk`
    with. The link table keeps an id as text (canonical UUID form); PostgreSQL stores a UUID as uuid, SQLite as 32
    hex digits."""
    if connection.vendor == "postgresql":
        key = Cast("file_id", UUIDField())
    else:
        key = Replace("file_id", Value("-"), Value(""))
    return (FieldFile.objects.all() if links is None else links).annotate(key=key).values("key")


def field_file_ids(field):
    """The ids of the files attached to `field` (a subquery, see `linked_file_ids`)."""
    return linked_file_ids(FieldFile.objects.filter(field=field))


def batch_file_ids(batches) -> None:
    """Set `file_ids` (the batch serializer's `files`) on each of `batches`, in one query."""
    ids: dict = {batch.pk: [] for batch in batches}
    rows = File.objects.filter(batch__in=list(ids)).order_by("dataset__position", "part")
    for batch_id, file_id in rows.values_list("batch_id", "pk"):
        ids[batch_id].append(str(file_id))
    for batch in batches:
        batch.file_ids = ids[batch.pk]


def machine_file_totals(summary: dict | None) -> dict:
    """A machine file's `distance` (the file's totalDistance) and `fuelConsumption` (the fuel the file records it
    used), in the spec's units: feet and US gallons. Absent from the file, absent from the record."""
    props = (summary or {}).get("properties") or {}
    totals: dict = {}
    distance = props.get("totalDistance")
    if distance and distance.get("value") is not None:
        totals.update(distance_value=convert(distance["value"], distance["unit"], "ft"), distance_unit="ft")
    fuel = (props.get("recordedTotals") or {}).get("totalFuelConsumption")
    if fuel and fuel.get("value") is not None:
        totals.update(
            fuel_consumption_value=convert(fuel["value"], fuel["unit"], "gal"), fuel_consumption_unit="US gal"
        )
    return totals


def pool_assets(file: File, table: PointTable) -> list[str]:
    """Pool the machines and implements the file names (and its operators); returns the machine ids."""
    machine_ids: list[str] = []
    provider = file.provider
    for identity in table.machines:
        try:
            if identity.kind == "implement":
                assets.implement_pool_from_file(
                    core_user=file.core_user,
                    core_file_id=file.pk,
                    serial_number=identity.serial_number,
                    name=identity.name,
                    make=identity.make,
                    model=identity.model,
                    category=identity.category,
                    provider=provider,
                )
                continue
            machine, _ = assets.machine_pool_from_file(
                core_user=file.core_user,
                identity=assets.MachineIdentity(
                    serial_number=identity.serial_number,
                    vin=identity.vin,
                    name=identity.name,
                    make=identity.make,
                    model=identity.model,
                    category=identity.category,
                ),
                core_file_id=file.pk,
                provider=provider,
                start_time=file.start_time,
                end_time=file.end_time,
                **machine_file_totals(file.summary),
            )
        except assets.AssetIdentityMissing:
            log.info("file %s names a %s without identity; not pooled", file.pk, identity.kind)
            continue
        if str(machine.pk) not in machine_ids:
            machine_ids.append(str(machine.pk))
    for name in table.operators:
        try:
            assets.operator_pool_from_file(
                core_user=file.core_user,
                core_file_id=file.pk,
                name=name,
                license=table.operator_licenses.get(name),
                provider=provider,
            )
        except assets.AssetIdentityMissing:
            continue
    return machine_ids


def record_catalogs(file: File, table: PointTable) -> None:
    """Record the file's products and varieties in the core user's catalogs."""
    crop = table.crops[0] if len(table.crops) == 1 else None
    for name in table.products:
        try:
            catalogs.product_record(core_user=file.core_user, name=name, core_file_id=file.pk)
        except catalogs.CatalogNameEmpty:
            continue
    for name in table.varieties:
        try:
            catalogs.variety_record(core_user=file.core_user, name=name, crop=crop, core_file_id=file.pk)
        except catalogs.CatalogNameEmpty:
            continue


def on_field_files_relinked(sender, file_ids, **kwargs) -> None:
    """`fields.signals.field_files_relinked` receiver: files whose `fields` changed (a field they named was deleted,
    or taken by a merged field) changed, so their `updatedTime` moves (a client syncing with the time filters
    would keep the deleted field's id)."""
    File.objects.filter(pk__in=list(file_ids)).update(updated_time=timezone.now())


def on_machine_deleted(sender, machine_id: str, core_user, **kwargs) -> None:
    """`assets.signals.machine_deleted` receiver: the files pooled into the machine no longer name it (`machines`),
    so their `updatedTime` moves. A machine's id (a UUID) is found in the text of the files' id lists."""
    files = File.objects.filter(core_user=core_user, machine_ids__icontains=str(machine_id))
    files.update(updated_time=timezone.now())
