"""The zone of the task controller's clock, on the real SingleDPD export rewritten: a GPS time of day without its
date is put on the right UTC day in every zone (+12:00 and beyond too), and a task whose sessions were written with
two offsets (a change to summer time between them) reads each log in its own."""

import shutil
import struct

import numpy as np
import pytest

from tests.conversion.readers.conftest import walk_tlg
from tests.conversion.readers.sample_variants import read_one_task, rewritten_time_log, zone_task_times

pytestmark = pytest.mark.embedded

HOUR_MS, DAY_MS = 3_600_000, 86_400_000
EPOCH_1980 = np.datetime64("1980-01-01T00:00:00", "ms")


def _clock(record: dict) -> np.datetime64:
    return EPOCH_1980 + np.timedelta64(record["tc_day"] * DAY_MS + record["tc_ms"], "ms")


def _shift(record: dict, ms: int) -> None:
    total = record["tc_day"] * DAY_MS + record["tc_ms"] + ms
    record["tc_day"], record["tc_ms"] = divmod(total, DAY_MS)


@pytest.mark.parametrize(
    ("zone", "zone_hours", "clock_shift_hours", "utc_day"),
    [
        ("+13:00", 13, 0, "2022-10-19"),  # 16:03 at +13:00 is 03:03 UTC the same day (was a day late)
        ("+12:00", 12, -8, "2022-10-18"),  # 08:03 at +12:00 is 20:03 UTC the day before (was a day late)
        ("+14:00", 14, -8, "2022-10-18"),
        ("-05:00", -5, 7, "2022-10-20"),  # 23:03 at -05:00 is 04:03 UTC the day after
        ("+05:30", 5.5, 0, "2022-10-19"),
        ("-11:00", -11, 0, "2022-10-20"),
        # ISO 8601's basic form of the offset, which a fixed TIM start already took: was read as no zone at all
        ("+1300", 13, 0, "2022-10-19"),
    ],
)
def test_a_gps_time_of_day_without_its_date_is_on_the_right_utc_day(
    single_dpd, tmp_path, zone, zone_hours, clock_shift_hours, utc_day
):
    # Given SingleDPD's log (GPS time of day, PTN H, without a date), its TC clock moved by `clock_shift_hours`,
    # the task's times written in `zone`, and each record's GPS time what the clock says in UTC plus 1.5 s
    folder = tmp_path / "zoned"
    shutil.copytree(single_dpd, folder)
    zone_task_times(folder / "TASKDATA.XML", zone)
    zone_ms = int(zone_hours * HOUR_MS)

    def edit(record):
        _shift(record, int(clock_shift_hours * HOUR_MS))
        record["ptn"]["H"] = (record["tc_ms"] - zone_ms + 1500) % DAY_MS

    binary = rewritten_time_log(single_dpd / "TLG00001.XML", single_dpd / "TLG00001.BIN", edit)
    (folder / "TLG00001.BIN").write_bytes(binary)
    records = walk_tlg(folder / "TLG00001.XML", folder / "TLG00001.BIN")["records"]
    # When it is read
    table = read_one_task(folder / "TASKDATA.XML")
    # Then every point's time is the GPS time on the UTC day of the clock's reading
    expected = np.array([_clock(r) - np.timedelta64(zone_ms - 1500, "ms") for r in records])
    assert str(expected[0])[:10] == utc_day
    got = table.columns["timestamp"].tolist()
    assert len(got) > 100 and set(got) <= set(expected.tolist())
    assert {str(t)[:10] for t in got} == {utc_day}


