"""Yield lead and lag ignore times (ISO 11783-11 DDI 0x0104 and 0x0103, FORMATS.md 2.6).

A combine's yield sensor reads the crop some seconds after the header takes it in, so for a while after the header
goes down (out of work to in work) and after it comes up (in work to out of work) the flow and yield it reports are
unreliable (the standard names the values: DDIs 83 to 91, 181 to 183 and 185 to 190, flows and yields per area and
per time, wet and dry). The machine may say for how long, in milliseconds: the lead ignore time (DDI 0x0104) from
each out-of-work to in-work change, the lag ignore time (DDI 0x0103) from each in-work to out-of-work change. The
records inside such a window are marked (`YIELD_IGNORED_COLUMN`): their raw values stay in the raw GeoJSON, and
cleaning drops those points under their own reason. Without either DDI nothing is marked: the standard gives no
default.

The work state is the log's Actual Work State (DDI 0x008D: 0 off, 1 on; 2 and 3, error and not installed, are no
state and make no change). An ignore time is the one logged in the time log (the value at the change, carried
forward), else the device property (DPT) of the work state's element or of the nearest element above it; a value
outside the DDI's range (0 to 2^31 - 1 ms) is none.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .parallel import AnyTimeLog
from .taskdata import TaskData

WORK_STATE = 0x008D
LAG_IGNORE_TIME = 0x0103  # from in work to out of work
LEAD_IGNORE_TIME = 0x0104  # from out of work to in work
MAX_IGNORE_TIME_MS = 2**31 - 1


def _in_range(values: np.ndarray) -> np.ndarray:
    """The values that can be ignore times (ms), NaN for the others; an array of any shape, one value too."""
    return np.where((values >= 0) & (values <= MAX_IGNORE_TIME_MS), values, np.nan)


def _device_property(td: TaskData, det_id: str, ddi: int) -> float | None:
    """The DPT `ddi` of element `det_id` or of the nearest element above it (a parent cycle ends the walk); None
    when there is none or it is out of range."""
    seen: set[str] = set()
    element = td.dets.get(det_id)
    while element is not None and element.id not in seen:
        seen.add(element.id)
        if ddi in element.properties:
            value = float(_in_range(np.asarray(element.properties[ddi], dtype=float)))
            return None if np.isnan(value) else value
        element = td.dets.get(element.parent_id) if element.parent_id else None
    return None


def ignore_time_ms(
    td: TaskData, log: AnyTimeLog, ddi: int, work_det: str, rank: Callable[[str, int], tuple]
) -> np.ndarray | None:
    """The ignore time `ddi` at each record (ms; NaN for none), or None when neither the log nor the device
    description gives it: the best-ranked DLV of the log (`rank(det, index)`) carried forward, and before its first
    value (or without one) the DPT of `work_det` or of the nearest element above it."""
    from_device = _device_property(td, work_det, ddi)
    logged = [spec for spec in log.header.dlvs if spec.ddi == ddi]
    if not logged:
        return None if from_device is None else np.full(log.n_records, from_device)
    best = min(logged, key=lambda spec: rank(spec.det, spec.index))
    values = _in_range(log.raw_values(best.index))
    if from_device is not None:
        values = np.where(np.isnan(values), from_device, values)
    return values


def _changes(state: np.ndarray, to: int) -> np.ndarray:
    """Indices of the records where the work state becomes `to` (0 or 1) from the other one; records of no state
    (2, 3, not logged yet) are passed over."""
    known = np.flatnonzero((state == 0) | (state == 1))
    if len(known) < 2:
        return np.empty(0, dtype=np.int64)
    values = state[known]
    return known[1:][(values[1:] == to) & (values[:-1] == 1 - to)]


def yield_ignored(
    times: np.ndarray, state: np.ndarray, lead_ms: np.ndarray | None, lag_ms: np.ndarray | None
) -> np.ndarray:
    """True at each record inside a lead window (from an off to on change, for `lead_ms` at that record) or a lag
    window (from an on to off change, for `lag_ms`). `times` are the records' datetime64 times. A window ends at
    its time, or earlier at the first record of no time or whose time steps back; a change at a record of no time,
    or with no positive ignore time, marks nothing. Linear in the records and changes, whatever the windows."""
    n = len(state)
    ms = times.astype("datetime64[ms]")
    valid = ~np.isnat(ms)
    at = np.where(valid, ms.astype(np.int64), 0)
    # Where each run of rising (or equal) times ends: the records of no time and those before their predecessor.
    breaks = np.flatnonzero(~valid | np.r_[False, at[1:] < at[:-1]])
    edges = np.zeros(n + 1, dtype=np.int64)
    for window, to in ((lead_ms, 1), (lag_ms, 0)):
        if window is None:
            continue
        starts = _changes(state, to)
        lengths = window[starts] if len(starts) else np.empty(0)
        keep = valid[starts] & (lengths > 0)
        starts, lengths = starts[keep], lengths[keep].astype(np.int64)
        following = np.searchsorted(breaks, starts, side="right")
        run_ends = np.append(breaks, n)[following]
        for start, length, run_end in zip(starts.tolist(), lengths.tolist(), run_ends.tolist(), strict=True):
            end = start + int(np.searchsorted(at[start:run_end], at[start] + length, side="left"))
            edges[start] += 1
            edges[end] -= 1
    return np.cumsum(edges[:n]) > 0
