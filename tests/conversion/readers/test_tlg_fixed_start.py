"""A time log whose header fixes the start time (TIM A with a value) for all its records, on the real SingleDPD
export rewritten so: a start written with a UTC offset is that UTC instant; one that is no date and time fails the
data set with the reason, never as an internal error."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from conversion.readers import UnreadableDataset
from tests.conversion.readers.sample_variants import fixed_start_time_log, read_one_task, zone_task_times

pytestmark = pytest.mark.embedded


def _variant(original: Path, dest: Path, start: str, *, task_zone: str = "") -> Path:
    """SingleDPD with TLG00001 fixed to `start`; `task_zone` is appended to the task's TIM/ASP times in
    TASKDATA.XML (the zone the reader shifts the TC clock by)."""
    shutil.copytree(original, dest)
    xml, binary = fixed_start_time_log(original / "TLG00001.XML", original / "TLG00001.BIN", start)
    (dest / "TLG00001.XML").write_bytes(xml)
    (dest / "TLG00001.BIN").write_bytes(binary)
    zone_task_times(dest / "TASKDATA.XML", task_zone)
    return dest / "TASKDATA.XML"


@pytest.mark.parametrize(
    ("start", "task_zone"),
    [
        ("2022-10-19T16:03:35-05:00", ""),  # the log's own offset, the task's times without zone
        ("2022-10-19T16:03:35-05:00", "-05:00"),  # both say the zone: it is applied once
        ("2022-10-19T21:03:35Z", ""),
        ("2022-10-19T23:03:35.000+02:00", ""),
        ("2022-10-19T16:03:35", "-05:00"),  # no offset: TC clock time, in the task's zone as before
    ],
)
def test_a_fixed_start_is_the_utc_time_of_every_point(single_dpd, tmp_path, start, task_zone):
    # Given the SingleDPD task, its time log rewritten to one fixed start that is 21:03:35 UTC
    original = read_one_task(single_dpd / "TASKDATA.XML")
    taskdata = _variant(single_dpd, tmp_path / "fixed", start, task_zone=task_zone)
    # When it is read
    table = read_one_task(taskdata)
    # Then every point has that UTC time, and the points are the ones the log records
    assert (table.columns["timestamp"] == np.datetime64("2022-10-19T21:03:35", "ms")).all()
    assert len(table) == len(original)
    assert sorted(zip(table.columns["lon"], table.columns["lat"], strict=True)) == sorted(
        zip(original.columns["lon"], original.columns["lat"], strict=True)
    )


@pytest.mark.parametrize("start", ["19.10.2022 16:03:35", "2022-10-19T25:03:35-05:00", "2022-10-19T16:03:35-05:"])
def test_a_fixed_start_that_is_no_date_and_time_fails_the_data_set_with_the_reason(single_dpd, tmp_path, start):
    taskdata = _variant(single_dpd, tmp_path / "bad", start)
    with pytest.raises(UnreadableDataset) as failure:
        read_one_task(taskdata)
    assert "TLG00001.XML: the fixed start time TIM A=" in str(failure.value)
    assert repr(start) in str(failure.value)


@pytest.mark.parametrize("start", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:59:00-01:00"])
def test_a_fixed_start_outside_the_utc_calendar_is_read_without_a_time(single_dpd, tmp_path, start):
    # Given a log fixed to a start that is an ISO 8601 time, but in UTC before the year 1 or after 9999 (it failed
    # the data set as "not an ISO 8601 date and time")
    original = read_one_task(single_dpd / "TASKDATA.XML")
    taskdata = _variant(single_dpd, tmp_path / "edge", start)
    # When it is read
    table = read_one_task(taskdata)
    # Then its points are read, and have no time
    assert len(table) == len(original)
    assert np.isnat(table.columns["timestamp"]).all()
    assert table.start is None and table.end is None


def test_a_clock_at_the_year_1_read_in_its_zone_gives_points_without_a_time(single_dpd, tmp_path):
    # Given a log fixed to a start without an offset at the first hour of the year 1, in a task written at +01:00:
    # its clock in UTC is the year 0 (the file failed as an internal error: no Python date holds it)
    taskdata = _variant(single_dpd, tmp_path / "year-1", "0001-01-01T00:30:00", task_zone="+01:00")
    # When it is read
    table = read_one_task(taskdata)
    # Then its points have no time
    assert len(table) and np.isnat(table.columns["timestamp"]).all()
