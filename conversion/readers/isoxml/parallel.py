"""Parallel time logs of one task joined by time (FORMATS.md: CNH writes a device with more than 255 DLVs as
several TLGs covering the same time span; they are joined by timestamp, not read one after the other).

Two logs of a task are parallel when their TC time spans overlap by at least `PARALLEL_OVERLAP` of the shorter
span; logs one after another (a task paused and resumed) do not overlap and stay apart, to be concatenated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from conversion.readers import ddi as ddis

from .tlg import TimeLog, TimeLogHeader

PARALLEL_OVERLAP = 0.5


@dataclass
class JoinedTimeLog:
    """Time logs written in parallel over one time span, read as one (the `TimeLog` interface the reader uses).
    The records, times and positions are those of the base log (the one with positions and the most records); the
    DLVs of the others follow the base's, re-indexed, each taking at every base record the value its log held at
    that TC time (its latest record at or before it; NaN before its first)."""

    name: str
    header: TimeLogHeader
    base: TimeLog
    # (log, first joined DLV index, per base record the log's latest record at or before its TC time, -1: none)
    others: list[tuple[TimeLog, int, np.ndarray]]
    _filled: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def n_records(self) -> int:
        return self.base.n_records

    @property
    def tc_time(self) -> np.ndarray:
        return self.base.tc_time

    def utc_time(self, tc_zone: np.timedelta64 | None = None) -> np.ndarray | None:
        return self.base.utc_time(tc_zone)

    @property
    def ptn(self) -> dict[str, np.ndarray]:
        return self.base.ptn

    @property
    def lat(self) -> np.ndarray | None:
        return self.base.lat

    @property
    def lon(self) -> np.ndarray | None:
        return self.base.lon

    def raw_values(self, index: int) -> np.ndarray:
        """As `TimeLog.raw_values` (cached and shared alike), for a DLV of any of the joined logs."""
        if index not in self._filled:
            self._filled[index] = self._fill(index)
        return self._filled[index]

    def _source(self, index: int) -> tuple[TimeLog, int, np.ndarray | None]:
        """The log a joined DLV is of, its index there, and which of that log's records each base record takes
        (None: the base's own)."""
        for log, first, at in reversed(self.others):
            if index >= first:
                return log, index - first, at
        return self.base, index, None

    def _fill(self, index: int) -> np.ndarray:
        log, own_index, at = self._source(index)
        return _at_base_records(log.raw_values(own_index), at)

    def values(self, index: int) -> np.ndarray:
        """As `TimeLog.values` (not cached), for a DLV of any of the joined logs."""
        if index in self._filled:
            return self._filled[index] * ddis.resolution(self.header.dlvs[index].ddi)
        log, own_index, at = self._source(index)
        return _at_base_records(log.values(own_index), at)


def _at_base_records(values: np.ndarray, at: np.ndarray | None) -> np.ndarray:
    """`values` of a log at the base's records (`at`, -1 where the log has none yet: NaN), or as they are."""
    if at is None:
        return values
    values = values[at]
    values[at < 0] = np.nan
    return values


Span = tuple[np.datetime64, np.datetime64] | None


def _span(log: TimeLog) -> Span:
    times = log.tc_time[~np.isnat(log.tc_time)]
    return (times.min(), times.max()) if len(times) else None


def _parallel(span_a: Span, span_b: Span) -> bool:
    if span_a is None or span_b is None:
        return False
    overlap = min(span_a[1], span_b[1]) - max(span_a[0], span_b[0])
    shorter = min(span_a[1] - span_a[0], span_b[1] - span_b[0])
    return overlap >= shorter * PARALLEL_OVERLAP if shorter > np.timedelta64(0, "ms") else overlap >= 0


def _latest_at_or_before(times: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each time of `at`, the index into `times` of the latest at or before it (-1 when none)."""
    order = np.argsort(times, kind="stable")
    found = np.searchsorted(times[order], at, side="right") - 1
    return np.where(found >= 0, order[np.maximum(found, 0)], -1)


def _join(logs: list[TimeLog]) -> JoinedTimeLog:
    base = max(logs, key=lambda log: (log.lat is not None and log.lon is not None, log.n_records))
    dlvs = list(base.header.dlvs)
    others = []
    for log in logs:
        if log is base:
            continue
        first = len(dlvs)
        others.append((log, first, _latest_at_or_before(log.tc_time, base.tc_time)))
        dlvs.extend(replace(spec, index=first + spec.index) for spec in log.header.dlvs)
    return JoinedTimeLog(
        name="+".join(log.name for log in logs), header=replace(base.header, dlvs=dlvs), base=base, others=others
    )


AnyTimeLog = TimeLog | JoinedTimeLog


def join_parallel(logs: list[TimeLog]) -> list[AnyTimeLog]:
    """The task's logs with each group of parallel ones joined into one, in the order of each group's first log."""
    spans = [_span(log) for log in logs]
    groups: list[list[int]] = []
    for index, span in enumerate(spans):
        group = next((g for g in groups if any(_parallel(span, spans[member]) for member in g)), None)
        if group is None:
            groups.append([index])
        else:
            group.append(index)
    return [logs[group[0]] if len(group) == 1 else _join([logs[i] for i in group]) for group in groups]
