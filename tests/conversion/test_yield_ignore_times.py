"""Yield lead and lag ignore times (ISO 11783-11 DDI 0x0104 / 0x0103): the records of a harvest whose yield falls
inside the time the machine says its yield sensor is unreliable after the header goes down or comes up.

No sample logs either DDI, so the tests give them to the real ValidTimeLogs harvest (its work state, DDI 0x008D,
goes on and off hundreds of times): as a value in a time log's header, and as a device property."""

import shutil
from xml.etree import ElementTree

import numpy as np
import pytest

from conversion.readers import get_reader
from conversion.readers.base import YIELD_IGNORED_COLUMN, Dataset
from conversion.readers.isoxml.ignore_times import yield_ignored
from conversion.standardize import standardize, summary
from conversion.standardize.cleaning import YIELD_IGNORED_REASON
from tests.conversion.readers.conftest import walk_tlg
from tests.conversion.test_flow_yield import VALID_TIMELOGS

pytestmark = [pytest.mark.embedded]


def read_sav(folder):
    tables = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
    return next(table for table in tables if table.name == "SAV")


def expected_marks(folder, *, to: int, window_ms: int, logs=("TLG00001",)) -> int:
    """Straight from the logs' bytes: how many records lie within `window_ms` of a change of the work state to `to`
    (from the other state; 2 and 3 are no state), counting from the change, in record order."""
    return sum(_log_marks(folder, log, to, window_ms) for log in logs)


def _log_marks(folder, log: str, to: int, window_ms: int) -> int:
    header = ElementTree.parse(folder / f"{log}.xml").getroot()
    work_state = [dlv.get("A") for dlv in header.findall("DLV")].index("008D")
    records = walk_tlg(folder / f"{log}.xml", folder / f"{log}.bin")["records"]
    times, states, state = [], [], None
    for record in records:
        state = dict(record["values"]).get(work_state, state)
        times.append(record["tc_day"] * 86_400_000 + record["tc_ms"])
        states.append(state)
    marked, previous = set(), None
    for index, current in enumerate(states):
        if current not in (0, 1):
            continue
        if previous == 1 - to and current == to:
            follow = index
            while follow < len(records) and times[index] <= times[follow] < times[index] + window_ms:
                marked.add(follow)
                follow += 1
        previous = current
    return len(marked)


@pytest.fixture
def variant(samples_dir, tmp_path):
    folder = tmp_path / "ValidTimeLogs"
    shutil.copytree(samples_dir / VALID_TIMELOGS, folder)
    return folder


def test_a_lead_time_in_the_log_header_drops_the_yield_after_each_header_down(samples_dir, variant):
    # Given the harvest's first time log saying its lead ignore time is 3 s (a fixed value in its header)
    header = variant / "TLG00001.xml"
    header.write_text(header.read_text().replace("</TIM>", '    <DLV A="0104" B="3000" C="DET-1"/>\n</TIM>'))
    as_logged = read_sav(samples_dir / VALID_TIMELOGS)

    # When it is read and cleaned
    table = read_sav(variant)
    cleaned, report = standardize(table)

    # Then the records of the 3 s after each change from off to on are marked, as the bytes give them
    marks = expected_marks(variant, to=1, window_ms=3000)
    assert marks > 100
    assert int(np.nansum(table.columns[YIELD_IGNORED_COLUMN] == 1)) == marks
    # (the warning counts those in work: the others are not used anyway)
    in_work = int(((table.columns[YIELD_IGNORED_COLUMN] == 1) & (table.columns["recordingStatus"] == 1)).sum())
    assert any(f"the yield of {in_work:,} records is inside the machine's lead or lag" in w for w in table.warnings)
    # and cleaning drops them under their own reason (but those out of work again, the rule before), no other point
    marked = np.asarray(table.columns[YIELD_IGNORED_COLUMN]) == 1
    assert report.reasons[YIELD_IGNORED_REASON] == int((marked & (table.columns["recordingStatus"] == 1)).sum())
    assert YIELD_IGNORED_COLUMN not in as_logged.columns
    assert len(cleaned) == len(standardize(as_logged.select(~marked))[0])
    # The mark is no property of the points
    assert YIELD_IGNORED_COLUMN not in cleaned.columns
    assert YIELD_IGNORED_COLUMN not in summary(cleaned)["properties"]


def test_a_lag_time_of_the_device_marks_the_records_after_each_header_up(variant):
    # Given the combine's description (its DET-1, which logs the work state) with a lag ignore time of 2 s
    add_device_property(variant, "0103", "2000")
    taskdata = variant / "TASKDATA.XML"

    table = read_sav(variant)

    # Then the records of the 2 s after each change from on to off are marked, in each of the task's logs
    logs = [tlg.get("A") for tlg in ElementTree.parse(taskdata).getroot().findall("TSK[@A='TSK1']/TLG")]
    marks = expected_marks(variant, to=0, window_ms=2000, logs=logs)
    assert marks > 50
    assert int(np.nansum(table.columns[YIELD_IGNORED_COLUMN] == 1)) == marks
    # those are out of work already: cleaning counts them under recordingStatus Off, the first rule they fail
    _, report = standardize(table)
    assert report.reasons.get(YIELD_IGNORED_REASON, 0) < report.reasons["recordingStatus Off"]