def test_each_log_is_read_in_the_zone_its_session_was_written_in(single_dpd, tmp_path):
    # Given SingleDPD's task at +01:00, and a second session of it an hour and a half later, written at +02:00 (the
    # clock put forward for summer time between them), whose log is the first one again on the later clock
    folder = tmp_path / "two-zones"
    shutil.copytree(single_dpd, folder)
    taskdata = folder / "TASKDATA.XML"
    zone_task_times(taskdata, "+01:00")
    text = taskdata.read_text()
    first_log = '<TLG A="TLG00001" B="14717" C="1"/>'
    assert first_log in text
    second = '<TIM A="2022-10-19T17:33:00+02:00" B="2022-10-19T17:36:00+02:00" D="4"/><TLG A="TLG00002"/>'
    taskdata.write_text(text.replace(first_log, first_log + second))
    later = 90 * 60_000
    binary = rewritten_time_log(single_dpd / "TLG00001.XML", single_dpd / "TLG00001.BIN", lambda r: _shift(r, later))
    shutil.copy(single_dpd / "TLG00001.XML", folder / "TLG00002.XML")
    (folder / "TLG00002.BIN").write_bytes(binary)
    records = walk_tlg(single_dpd / "TLG00001.XML", single_dpd / "TLG00001.BIN")["records"]
    # When it is read
    table = read_one_task(taskdata)
    # Then the first session's points are its clock less an hour, the second's their clock less two: UTC (the GPS
    # time of this export is a placeholder, so the clock is read)
    first = {_clock(r) - np.timedelta64(HOUR_MS, "ms") for r in records}
    second = {_clock(r) + np.timedelta64(later - 2 * HOUR_MS, "ms") for r in records}
    times = set(table.columns["timestamp"].tolist())
    assert times & {t.astype(object) for t in first}
    assert times & {t.astype(object) for t in second}
    assert times <= {t.astype(object) for t in first | second}


def _single_dpd_rewritten(single_dpd, tmp_path, edit):
    folder = tmp_path / "rewritten"
    shutil.copytree(single_dpd, folder)
    binary = rewritten_time_log(single_dpd / "TLG00001.XML", single_dpd / "TLG00001.BIN", edit)
    (folder / "TLG00001.BIN").write_bytes(binary)
    return folder, walk_tlg(folder / "TLG00001.XML", folder / "TLG00001.BIN")["records"]


def test_a_placeholder_gps_time_logged_across_noon_is_no_clock_either(single_dpd, tmp_path):
    """SingleDPD's GPS time is 0 throughout, without a date. Put on the TC clock's day, it became midnight of one day
    before noon and of the next after it: two values, which passed for a real GPS time. Every point was stamped one
    of two midnights, with no warning."""
    # Given the log's clock moved so that it runs across noon (11:59:20 on)
    records = walk_tlg(single_dpd / "TLG00001.XML", single_dpd / "TLG00001.BIN")["records"]
    to_noon = 12 * HOUR_MS - 40_000 - records[0]["tc_ms"]
    folder, records = _single_dpd_rewritten(single_dpd, tmp_path, lambda r: _shift(r, to_noon))
    assert {r["ptn"]["H"] for r in records} == {0}
    # When it is read
    table = read_one_task(folder / "TASKDATA.XML")
    # Then the times are the TC clock's, and the table says the GPS time was not used
    times = table.columns["timestamp"]
    assert set(times.tolist()) <= {_clock(r).astype(object) for r in records}
    assert len(np.unique(times)) > 300 and str(times.min())[11:19] == "11:59:20"
    assert any("GPS time unusable" in warning for warning in table.warnings)


@pytest.mark.parametrize("corrupt", ["tc_day", "tc_ms"])
def test_a_record_whose_clock_is_not_available_has_no_time(single_dpd, tmp_path, corrupt):
    """A TC date of 0xFFFF (not available, as for GPS dates) made that record's time 2159; a time of day of
    0xFFFFFFFF one weeks later. Either also gave the placeholder GPS time a second value (it passed for a real one):
    every other point was stamped midnight."""
    # Given one record's TC date or time of day set to all ones
    bad = {"tc_day": 0xFFFF, "tc_ms": 0xFFFFFFFF}[corrupt]
    seen = []

    def edit(record):
        seen.append(record)
        if len(seen) == 50:
            record[corrupt] = bad

    folder, records = _single_dpd_rewritten(single_dpd, tmp_path, edit)
    # When it is read
    table = read_one_task(folder / "TASKDATA.XML")
    # Then every time is within the log's own clock readings: none of 2159, none a midnight
    clocks = {_clock(r).astype(object) for i, r in enumerate(records) if i != 49}
    times = table.columns["timestamp"]
    assert set(times[~np.isnat(times)].tolist()) <= clocks
    assert len(np.unique(times[~np.isnat(times)])) > 300


