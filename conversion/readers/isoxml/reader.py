"""The ISOXML reader: tasks of the task data, read from their time logs into point tables.

One point table per task that has time logs. Which logged DLV feeds which standard property is decided by the
device description: values of the implement that does the work win over the tractor's, and among several
device elements logging the same DDI the one nearest the device root (the whole boom rather than one section); for
a rate, one that logs something other than 0 first.
A log with a condensed work state gets each point's working width from the sections that are on (`sections.py`).
"""

from __future__ import annotations

import logging
from collections import Counter
from xml.etree.ElementTree import Element

import numpy as np

from conversion.readers import ddi as ddis
from conversion.readers.base import (
    NO_POSITION,
    YIELD_IGNORED_COLUMN,
    Dataset,
    MachineIdentity,
    PointTable,
    Reader,
    UnreadableDataset,
    concat_tables,
    left_out_warning,
    register,
    usable_positions,
)
from platform_site.text import named_first

from . import ignore_times
from .parallel import AnyTimeLog, join_parallel
from .sections import section_working_width
from .task import log_timezone, task_clock_zones, task_crops_and_products, task_operators, task_recorded_totals
from .taskdata import DEVICE_CLASS_OPERATION, MACHINE_CLASSES, Device, TaskData, _clean, load_taskdata
from .tlg import TimeLog, TimeLogError, gps_tc_apart, read_time_log

log = logging.getLogger(__name__)


def _task_name(task: Element) -> str:
    return _clean(task.get("B")) or task.get("A", "task")


def _task_names(tasks: list[Element]) -> list[str]:
    """One name per task, unique within the data set, since each task becomes a file found by its name: the
    designator (else the id); a designator already taken gets the task id appended ("Plant crop (TSK2)"), and
    " (2)", " (3)"... after that if still taken. The first task keeps the plain name, so files converted before
    this rule keep theirs."""
    names: list[str] = []
    taken: set[str] = set()
    for task in tasks:
        name = _task_name(task)
        if name in taken:
            name = f"{name} ({task.get('A') or 'task'})"
            base, n = name, 2
            while name in taken:
                name, n = f"{base} ({n})", n + 1
        taken.add(name)
        names.append(name)
    return names


# Rates a channel or bin below the element that works may log in its stead.
APPLICATION_RATES = frozenset({"seedRate", "seedRateTarget", "appliedRate", "appliedRateTarget"})


