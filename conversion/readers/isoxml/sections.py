"""The working width of each logged point from the sections that are on (condensed work state, FORMATS.md 2.5).

A boom's actual working width (DDI 0x0043) is often logged as the whole boom whether its sections spread or not
(CNH's 36 m spreader logs 36 m while every section is off), so an area from it counts headland turns and
switched-off sections as worked. When a time log carries the actual condensed work state (0x00A1-0x00B0: 2 bits
per section, section 1 in the lowest bits of 0x00A1, 16 sections per DDI; 0 off, 1 on, 2 error, 3 not installed),
a point's working width is the sum of the widths of the sections that are on (state 1) at that point: 0 when
none is. This is the one place of that rule; area, totals and coverage follow from the width.

Which sections: the section elements (DET type 4) below the element that logs the state, by element number
(`TaskData.sections_below`). A section's width: its own logged 0x0043, else its device property 0x0043/0x0046,
else an equal share of the full boom (the largest 0x0046/0x0043 the element logs or describes, else the largest
logged working width), since a device description that names its sections but not their widths has equal ones.

The whole-boom width stays when the rule cannot apply: no state logged; a state that never shows a section on
(some terminals log 0 throughout while working, AllFieldsMoved); sections the device description does not name
and the state does not count (no "not installed" marker); a state DDI missing for some of the sections; and, point
by point, before the first state value or where a section's width is unknown.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .parallel import AnyTimeLog
from .taskdata import TaskData

FIRST_CONDENSED_STATE = 0x00A1
LAST_CONDENSED_STATE = 0x00B0
SECTIONS_PER_STATE = 16
SECTION_ON = 1
NOT_INSTALLED = 3
ACTUAL_WIDTH = 0x0043
MAXIMUM_WIDTH = 0x0046
MM = 0.001


def _is_condensed_state(ddi: int) -> bool:
    return FIRST_CONDENSED_STATE <= ddi <= LAST_CONDENSED_STATE


def section_working_width(
    td: TaskData,
    log: AnyTimeLog,
    rank: Callable[[str, int], tuple],
    boom_width: np.ndarray | None,
) -> tuple[np.ndarray | None, str | None]:
    """Per record, the working width (m) of the sections that are on; None when the rule does not apply, with a
    note saying why when the log has a condensed work state. `rank(det, index)` orders the logging elements as the
    reader does (the implement's first, then the one nearest the device root); `boom_width` is the whole-boom
    width (m) per record the reader would use otherwise, kept where the sections say nothing."""
    specs = [s for s in log.header.dlvs if _is_condensed_state(s.ddi)]
    if not specs:
        return None, None
    det_ref = min(specs, key=lambda s: rank(s.det, s.index)).det
    blocks: dict[int, np.ndarray] = {}
    for spec in specs:
        if spec.det == det_ref and spec.ddi - FIRST_CONDENSED_STATE not in blocks:
            blocks[spec.ddi - FIRST_CONDENSED_STATE] = log.raw_values(spec.index)
    what = f"{log.name}: condensed work state of {det_ref}"
    sections = td.sections_below(det_ref)
    count = len(sections) or _installed_count(blocks)
    if not count:
        return None, f"{what} ignored: the device description names no sections (area uses the whole width)"
    needed = {i // SECTIONS_PER_STATE for i in range(count)}
    missing = sorted(needed - set(blocks))
    if missing:
        ddi = FIRST_CONDENSED_STATE + missing[0]
        return None, f"{what} ignored: {count} sections but DDI {ddi:04X} is not logged (area uses the whole width)"

    n = log.n_records
    known = np.logical_and.reduce([~np.isnan(blocks[b]) for b in needed])
    bits = {b: np.where(np.isnan(blocks[b]), 0, blocks[b]).astype(np.uint64) for b in needed}

    def section_on(i: int) -> np.ndarray:
        shift = np.uint64(2 * (i % SECTIONS_PER_STATE))
        return ((bits[i // SECTIONS_PER_STATE] >> shift) & np.uint64(3) == SECTION_ON) & known

    # Section by section, so that memory stays one array per record however many sections there are.
    if not any(section_on(i).any() for i in range(count)):
        return None, f"{what} ignored: it never shows a section on (area uses the whole width)"
    full = _full_width(td, log, det_ref, boom_width)
    width = np.zeros(n)
    unknown = ~known
    for i in range(count):
        on = section_on(i)
        section_width = _section_width(td, log, sections[i].id if sections else None, n, full / count)
        width += np.where(on, np.nan_to_num(section_width), 0.0)
        # A point whose state, or the width of a section on, is unknown keeps the whole-boom width.
        unknown |= on & np.isnan(section_width)
    fallback = boom_width if boom_width is not None else np.full(n, np.nan)
    return np.where(unknown, fallback, width), None


def _installed_count(blocks: dict[int, np.ndarray]) -> int:
    """Sections the state itself counts: those before the first "not installed" (3) in its first logged value;
    0 when no value says where the installed sections end."""
    for block in sorted(blocks):
        raw = blocks[block]
        logged = raw[~np.isnan(raw)]
        if not len(logged):
            return 0
        value = int(logged[0])
        for i in range(SECTIONS_PER_STATE):
            if (value >> (2 * i)) & 3 == NOT_INSTALLED:
                return block * SECTIONS_PER_STATE + i
    return 0


def _logged(log: AnyTimeLog, det: str, ddi: int) -> np.ndarray | None:
    """Per record, the first DLV of `ddi` that `det` logs, raw; None when it logs none."""
    for spec in log.header.dlvs:
        if spec.det == det and spec.ddi == ddi:
            return log.raw_values(spec.index)
    return None


def _full_width(td: TaskData, log: AnyTimeLog, det: str, boom_width: np.ndarray | None) -> float:
    """The whole boom (m): the largest maximum or actual working width the element logs or describes; else the
    largest whole-boom width of the log; NaN when nothing says."""
    candidates: list[float] = []
    element = td.dets.get(det)
    for ddi in (MAXIMUM_WIDTH, ACTUAL_WIDTH):
        values = _logged(log, det, ddi)
        if values is not None and not np.isnan(values).all():
            candidates.append(float(np.nanmax(values)) * MM)
        if element is not None and ddi in element.properties:
            candidates.append(element.properties[ddi] * MM)
    if boom_width is not None and not np.isnan(boom_width).all():
        candidates.append(float(np.nanmax(boom_width)))
    positive = [c for c in candidates if c > 0]
    return max(positive) if positive else float("nan")


def _section_width(td: TaskData, log: AnyTimeLog, det: str | None, n: int, share: float) -> np.ndarray:
    """Per record, one section's width (m): its logged actual width, else its described width, else `share`."""
    static = share
    element = td.dets.get(det) if det else None
    if element is not None:
        for ddi in (ACTUAL_WIDTH, MAXIMUM_WIDTH):
            if element.properties.get(ddi, 0) > 0:
                static = element.properties[ddi] * MM
                break
    logged = _logged(log, det, ACTUAL_WIDTH) if det else None
    if logged is None:
        return np.full(n, static)
    return np.where(np.isnan(logged), static, logged * MM)