def test_positions_at_0_0_and_off_the_globe_are_told_apart(single_dpd, tmp_path):
    """A latitude of 200 degrees was told as "no position (0, 0 is a receiver without a fix)"."""
    seen = []

    def edit(record):
        seen.append(record)
        if len(seen) % 10 == 0:
            record["ptn"]["A"] = 2_000_000_000  # 200 degrees north
        elif len(seen) % 10 == 5:
            record["ptn"]["A"] = record["ptn"]["B"] = 0

    folder, records = _single_dpd_rewritten(single_dpd, tmp_path, edit)
    table = read_one_task(folder / "TASKDATA.XML")
    total, off, zero = len(records), len(records) // 10, (len(records) + 5) // 10
    assert f"{zero} of {total} points left out: no position (0, 0 is a receiver without a fix)." in table.warnings
    assert (
        f"{off} of {total} points left out: no position on the globe (coordinates that are not numbers, or outside "
        "longitude -180..180, latitude -90..90)." in table.warnings
    )
    assert len(table) == total - off - zero


def _days_since_1980(day: str) -> int:
    return int((np.datetime64(day) - np.datetime64("1980-01-01")).astype(int))


def _hand_clocked_task(
    folder, day: str, clock_ms: list[int], tims: str = "", gps_ms: list[int] | None = None, gps_day: str | None = None
):
    """A task of one log whose records read the TC clock `clock_ms` (ms of the day) on `day`, GPS time of day
    (PTN H) `gps_ms` if given, and the GPS date (PTN I) `gps_day` if given, its task's sessions `tims` (TIM
    elements): the table read."""
    gps = (' H=""' if gps_ms is not None else "") + (' I=""' if gps_day is not None else "")
    (folder / "TLG00001.xml").write_text(f'<TIM A="" D="4"><PTN A="" B=""{gps}/><DLV A="0054" C="DET-1"/></TIM>')
    tc_day = _days_since_1980(day)
    data = b""
    for index, ms in enumerate(clock_ms):
        data += struct.pack("<IHii", ms, tc_day, round((48 + index * 1e-5) * 1e7), 11 * 10**7)
        data += struct.pack("<I", gps_ms[index]) if gps_ms is not None else b""
        data += struct.pack("<H", _days_since_1980(gps_day)) if gps_day is not None else b""
        data += bytes([1]) + struct.pack("<Bi", 0, 500_000)
    (folder / "TLG00001.bin").write_bytes(data)
    (folder / "TASKDATA.XML").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="3" '
        f'DataTransferOrigin="1"><TSK A="TSK1" B="Harvest" G="4">{tims}<TLG A="TLG00001"/></TSK></ISO11783_TaskData>'
    )
    return read_one_task(folder / "TASKDATA.XML")