@register
class IsoxmlReader(Reader):
    """ISO 11783-10 task data with binary time logs."""

    format = "ISOXML"

    def __init__(self, *, include_raw: bool = True):
        self.include_raw = include_raw
        self.skipped = []
        self.failed = []
        self.extra_files = []

    def read_tables(self, dataset: Dataset) -> list[PointTable]:
        """One table per task with logged points; UnreadableDataset when no task has any. A task that meets an
        unexpected error is logged and named in `failed`, and the other tasks are read."""
        td = load_taskdata(dataset.path)
        self.extra_files = td.files.moved  # filled as the tasks' logs are found
        tables: list[PointTable] = []
        problems: list[str] = []
        tasks = [el for el in td.elements if el.tag == "TSK"]
        for task, name in zip(tasks, _task_names(tasks), strict=True):
            try:
                table = self.read_task(td, task, name=name)
            except UnreadableDataset as exc:
                problems.append(str(exc))
                self.skipped.append((name, str(exc)))
                continue
            except Exception:
                log.exception("task %s of %s could not be read", name, dataset.path)
                self.failed.append(name)
                continue
            if table is not None:
                table.warnings[:0] = td.warnings
                tables.append(table)
        if tables or self.failed:
            return tables
        if problems:
            raise UnreadableDataset("; ".join(problems))
        reason = "no task has a time log (TLG): the data set holds only planning data such as tasks or grids"
        if not tasks:
            reason = "TASKDATA.XML holds no task (TSK)"
        if td.warnings:
            reason += " (" + "; ".join(td.warnings[:5]) + ")"
        raise UnreadableDataset(reason)

    def read_task(self, td: TaskData, task: Element, *, name: str | None = None) -> PointTable | None:
        """The points of one task, or None when it has no time log; UnreadableDataset when no log can be read or
        none holds a complete record. `name` names the table (default: the task's designator)."""
        listed = [t.get("A", "") for t in task.findall("TLG")]
        if not listed:
            return None
        task_name = name or _task_name(task)
        warnings: list[str] = []
        # A log listed again is read once (file names are case-insensitive): each copy joined the log to itself,
        # its columns again per copy (a 223 KB upload listing one log 300 times took 4.7 GB and wrote 836 MB).
        times, first = Counter(ref.upper() for ref in listed), {}
        for ref in listed:
            first.setdefault(ref.upper(), ref)
        tlg_refs = list(first.values())
        if len(tlg_refs) < len(listed):
            repeated = [ref for ref in tlg_refs if times[ref.upper()] > 1]
            warnings.append(f"time logs listed more than once in the task are read once: {named_first(repeated, 5)}")
        read: list[TimeLog] = []
        for ref in tlg_refs:
            xml_path, bin_path = td.find_file(f"{ref}.xml"), td.find_file(f"{ref}.bin")
            if xml_path is None or bin_path is None:
                missing, file_name = ("header XML", f"{ref}.xml") if xml_path is None else ("binary", f"{ref}.bin")
                warnings.append(f"{ref}: {missing} file missing{td.files.missing_note(file_name)}, log skipped")
                continue
            try:
                time_log = read_time_log(xml_path, bin_path)
            except TimeLogError as exc:
                warnings.append(f"{exc}; log skipped")
                continue
            note = _binary_note(time_log, bin_path.name)
            if note:
                warnings.append(note)
            if time_log.n_records:
                read.append(time_log)
        if not read:
            raise UnreadableDataset(f"task {task_name}: no readable time log ({'; '.join(warnings)})")
        logs = join_parallel(read)

        devices_used = self._devices_used(td, task, logs)
        implement = self._implement(devices_used)
        operation = self._operation_type(implement, logs)
        zones = task_clock_zones(task)
        parts = [
            self._log_table(td, log, implement, operation, log_timezone(zones, log.tc_time), task_name) for log in logs
        ]
        table = concat_tables(parts, name=task_name)
        table.warnings[:0] = warnings
        table.machines = _dedupe([d.identity() for d in devices_used])
        crops, varieties, products = task_crops_and_products(td, task)
        table.crops, table.varieties, table.products = crops, varieties, products
        workers = task_operators(td, task)
        table.operators = list(workers)
        table.operator_licenses = {name: license for name, license in workers.items() if license}
        table.recorded_totals = task_recorded_totals(
            task, logs, lambda det, index: self._rank(td, det, implement, index)
        )
        table.refresh_time_range()
        return table

    # -- devices and operation type ------------------------------------------------------------------------

    @staticmethod
    def _devices_used(td: TaskData, task: Element, logs: list[AnyTimeLog]) -> list[Device]:
        ids: list[str] = []
        for log in logs:
            for spec in log.header.dlvs:
                det = td.dets.get(spec.det)
                if det and det.device_id not in ids:
                    ids.append(det.device_id)
        for dan in task.findall("DAN"):
            dev_id = dan.get("C")
            if dev_id in td.devices and dev_id not in ids:
                ids.append(dev_id)
        return [td.devices[i] for i in ids if i in td.devices]

    @staticmethod
    def _implement(devices: list[Device]) -> Device | None:
        for dev in devices:
            if dev.device_class in DEVICE_CLASS_OPERATION and dev.device_class not in MACHINE_CLASSES:
                return dev
        for dev in devices:
            if dev.device_class in DEVICE_CLASS_OPERATION:
                return dev
        return None

    @staticmethod
    def _operation_type(implement: Device | None, logs: list[AnyTimeLog]) -> str:
        if implement is not None:
            return DEVICE_CLASS_OPERATION[implement.device_class]
        logged = {spec.ddi for log in logs for spec in log.header.dlvs}
        for operation, ddi_set in ddis.OPERATION_DDIS:
            if logged & ddi_set:
                return operation
        return "other"

    def _rank(self, td: TaskData, det_ref: str, implement: Device | None, index: int) -> tuple[int, int, int]:
        det = td.dets.get(det_ref)
        on_implement = implement is not None and det is not None and det.device_id == implement.id
        return (0 if on_implement else 1, det.depth if det else 99, index)

    # -- points ------------------------------------------------------------------------------------------------

    def _log_table(
        self,
        td: TaskData,
        log: AnyTimeLog,
        implement: Device | None,
        operation: str,
        tz_offset: np.timedelta64 | None,
        task_name: str,
    ) -> PointTable:
        warnings: list[str] = []
        if log.lat is None or log.lon is None:
            raise UnreadableDataset(f"task {task_name}: time log {log.name} has no position (PTN A/B)")
        tc_time = log.tc_time
        if tz_offset is not None:
            tc_time = tc_time - tz_offset
        timestamp = tc_time
        gps_time = log.utc_time(tz_offset)
        if gps_time is not None:
            if np.isnat(gps_time).all():
                warnings.append(f"{log.name}: GPS time unusable (constant or inconsistent date); TC clock used")
            else:
                timestamp = np.where(np.isnat(gps_time), tc_time, gps_time)
                if (apart := gps_tc_apart(gps_time, tc_time)) is not None:
                    days = abs(apart.astype("timedelta64[h]").astype(int)) / 24
                    warnings.append(
                        f"{log.name}: the TC clock reads {days:.0f} days {'behind' if apart < 0 else 'ahead of'} "
                        "GPS time (a clock never set?); GPS time used"
                    )
        columns: dict[str, np.ndarray] = {"timestamp": timestamp, "lon": log.lon, "lat": log.lat}
        units: dict[str, str] = {}
        if "up" in log.ptn:
            columns["elevation"] = log.ptn["up"] / 1000.0
            units["elevation"] = "m"

        chosen: dict[str, tuple[tuple[int, bool, int, int, int], int]] = {}
        for spec in log.header.dlvs:
            mapping = ddis.STANDARD_PROPERTIES.get(spec.ddi)
            if mapping is None:
                continue
            if mapping.prop == "seedDepth" and operation != "planted":
                continue
            rank = self._rank(td, spec.det, implement, spec.index)
            # The implement's values first; then, for a rate, an element that logs something other than 0 (a
            # planter's "Seed Operation" element logged a setpoint of 0 throughout while its channel logged the
            # rates asked for; a width is not so: one section's is not the boom's); then earlier entries of
            # STANDARD_PROPERTIES (actual volume rate before mass rate); then the element nearest the device root.
            only_zeros = False
            if mapping.prop in APPLICATION_RATES:
                raw = log.raw_values(spec.index)
                only_zeros = not bool(np.any(np.isfinite(raw) & (raw != 0)))
            priority = list(ddis.STANDARD_PROPERTIES).index(spec.ddi)
            key = (rank[0], only_zeros, priority, rank[1], rank[2])
            if mapping.prop not in chosen or key < chosen[mapping.prop][0]:
                chosen[mapping.prop] = (key, spec.index)
        for prop, (_key, index) in chosen.items():
            spec = log.header.dlvs[index]
            mapping = ddis.STANDARD_PROPERTIES[spec.ddi]
            columns[prop] = log.raw_values(index) * mapping.factor
            units[prop] = mapping.unit
        if operation == "planted" and "seedRate" not in columns and "seedRateTarget" in columns:
            # Some planters log only the setpoint (CNH sample); it is the best seed rate the file has.
            columns["seedRate"] = columns["seedRateTarget"]
            units["seedRate"] = units["seedRateTarget"]
            warnings.append(f"{log.name}: no actual seed rate logged; seedRate is the setpoint (DDI 000B)")

        boom_width = columns.get("equipmentWidth")
        width, note = section_working_width(
            td, log, lambda det, index: self._rank(td, det, implement, index), boom_width
        )
        if note:
            warnings.append(note)
        if width is not None:
            columns["equipmentWidth"] = width
            units["equipmentWidth"] = "m"

        work = [s for s in log.header.dlvs if s.ddi == ignore_times.WORK_STATE]
        if work:
            best = min(work, key=lambda s: self._rank(td, s.det, implement, s.index))
            state = log.raw_values(best.index)
            columns["recordingStatus"] = np.where(state == 1, 1.0, np.where(state == 0, 0.0, np.nan))
            if operation == "harvested":
                self._yield_ignore_times(td, log, implement, best.det, state, tc_time, columns, warnings)

        raw: dict[str, np.ndarray] = {}
        raw_units: dict[str, str] = {}
        if self.include_raw:
            for spec in log.header.dlvs:
                if not ddis.is_standard(spec.ddi):
                    continue
                name = f"DDI{spec.ddi:04X}_{spec.det}"
                if name in raw:
                    name = f"{name}_{spec.index}"
                raw[name] = log.values(spec.index)
                raw_units[name] = ddis.unit(spec.ddi)
            for key in ("status", "pdop", "hdop", "satellites"):
                if key in log.ptn:
                    raw[f"PTN_{key}"] = log.ptn[key]
            if "up" in log.ptn:
                raw["PTN_up"] = log.ptn["up"]
                raw_units["PTN_up"] = "mm"

        lat, lon = columns["lat"], columns["lon"]
        no_fix = (lat == 0) & (lon == 0)
        off_globe = ~usable_positions(lon, lat)
        no_position = no_fix | off_globe
        no_time = np.isnat(timestamp) & ~no_position
        warnings = [
            *warnings,
            *left_out_warning(no_fix, len(lat), "no position (0, 0 is a receiver without a fix)"),
            *left_out_warning(off_globe, len(lat), NO_POSITION),
            *left_out_warning(no_time, len(lat), "no time"),
        ]
        valid = ~no_position & ~no_time
        if not valid.all():
            # Column by column, each left for its selection as it goes: a copy of the whole table took its size again.
            for group in (columns, raw):
                for key in group:
                    group[key] = group[key][valid]
        return PointTable(
            name=task_name,
            operation_type=operation,  # type: ignore[arg-type]
            columns=columns,
            units=units,
            source_units=dict(units),
            raw_columns=raw,
            raw_units=raw_units,
            source_format="ISOXML",
            warnings=warnings,
        )

    def _yield_ignore_times(
        self,
        td: TaskData,
        log: AnyTimeLog,
        implement: Device | None,
        work_det: str,
        state: np.ndarray,
        times: np.ndarray,
        columns: dict[str, np.ndarray],
        warnings: list[str],
    ) -> None:
        """Mark the records whose yield falls in a lead or lag ignore time (`ignore_times`), with a warning."""

        def rank(det: str, index: int) -> tuple[int, int, int]:
            return self._rank(td, det, implement, index)

        lead = ignore_times.ignore_time_ms(td, log, ignore_times.LEAD_IGNORE_TIME, work_det, rank)
        lag = ignore_times.ignore_time_ms(td, log, ignore_times.LAG_IGNORE_TIME, work_det, rank)
        if lead is None and lag is None:
            return
        ignored = ignore_times.yield_ignored(times, state, lead, lag)
        columns[YIELD_IGNORED_COLUMN] = ignored.astype(float)
        count = int((ignored & (state == 1)).sum())  # (those out of work are not used anyway)
        if count:
            warnings.append(
                f"{log.name}: the yield of {_count(count, 'record')} is inside the machine's lead or lag ignore time "
                "(DDI 0104/0103) and is not used"
            )


def _binary_note(log: TimeLog, file_name: str) -> str | None:
    """What the user must be told about a time log binary that is empty or ends inside a record (an upload cut
    short, a terminal switched off while writing), else None: otherwise the missing points go unnoticed."""
    if log.size_bytes == 0:
        return f"{file_name} is empty: no points logged"
    if not log.truncated_record:
        return None
    left = _count(log.leftover_bytes, "byte")
    if log.n_records == 0:
        return f"{file_name} ends inside its first record: its {left} (a partial record) left unread, no points logged"
    return (
        f"{file_name} ends inside a record: {left} at its end (a partial record) left unread, "
        f"the {_count(log.n_records, 'complete record')} before it read"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _dedupe(machines: list[MachineIdentity]) -> list[MachineIdentity]:
    out: list[MachineIdentity] = []
    for m in machines:
        if m not in out:
            out.append(m)
    return out
