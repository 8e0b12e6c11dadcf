"""Yield lead and lag ignore times (ISO 11783-11 DDI 0x0104 and 0x0103, FORMATS.md 2.6).

A combine's yield sensor reads the crop some seconds after the header takes it in, so for a while after the header
goes down (out of work to in work) and after it comes up (in work to out of work) the flow and yield it reports are
unreliable. The machine may say for how long, in milliseconds: the lead ignore time (DDI 0x0104) from each
out-of-work to in-work change, the lag ignore time (DDI 0x0103) from each in-work to out-of-work change. The
standard names the values it covers: DDIs 83 to 91, 181 to 183 and 185 to 190 (flows, yields per area and per time,
wet and dry). A record inside such a window keeps its position, width and coverage; its yield is marked unreliable
(`YIELD_IGNORED_COLUMN`), and cleaning drops it under its own reason. Without either DDI nothing is marked: the
standard gives no default.

The work state is the log's Actual Work State (DDI 0x008D: 0 off, 1 on; 2 and 3, error and not installed, are no
state and make no change). An ignore time is the one logged in the time log (the value at the change, carried
forward), else the device property (DPT) of the work state's element or of the nearest element above it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .parallel import AnyTimeLog
from .taskdata import TaskData

WORK_STATE = 0x008D
LAG_IGNORE_TIME = 0x0103  # from in work to out of work
LEAD_IGNORE_TIME = 0x0104  # from out of work to in work
# The DDIs whose values the ignore times cover (ISO 11783-11, the definition of DDI 0x0103 and 0x0104).
YIELD_DDIS = frozenset([*range(83, 92), 181, 182, 183, *range(185, 191)])


def ignore_time_ms(
    td: TaskData, log: AnyTimeLog, ddi: int, work_det: str, rank: Callable[[str, int], tuple]
) -> np.ndarray | None:
    """The ignore time `ddi` at each record (ms), or None when neither the log nor the device description gives
    it: the best-ranked DLV of the log (`rank(det, index)`), else the DPT of `work_det` or of the nearest element
    above it."""
    logged = [spec for spec in log.header.dlvs if spec.ddi == ddi]
    if logged:
        best = min(logged, key=lambda spec: rank(spec.det, spec.index))
        return log.raw_values(best.index)
    element = td.dets.get(work_det)
    while element is not None:
        if ddi in element.properties:
            return np.full(log.n_records, float(element.properties[ddi]))
        element = td.dets.get(element.parent_id) if element.parent_id else None
    return None


def _changes(state: np.ndarray, to: int) -> np.ndarray:
    """Indices of the records where the work state becomes `to` (0 or 1) from the other one; records of no state
    (2, 3, not logged yet) are passed over."""
    known = np.flatnonzero((state == 0) | (state == 1))
    if len(known) < 2:
        return np.empty(0, dtype=np.int64)
    values = state[known]
    return known[1:][(values[1:] == to) & (values[:-1] == 1 - to)]


def _window_end(at: np.ndarray, valid: np.ndarray, start: int, end: int) -> int:
    """The index past the last record, from `start` on in record order, whose time is in [at[start], end): the
    window ends at the first record outside it (a TC clock that steps back, a record of no time, or past `end`).
    Looked at in growing blocks: a window is some seconds long, a log of records many hours."""
    size = 64
    while True:
        stop = min(len(at), start + size)
        inside = valid[start:stop] & (at[start:stop] >= at[start]) & (at[start:stop] < end)
        if not inside.all():
            return start + int(np.argmin(inside))
        if stop == len(at):
            return stop
        size *= 4


def yield_ignored(
    times: np.ndarray, state: np.ndarray, lead_ms: np.ndarray | None, lag_ms: np.ndarray | None
) -> np.ndarray:
    """True at each record inside a lead window (from an off to on change, for `lead_ms` at that record) or a lag
    window (from an on to off change, for `lag_ms`). `times` are the records' datetime64 times; a change at a record
    of no time, or with no positive ignore time, marks nothing."""
    ignored = np.zeros(len(state), dtype=bool)
    ms = times.astype("datetime64[ms]")
    valid = ~np.isnat(ms)
    at = ms.astype(np.int64)
    for window, to in ((lead_ms, 1), (lag_ms, 0)):
        if window is None:
            continue
        for start in _changes(state, to):
            length = window[start]
            if valid[start] and length > 0:
                ignored[start : _window_end(at, valid, start, at[start] + int(length))] = True
    return ignored