def test_a_log_takes_the_zone_of_the_latest_session_begun_whatever_the_order_they_are_written_in(tmp_path):
    """The session after the change to winter time written first: a log at 08:00:10 of November 1st is in the
    +01:00 session begun at 08:00, not the +02:00 one of October."""
    tims = '<TIM A="2023-11-01T08:00:00+01:00" D="4"/><TIM A="2023-10-20T08:00:00+02:00" D="4"/>'
    clock = [(8 * 3600 + 10 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, "2023-11-01", clock, tims)
    assert str(table.columns["timestamp"][0]) == "2023-11-01T07:00:10.000"


def test_a_log_begun_a_little_before_its_session_takes_that_sessions_zone(tmp_path):
    """The first record 30 s before the start its task wrote (clocks of the task and its log a little apart): the
    log is that session's (+01:00), not the October one's (+02:00)."""
    tims = '<TIM A="2023-10-20T08:00:00+02:00" D="4"/><TIM A="2023-11-01T08:00:00+01:00" D="4"/>'
    clock = [(8 * 3600 - 30 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, "2023-11-01", clock, tims)
    assert str(table.columns["timestamp"][0]) == "2023-11-01T06:59:30.000"


def test_a_gps_time_of_day_past_utc_midnight_is_on_the_next_utc_day(tmp_path):
    """No zone written: the TC clock reads 20:00 (local, five hours behind UTC) while the GPS time of day says 01:00,
    UTC's next day. The GPS time is the point's time, on that next day; it was judged no clock (a day off)."""
    clock = [(20 * 3600 + t) * 1000 for t in range(3)]
    gps = [(1 * 3600 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, "2023-10-18", clock, gps_ms=gps)
    assert [str(t) for t in table.columns["timestamp"]] == [f"2023-10-19T01:00:0{t}.000" for t in range(3)]
    assert not any("GPS" in warning for warning in table.warnings), table.warnings


@pytest.mark.parametrize("tc_day", ["2000-01-01", "1980-01-06", "2099-05-01"], ids=["2000", "1980", "future"])
def test_a_tc_clock_never_set_gives_way_to_the_gps_time(tmp_path, tc_day):
    """GPS date and time valid and moving, the TC clock at a controller's default date (or years ahead): the file was
    dated by the TC clock, and said the GPS time was unusable (constant or inconsistent), which it was not."""
    clock = [(5 * 60 + t) * 1000 for t in range(3)]
    gps = [(10 * 3600 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, tc_day, clock, gps_ms=gps, gps_day="2024-07-01")
    assert [str(t) for t in table.columns["timestamp"]] == [f"2024-07-01T10:00:0{t}.000" for t in range(3)]
    assert not any("GPS time unusable" in warning for warning in table.warnings), table.warnings
    [said] = [warning for warning in table.warnings if "TC clock" in warning]
    assert said.endswith("GPS time (a clock never set?); GPS time used") and ("behind" in said) == (tc_day < "2024")


def test_a_gps_date_a_day_off_a_set_tc_clock_still_gives_way_to_it(tmp_path):
    """Both plausible, a day apart (the CNH sample's GPS date, one day behind): the TC clock is read, as before."""
    clock = [(10 * 3600 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, "2024-07-02", clock, gps_ms=clock, gps_day="2024-07-01")
    assert [str(t) for t in table.columns["timestamp"]] == [f"2024-07-02T10:00:0{t}.000" for t in range(3)]
    assert any("GPS time unusable" in warning for warning in table.warnings), table.warnings


def test_a_gps_date_never_set_does_not_replace_a_tc_clock_never_set(tmp_path):
    """Both clocks at defaults (the TC at 2000-01-01, a GPS without a fix at 1980-01-06): the GPS date is no better."""
    clock = [(10 * 3600 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, "2000-01-01", clock, gps_ms=clock, gps_day="1980-01-06")
    assert [str(t)[:10] for t in table.columns["timestamp"]] == ["2000-01-01"] * 3


def test_a_tc_clock_days_ahead_of_now_gives_way_to_the_gps_time(tmp_path):
    """More than a day ahead of now is a clock never set (a day ahead is a zone and a late upload at most)."""
    today = np.datetime64("today", "D")
    tc_day, gps_day = str(today + np.timedelta64(3, "D")), str(today - np.timedelta64(1, "D"))
    clock = [(10 * 3600 + t) * 1000 for t in range(3)]
    table = _hand_clocked_task(tmp_path, tc_day, clock, gps_ms=clock, gps_day=gps_day)
    assert [str(t)[:10] for t in table.columns["timestamp"]] == [gps_day] * 3
