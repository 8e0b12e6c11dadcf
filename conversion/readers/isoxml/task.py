"""What a task says of itself besides its points: the time zone of its clock, its crops, varieties and products,
its operators, and the totals it records."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from xml.etree.ElementTree import Element

import numpy as np

from conversion.crops import normalize_crop_name
from conversion.readers import ddi as ddis
from conversion.readers.values import number_from_text

from .parallel import AnyTimeLog
from .taskdata import TaskData, _clean
from .tlg import clock_reading

# A log's first record may come a little before the start its task wrote for the session.
ZONE_START_SLACK = np.timedelta64(60_000, "ms")


@dataclass(frozen=True)
class ClockZone:
    """A start the task wrote with its UTC offset (TIM or ASP A="2023-04-14T10:51:44+01:00"): the TC clock's
    reading then, and the clock's zone from then on."""

    start: np.datetime64
    offset: np.timedelta64


def task_clock_zones(task: Element) -> list[ClockZone]:
    """The starts written with a UTC offset on the task's TIM and ASP elements, in the clock's order."""
    zones = []
    for node in task.iter():
        if node.tag not in ("TIM", "ASP"):
            continue
        try:
            clock, offset = clock_reading(node.get("A") or "")
        except ValueError:
            continue
        if offset is not None:
            zones.append(ClockZone(clock, offset))
    return sorted(zones, key=lambda zone: zone.start)


def log_timezone(zones: list[ClockZone], tc_time: np.ndarray) -> np.timedelta64 | None:
    """The UTC offset of the TC clock during a log, None when the task writes none: that of the latest start at or
    before the log's first reading. A task carried on across a change to or from summer time writes its sessions'
    starts with two offsets, and each log is read in its own (one offset for every log put those after the change
    an hour off). A log that begins before every start, or has no clock, takes the first start's."""
    if not zones:
        return None
    readings = tc_time[~np.isnat(tc_time)]
    if not len(readings):
        return zones[0].offset
    first = readings.min() + ZONE_START_SLACK
    started = [zone for zone in zones if zone.start <= first]
    return (started[-1] if started else zones[0]).offset


def task_crops_and_products(td: TaskData, task: Element) -> tuple[list[str], list[str], list[str]]:
    """The crops, varieties and products of the task: its field's crop and variety (PFD G, H) and the products it
    allocates (PAN), with the crop and variety of a product that is a variety (CVT C)."""
    crops: list[str] = []
    varieties: list[str] = []
    products: list[str] = []

    def add(items: list[str], value: str | None) -> None:
        if value and value not in items:
            items.append(value)

    variety_of_product: dict[str, tuple[Element, Element]] = {}
    for el in td.elements:
        if el.tag == "CTP":
            for cvt in el.findall("CVT"):
                if cvt.get("C"):
                    variety_of_product[cvt.get("C", "")] = (el, cvt)
    field_el = td.by_id.get(task.get("E", ""))
    if field_el is not None and field_el.tag == "PFD":
        ctp = td.by_id.get(field_el.get("G", ""))
        if ctp is not None:
            add(crops, normalize_crop_name(ctp.get("B")))
        cvt = td.by_id.get(field_el.get("H", ""))
        if cvt is not None:
            add(varieties, _clean(cvt.get("B")))
    for pan in task.findall("PAN"):
        pdt = td.by_id.get(pan.get("A", ""))
        if pdt is None or pdt.tag != "PDT":
            continue
        add(products, _clean(pdt.get("B")))
        if pdt.get("A") in variety_of_product:
            ctp, cvt = variety_of_product[pdt.get("A", "")]
            add(crops, normalize_crop_name(ctp.get("B")))
            add(varieties, _clean(cvt.get("B")))
    return crops, varieties, products


def task_operators(td: TaskData, task: Element) -> dict[str, str | None]:
    """The task's workers (its TSK F, and each WAN's), each once: name (first name first): licence number (WKR L,
    ISO 11783-10's "license number"), None where the worker has none."""
    refs = [task.get("F")] + [wan.get("A") for wan in task.findall("WAN")]
    workers: dict[str, str | None] = {}
    for ref in refs:
        worker = td.by_id.get(ref or "")
        if worker is None or worker.tag != "WKR":
            continue
        name = " ".join(p for p in (_clean(worker.get("C")), _clean(worker.get("B"))) if p)
        if name and workers.get(name) is None:
            workers[name] = _clean(worker.get("L")) or None
    return workers


def task_recorded_totals(
    task: Element, logs: list[AnyTimeLog], rank: Callable[[str, int], tuple[int, int, int]]
) -> dict[str, tuple[float, str]]:
    """The totals the task records: its last TIM's total DLVs (the best-ranked device element's, `rank(det,
    index)`), else what the counters logged in its time logs grew by."""
    totals: dict[str, tuple[float, str]] = {}
    best: dict[str, tuple[tuple[int, int, int], float, str]] = {}
    tims = [t for t in task.findall("TIM") if t.findall("DLV")]
    if tims:
        for i, dlv in enumerate(tims[-1].findall("DLV")):
            try:
                ddi = int(dlv.get("A", ""), 16)
            except ValueError:
                continue
            value = number_from_text(dlv.get("B", ""))
            mapping = ddis.TOTALS.get(ddi)
            # No number, or "1e999": such a total is none, and a counter logged may stand in for it.
            if mapping is None or value is None or not math.isfinite(value * mapping.factor):
                continue
            ranked = rank(dlv.get("C", ""), i)
            if mapping.prop not in best or ranked < best[mapping.prop][0]:
                best[mapping.prop] = (ranked, value * mapping.factor, mapping.unit)
    # Counters logged in the time logs: each log's share is what the counter grew by, last - first; a counter
    # that drops (reset, or CNH's boom area 8231 -> 3936 mid-log) restarts there, so its increases are summed.
    logged: dict[str, list] = defaultdict(list)
    for log in logs:
        per_log: dict[str, tuple[tuple[int, int, int], float, str]] = {}
        for spec in log.header.dlvs:
            mapping = ddis.TOTALS.get(spec.ddi)
            if mapping is None or mapping.prop in best:
                continue
            values = log.raw_values(spec.index)
            values = values[~np.isnan(values)]
            if len(values) < 2:
                continue
            ranked = rank(spec.det, spec.index)
            if mapping.prop not in per_log or ranked < per_log[mapping.prop][0]:
                grew = float(np.clip(np.diff(values), 0, None).sum())
                per_log[mapping.prop] = (ranked, grew * mapping.factor, mapping.unit)
        for prop, (_rank, value, unit) in per_log.items():
            logged[prop].append((value, unit))
    for prop, (_rank, value, unit) in best.items():
        totals[prop] = (value, unit)
    for prop, items in logged.items():
        totals[prop] = (sum(v for v, _ in items), items[0][1])
    return totals
