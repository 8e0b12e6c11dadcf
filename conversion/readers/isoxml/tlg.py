"""ISO 11783-10 time logs: the `TLGnnnnn.XML` header and its little-endian binary records (FORMATS.md 2.4).

A header attribute present with an empty value is in every binary record; present with a value, it is fixed for
all records; absent, the field does not exist. Each record is: TC time (uint32 ms since midnight + uint16 days
since 1980-01-01), the PTN fields present, then `n` (uint8) and `n` x (uint8 DLV index, int32 value). Only
changed values are logged, so each DLV's last value is carried forward.

Parsing is two passes: a tight scalar loop that only finds where each record starts (records have variable
length), then numpy gathers for every field at once; a DLV's values are decoded only when first asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from conversion.readers import ddi as ddis
from conversion.readers.binary import values_at
from platform_site.text import PLAIN_INTEGER, PLAIN_NUMBER

from .xmlfile import xml_root

EPOCH_1980 = np.datetime64("1980-01-01T00:00:00", "ms")
MS_PER_DAY = 86_400_000
# A DDI in ASCII hex digits (four, leading zeros aside): `int` also reads other scripts' digits ("٣" as 3),
# underscores and "0x".
HEX_DDI = re.compile(r"[0-9A-Fa-f]{1,8}")
# Time zones span UTC-12 to UTC+14; a GPS/TC difference beyond that is not a clock offset but a bad value.
GPS_TC_MAX_OFFSET_MS = 14 * 3_600_000
# A clock reading before this is a clock never set (task controllers start at 1980-01-01 or 2000-01-01; binary time
# logs are of ISO 11783-10's later editions), as is one more than a day ahead of now.
CLOCK_SET_FROM = np.datetime64("2004-01-01", "ms")

# PTN attribute -> (field name, numpy little-endian dtype); order is the binary order.
PTN_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("A", "north", "<i4"),
    ("B", "east", "<i4"),
    ("C", "up", "<i4"),
    ("D", "status", "u1"),
    ("E", "pdop", "<u2"),
    ("F", "hdop", "<u2"),
    ("G", "satellites", "u1"),
    ("H", "gps_time", "<u4"),
    ("I", "gps_date", "<u2"),
)
_PTN_SCALE = {"north": 1e-7, "east": 1e-7, "up": 1.0, "pdop": 0.1, "hdop": 0.1}


class TimeLogError(Exception):
    """A time log whose header or binary cannot be parsed; the message names the log and the problem."""


@dataclass(frozen=True)
class DLVSpec:
    """One DLV of a time log header: DDI, device element reference and optional fixed value."""

    index: int
    ddi: int
    det: str
    fixed: int | None = None
    pgn: str | None = None


@dataclass
class TimeLogHeader:
    """What the `TLGnnnnn.XML` header says about the binary records."""

    time_in_binary: bool
    time_fixed: str | None
    ptn_in_binary: list[tuple[str, str, str]]
    ptn_fixed: dict[str, float]
    dlvs: list[DLVSpec]

    @property
    def record_fixed_size(self) -> int:
        """Bytes before the DLV count in every record."""
        size = 6 if self.time_in_binary else 0
        return size + sum(np.dtype(dt).itemsize for _, _, dt in self.ptn_in_binary)


@dataclass
class TimeLog:
    """A parsed time log: per-record TC time, PTN fields and the logged DLV values (sparse, see `values`).

    `tc_time` is the task controller's clock, of no stated zone (the task's TIM/ASP times say its zone:
    `task.log_timezone`). `utc_time(zone)` is UTC where the log states it: GPS time (PTN H/I, kept raw in
    `gps_ms`/`gps_days`) where logged and valid, else a fixed start written with its UTC offset (TIM A="...-05:00").

    `n_records` counts the complete records only: `truncated_record` says the binary ends inside a record, whose
    bytes (`leftover_bytes`) were not read.
    """

    name: str
    header: TimeLogHeader
    n_records: int
    size_bytes: int
    consumed_bytes: int
    truncated_record: bool
    tc_time: np.ndarray
    ptn: dict[str, np.ndarray]
    gps_ms: np.ndarray | None
    gps_days: np.ndarray | None
    fixed_utc: np.datetime64 | None
    _data: bytes = field(repr=False)
    _first_pairs: np.ndarray = field(repr=False)
    _pair_base: np.ndarray = field(repr=False)
    _pair_indexes: np.ndarray = field(repr=False)
    _logged_counts: np.ndarray = field(repr=False)
    _filled: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def leftover_bytes(self) -> int:
        """Bytes after the last complete record (0 for a log read byte-exact to its end)."""
        return self.size_bytes - self.consumed_bytes

    @property
    def lat(self) -> np.ndarray | None:
        """Latitude in degrees (PTN A), or None when the log has no position."""
        return self.ptn.get("north")

    @property
    def lon(self) -> np.ndarray | None:
        """Longitude in degrees (PTN B), or None when the log has no position."""
        return self.ptn.get("east")

    def logged_count(self, index: int) -> int:
        """How many values the log holds for DLV `index`."""
        return int(self._logged_counts[index])

    def raw_values(self, index: int) -> np.ndarray:
        """Values of DLV `index` per record as float64 raw integers, carried forward; NaN before the first one.

        Bit-field DDIs come out as unsigned 32-bit values; fixed-valued DLVs are constant. The array is cached and
        shared: do not modify it in place.
        """
        if index not in self._filled:
            self._filled[index] = self._fill(index)
        return self._filled[index]

    def _fill(self, index: int) -> np.ndarray:
        spec = self.header.dlvs[index]
        if spec.fixed is not None:
            return np.full(self.n_records, float(spec.fixed))
        if not self._logged_counts[index]:
            return np.full(self.n_records, np.nan)
        # Values are only decoded for the DLVs asked for, which is what makes a million-record log fast. Where each
        # pair is, is worked out again for each: kept for every pair of the log, it took 1.4 times the log's size.
        pairs = np.flatnonzero(self._pair_indexes == index)
        # (A record without pairs begins where the next one does: the last record beginning at or before a pair
        # is the one that holds it.)
        recs = np.searchsorted(self._first_pairs, pairs, side="right") - 1
        vals = values_at(self._data, self._pair_base[recs] + 5 * pairs + 1, "<i4")
        if ddis.is_bitfield(spec.ddi):
            vals = vals.view(np.uint32)
        # Carry each value forward to later records; where a record logs one DLV twice the later value wins.
        # Slot 0 of the lookup is NaN, for the records before the first value.
        last = np.zeros(self.n_records, dtype=np.int64)
        last[recs] = np.arange(1, len(recs) + 1)
        np.maximum.accumulate(last, out=last)
        lookup = np.empty(len(vals) + 1)
        lookup[0] = np.nan
        lookup[1:] = vals
        return lookup[last]

    def values(self, index: int) -> np.ndarray:
        """Values of DLV `index` in the DDI unit (raw x resolution), carried forward: an array of the caller's own.
        Not cached: a DLV read only for this (a raw column) is not kept twice, raw and scaled."""
        resolution = ddis.resolution(self.header.dlvs[index].ddi)
        if index in self._filled:
            return self._filled[index] * resolution
        values = self._fill(index)  # (of no one else: scaled in place)
        values *= resolution
        return values

    def utc_time(self, tc_zone: np.timedelta64 | None = None) -> np.ndarray | None:
        """Per-record UTC times (datetime64[ms]) where the log states them, NaT elsewhere; None when it states none.
        `tc_zone`: the UTC offset of the TC clock, when the task says it (a GPS time of day without its date is put
        on the day of the TC clock's UTC reading)."""
        gps_time = None
        if self.gps_ms is not None:
            gps_time = _gps_times(self.gps_ms, self.gps_days, self.tc_time, tc_zone)
        if self.fixed_utc is not None:
            # The start's own UTC offset says when it was; GPS time, where logged and valid, still comes first.
            fixed = np.full(self.n_records, self.fixed_utc)
            gps_time = fixed if gps_time is None else np.where(np.isnat(gps_time), fixed, gps_time)
        return gps_time


def parse_header(xml_path: Path) -> TimeLogHeader:
    """Parse a `TLGnnnnn.XML` header (defusedxml: no entities, no external references)."""
    root = xml_root(xml_path, TimeLogError, what="(time log header)")
    if root.tag != "TIM":
        raise TimeLogError(f"{xml_path.name}: header root is <{root.tag}>, expected <TIM>")
    time_attr = root.get("A")
    if time_attr:
        _fixed_time(xml_path.name, time_attr)  # a malformed start fails the header, which names it
    ptn_in_binary: list[tuple[str, str, str]] = []
    ptn_fixed: dict[str, float] = {}
    ptn = root.find("PTN")
    if ptn is not None:
        for attr, name, dtype in PTN_FIELDS:
            value = ptn.get(attr)
            if value is None:
                continue
            if value == "":
                ptn_in_binary.append((attr, name, dtype))
            else:
                # Written in ASCII, as any number of the file: Python's float() also reads "٥٤" (54), "1_0" and "nan"
                if not PLAIN_NUMBER.fullmatch(value.strip()):
                    raise TimeLogError(f"{xml_path.name}: PTN {attr}={value[:40]!r} is not a number")
                ptn_fixed[name] = float(value)
    dlvs: list[DLVSpec] = []
    for i, el in enumerate(root.findall("DLV")):
        if not HEX_DDI.fullmatch(el.get("A", "").strip()):
            raise TimeLogError(f"{xml_path.name}: DLV {i} has no valid DDI ({el.get('A', '')[:40]!r})")
        ddi = int(el.get("A", ""), 16)
        value = el.get("B")
        fixed = None
        if value not in (None, ""):
            if not PLAIN_INTEGER.fullmatch(value.strip()):
                raise TimeLogError(f"{xml_path.name}: DLV {i} fixed value {value[:40]!r} is not an integer")
            fixed = int(value)
            if not -(2**31) <= fixed < 2**31:  # a process data value is 32 bits (ISO 11783-10)
                raise TimeLogError(f"{xml_path.name}: DLV {i} fixed value {value[:40]!r} is not a 32-bit integer")
        pgn = el.get("D")
        dlvs.append(DLVSpec(i, ddi, el.get("C", ""), fixed, f"{pgn}:{el.get('E')}-{el.get('F')}" if pgn else None))
    if len(dlvs) > 255:
        raise TimeLogError(f"{xml_path.name}: {len(dlvs)} DLVs, at most 255 allowed")
    return TimeLogHeader(
        time_in_binary=time_attr == "",
        time_fixed=time_attr or None,
        ptn_in_binary=ptn_in_binary,
        ptn_fixed=ptn_fixed,
        dlvs=dlvs,
    )


def find_records(data: bytes, fixed_size: int) -> tuple[np.ndarray, int, bool]:
    """Start offsets of the complete records, the bytes they take, and whether the binary ends inside a record.

    Records have variable length, so this one pass is sequential; everything after it is vectorised. A last record
    cut short, wherever the cut falls (in its time or position, before its DLV count, among its DLV pairs), is left
    out whole: with only some of its pairs, the DLVs it lost would carry earlier values forward as if logged then.
    """
    size = len(data)
    offsets: list[int] = []
    append = offsets.append
    pos = 0
    count_at = fixed_size
    limit = size - fixed_size - 1
    while pos <= limit:
        end = pos + count_at + 1 + 5 * data[pos + count_at]
        if end > size:
            break
        append(pos)
        pos = end
    return np.asarray(offsets, dtype=np.int64), pos, pos < size


def parse_binary(name: str, header: TimeLogHeader, data: bytes) -> TimeLog:
    """Decode the binary records of one time log (see module docstring)."""
    fixed_size = header.record_fixed_size
    offsets, consumed, truncated = find_records(data, fixed_size)
    n = len(offsets)
    buf = np.frombuffer(data, dtype=np.uint8)

    pos = 0
    fixed_utc = None
    if header.time_in_binary:
        ms = values_at(data, offsets, "<u4").astype(np.int64)
        days = values_at(data, offsets + 4, "<u2").astype(np.int64)
        tc_time = EPOCH_1980 + (days * MS_PER_DAY + ms).astype("timedelta64[ms]")
        # A time of day past the day's end (a leap second aside; ValidTimeLogs logs one 24:00:00.000, the next
        # midnight) or the date 0xFFFF (not available, as for GPS dates) is no time: it made a record of 2159 or
        # of weeks later.
        tc_time[(ms >= MS_PER_DAY + 1000) | (days == 0xFFFF)] = np.datetime64("NaT", "ms")
        pos = 6
    elif header.time_fixed:
        clock, fixed_utc = _fixed_time(name, header.time_fixed)
        tc_time = np.full(n, clock)
    else:
        tc_time = np.full(n, np.datetime64("NaT", "ms"))

    ptn: dict[str, np.ndarray] = {}
    for _attr, fname, dtype in header.ptn_in_binary:
        ptn[fname] = values_at(data, offsets + pos, dtype)
        pos += np.dtype(dtype).itemsize
    for fname, value in header.ptn_fixed.items():
        # Fixed PTN values are written in display units (degrees, mm), not raw.
        ptn[fname] = np.full(n, value / _PTN_SCALE.get(fname, 1.0))

    gps_ms, gps_days = ptn.pop("gps_time", None), ptn.pop("gps_date", None)
    if gps_ms is None:
        gps_days = None  # (a GPS date without a time of day says no time)
    for fname in list(ptn):
        scale = _PTN_SCALE.get(fname)
        ptn[fname] = ptn[fname] * scale if scale is not None else ptn[fname].astype(np.float64)

    counts = buf[offsets + fixed_size].astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    first_pairs = ends - counts
    # Pair k of the log (counted over every record) is at byte pair_base[i] + 5 * k of its record i.
    pair_base = offsets + fixed_size + 1 - 5 * first_pairs
    indexes, logged = _pair_indexes(buf, pair_base, counts, ends)

    n_dlv = len(header.dlvs)
    if len(indexes) and int(indexes.max()) >= n_dlv:
        bad = int(np.argmax(indexes >= n_dlv))
        rec = int(np.searchsorted(ends, bad, side="right"))
        raise _index_error(name, rec, int(offsets[rec]), int(indexes[bad]), n_dlv)
    if truncated:
        _partial_record_check(name, data, n, consumed, fixed_size, n_dlv)
    return TimeLog(
        name=name,
        header=header,
        n_records=n,
        size_bytes=len(data),
        consumed_bytes=consumed,
        truncated_record=truncated,
        tc_time=tc_time,
        ptn=ptn,
        gps_ms=gps_ms,
        gps_days=gps_days,
        fixed_utc=fixed_utc,
        _data=data,
        _first_pairs=first_pairs,
        _pair_base=pair_base,
        _pair_indexes=indexes,
        _logged_counts=logged,
    )


# Records whose pairs are located at once when the DLV indexes are read: the byte offsets of a chunk's pairs are 8
# bytes each, so the whole log's at once took 1.4 times its size.
PAIR_CHUNK_RECORDS = 65_536


def _pair_indexes(
    buf: np.ndarray, pair_base: np.ndarray, counts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The DLV index (the first byte) of every (index, value) pair, in record order, and how many pairs each index
    has: pair k is at `pair_base[i] + 5 * k` of its record i, which has `counts[i]` pairs; `ends` their running
    total."""
    indexes = np.empty(int(ends[-1]) if len(ends) else 0, dtype=np.uint8)
    logged = np.zeros(256, dtype=np.int64)
    for start in range(0, len(counts), PAIR_CHUNK_RECORDS):
        chunk = slice(start, start + PAIR_CHUNK_RECORDS)
        first, last = int(ends[start] - counts[start]), int(ends[chunk][-1])
        at = 5 * np.arange(first, last, dtype=np.int64)
        at += np.repeat(pair_base[chunk], counts[chunk])
        indexes[first:last] = buf[at]
        logged += np.bincount(indexes[first:last], minlength=256)  # (counting takes 8 bytes a pair)
    return indexes, logged


def _index_error(name: str, record: int, byte: int, index: int, n_dlv: int) -> TimeLogError:
    return TimeLogError(
        f"{name}: record {record} (byte {byte}) logs DLV index {index} "
        f"but the header declares only {n_dlv} DLVs; the binary is corrupt or does not match its header"
    )


def _partial_record_check(name: str, data: bytes, record: int, start: int, fixed_size: int, n_dlv: int) -> None:
    """The partial last record is not read, but the DLV indexes of its complete pairs are checked: an index the
    header does not declare means bytes that are no record (garbage over the end), corruption, not a log cut short."""
    count_at = start + fixed_size
    if count_at >= len(data):
        return
    complete = min(data[count_at], (len(data) - count_at - 1) // 5)
    for pair in range(complete):
        index = data[count_at + 1 + 5 * pair]
        if index >= n_dlv:
            raise _index_error(name, record, start, index, n_dlv)


def clock_reading(value: str) -> tuple[np.datetime64, np.timedelta64 | None]:
    """A time the task wrote (a TIM's or ASP's A, ISO 8601): the TC clock's reading and, when the text carries
    one (`-05:00`, `+0100`, `Z`), its UTC offset. ValueError when it is no ISO 8601 date and time."""
    moment = datetime.fromisoformat(value.strip())
    offset = moment.utcoffset()
    clock = np.datetime64(moment.replace(tzinfo=None), "ms")
    return clock, (None if offset is None else np.timedelta64(offset // timedelta(milliseconds=1), "ms"))


def _fixed_time(name: str, value: str) -> tuple[np.datetime64, np.datetime64 | None]:
    """A fixed TIM start (A with a value): the TC clock's reading and, when the value carries a UTC offset, the UTC
    instant it names (outside the years 1-9999 too: such a time is dropped where it is written out)."""
    try:
        clock, offset = clock_reading(value)
    except ValueError as exc:
        raise TimeLogError(f"{name}: the fixed start time TIM A={value!r} is not an ISO 8601 date and time") from exc
    return clock, (None if offset is None else clock - offset)


def _gps_placeholder(gps: np.ndarray, tc_time: np.ndarray) -> bool:
    """Whether the GPS times as logged (`gps`: of the records with a valid one; time of day, or date and time) are a
    placeholder: one value throughout, or in more than half of the records (at least three), while the TC clock
    moves (SingleDPD logs H = 0 throughout). Judged on the logged values, not on the stamps made of them: a time of
    day without its date is put on the TC clock's day, so a placeholder logged across noon became two midnights, and
    one record's bad clock made it two values; either passed for a real GPS time."""
    if len(gps) < 2 or len(np.unique(tc_time[~np.isnat(tc_time)])) < 2:
        return False
    top = np.unique(gps, return_counts=True)[1].max()
    return bool(top == len(gps) or (top >= 3 and 2 * top > len(gps)))


def _gps_times(
    ms: np.ndarray, days: np.ndarray | None, tc_time: np.ndarray, tc_zone: np.timedelta64 | None
) -> np.ndarray:
    """GPS UTC timestamps; invalid ones NaT. Without a GPS date, the date is the TC clock's, read in UTC when its
    zone is known (`tc_zone`), and corrected across midnight: a GPS time of day more than half a day from the
    clock's is of the day before or after. (Compared with the local clock instead, a zone of +12:00 or more put every
    morning record a day late: 08:03 at +12:00 is 20:03 UTC of the day before, more than half a day from 08:03.)"""
    ms64 = ms.astype(np.int64)
    valid = ms64 < MS_PER_DAY
    clock = tc_time if tc_zone is None else tc_time - tc_zone  # the TC clock in UTC, as near as is known
    if days is not None:
        d64 = days.astype(np.int64)
        valid &= (d64 > 0) & (d64 != 0xFFFF)
        stamp = EPOCH_1980 + (d64 * MS_PER_DAY + ms64).astype("timedelta64[ms]")
    else:
        if np.isnat(clock).all():
            return np.full(len(ms64), np.datetime64("NaT", "ms"))
        tc_ms = (clock - EPOCH_1980).astype(np.int64)
        tc_day = tc_ms // MS_PER_DAY
        diff = ms64 - (tc_ms - tc_day * MS_PER_DAY)
        day = tc_day - (diff > MS_PER_DAY // 2) + (diff < -MS_PER_DAY // 2)
        stamp = EPOCH_1980 + (day * MS_PER_DAY + ms64).astype("timedelta64[ms]")
        valid &= ~np.isnat(clock)
    stamp = np.where(valid, stamp, np.datetime64("NaT", "ms"))
    if _gps_placeholder(ms64[valid] if days is None else (d64 * MS_PER_DAY + ms64)[valid], tc_time[valid]):
        return np.full(len(ms64), np.datetime64("NaT", "ms"))
    both = valid & ~np.isnat(clock)
    if both.any():
        offset = np.median((stamp[both] - clock[both]).astype(np.int64))
        if abs(offset) > GPS_TC_MAX_OFFSET_MS and not (_clock_unset(clock[both]) and not _clock_unset(stamp[both])):
            # Further apart than any time zone: the GPS date is wrong (CNH sample: one day behind), so the
            # caller falls back on the TC clock; unless that clock was never set and the GPS's date is one a clock
            # can read (a TC clock at 2000-01-01 dated a 2024 harvest there, and said the GPS time was unusable).
            return np.full(len(ms64), np.datetime64("NaT", "ms"))
    return stamp


def gps_tc_apart(gps_time: np.ndarray, tc_time: np.ndarray) -> np.timedelta64 | None:
    """How far the TC clock reads from GPS time, when further apart than any time zone (a TC clock never set, whose
    GPS time `_gps_times` kept); None when they agree as clocks of one time zone may."""
    both = ~np.isnat(gps_time) & ~np.isnat(tc_time)
    if not both.any():
        return None
    offset = np.median((tc_time[both] - gps_time[both]).astype(np.int64))
    return np.timedelta64(int(offset), "ms") if abs(offset) > GPS_TC_MAX_OFFSET_MS else None


def _clock_unset(readings: np.ndarray) -> bool:
    """Whether clock `readings` are those of a clock never set: their median before CLOCK_SET_FROM or over a day
    ahead of now."""
    median = np.datetime64(int(np.median(readings.astype(np.int64))), "ms")
    now = np.datetime64(datetime.now(UTC).replace(tzinfo=None), "ms")  # (naive UTC, as the logs' times)
    return bool(median < CLOCK_SET_FROM or median > now + np.timedelta64(1, "D"))


def read_time_log(xml_path: Path, bin_path: Path) -> TimeLog:
    """Read one time log (header XML + binary)."""
    header = parse_header(xml_path)
    try:
        data = bin_path.read_bytes()
    except OSError as exc:
        raise TimeLogError(f"{bin_path.name}: cannot read the binary ({exc.strerror})") from exc
    return parse_binary(xml_path.stem, header, data)