def add_device_property(folder, ddi: str, value: str) -> None:
    """DET-1 (which logs the work state) references a new DPT `ddi` of `value`."""
    taskdata = folder / "TASKDATA.XML"
    text = taskdata.read_text()
    text = text.replace('<DOR A="20"/>', '<DOR A="20"/>\n            <DOR A="990"/>', 1)
    text = text.replace('<DPD A="19"', f'<DPT A="990" B="{ddi}" C="{value}" E="ignore time"/>\n        <DPD A="19"')
    taskdata.write_text(text)


def test_device_ignore_times_outside_the_ddis_range_are_none(samples_dir, variant):
    add_device_property(variant, "0104", "1" + "0" * 20)
    table = read_sav(variant)
    assert YIELD_IGNORED_COLUMN not in table.columns
    assert len(table) == len(read_sav(samples_dir / VALID_TIMELOGS))


def test_a_device_description_whose_elements_are_each_others_parent_is_read(samples_dir, variant):
    # DET-1 is made the child of its own child (object 2, whose parent is element 1): the walk up ends
    taskdata = variant / "TASKDATA.XML"
    text = taskdata.read_text()
    assert text.count('<DET A="DET-1" B="1" C="1" D="DeviceElement" E="0" F="0">') == 1
    taskdata.write_text(text.replace('D="DeviceElement" E="0" F="0">', 'D="DeviceElement" E="0" F="2">'))
    assert len(read_sav(variant)) == len(read_sav(samples_dir / VALID_TIMELOGS))


def at(*seconds):
    return np.array([np.datetime64("2024-07-01T10:00:00") + np.timedelta64(int(s * 1000), "ms") for s in seconds])


def test_the_windows_start_at_real_changes_of_state_and_end_with_the_time():
    times = at(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    state = np.array([0, 1, 1, 1, 0, 3, 1, 1, 1, 1], dtype=float)
    lead = np.full(10, 2500.0)
    # Off to on at 1 s (marks 1, 2, 3 s) and, through a record of no state, at 6 s (marks 6, 7, 8 s)
    assert yield_ignored(times, state, lead, None).tolist() == [0, 1, 1, 1, 0, 0, 1, 1, 1, 0]
    # On to off at 4 s, for 1.5 s: 4 and the no-state record at 5 s
    assert yield_ignored(times, state, None, np.full(10, 1500.0)).tolist() == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    # A log that starts in work has no change; nor does one of no positive or logged time
    assert not yield_ignored(times, np.ones(10), lead, lead).any()
    assert not yield_ignored(times, state, np.full(10, np.nan), np.zeros(10)).any()


def test_a_window_ends_where_the_clock_steps_back_or_has_no_time():
    huge = np.full(6, 2_147_483_647.0)  # the DDI's largest value: about 25 days
    state = np.array([0, 1, 1, 1, 1, 1], dtype=float)
    stepping_back = at(0, 10, 11, 5, 12, 13)
    assert yield_ignored(stepping_back, state, huge, None).tolist() == [0, 1, 1, 0, 0, 0]
    no_time = at(0, 1, 2, 3, 4, 5)
    no_time[3] = np.datetime64("NaT")
    assert yield_ignored(no_time, state, huge, None).tolist() == [0, 1, 1, 0, 0, 0]


def test_long_windows_over_many_changes_mark_up_to_the_end_of_the_clocks_run():
    # 200,000 records 0.2 s apart whose state changes at every record, the longest lead time, and one step back
    n = 200_000
    times = np.datetime64("2024-07-01T10:00:00") + np.arange(n) * np.timedelta64(200, "ms")
    times[150_000:] -= np.timedelta64(10, "s")
    state = (np.arange(n) % 2).astype(float)
    marked = yield_ignored(times, state, np.full(n, 2_147_483_647.0), None)
    # From the first change from off to on (record 1) to the step back; from the next one after it to the end
    assert not marked[0] and marked[1:150_000].all() and not marked[150_000] and marked[150_001:].all()
    state[149_999:150_002] = 3  # no state around the step back: the first change after it is at 150,003
    marked = yield_ignored(times, state, np.full(n, 2_147_483_647.0), None)
    assert marked[1:150_000].all() and not marked[150_000:150_003].any() and marked[150_003:].all()


def test_a_device_time_fills_in_before_the_log_gives_its_own():
    times = at(0, 1, 2, 3, 4, 5, 6, 7)
    state = np.array([0, 1, 1, 0, 1, 1, 1, 1], dtype=float)
    logged = np.array([np.nan, np.nan, np.nan, 500, 500, 500, 500, 500])  # the DLV's first value at 3 s
    filled = np.where(np.isnan(logged), 1500.0, logged)  # as ignore_time_ms gives it with a DPT of 1.5 s
    assert yield_ignored(times, state, filled, None).tolist() == [0, 1, 1, 0, 1, 0, 0, 0]
