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
    assert any("lead or lag ignore time" in warning and f"{marks:,} records" in warning for warning in table.warnings)
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
    taskdata = variant / "TASKDATA.XML"
    text = taskdata.read_text()
    text = text.replace('<DOR A="20"/>', '<DOR A="20"/>\n            <DOR A="990"/>', 1)
    text = text.replace(
        '<DPD A="19"', '<DPT A="990" B="0103" C="2000" E="Yield lag ignore time"/>\n        <DPD A="19"'
    )
    taskdata.write_text(text)

    table = read_sav(variant)

    # Then the records of the 2 s after each change from on to off are marked, in each of the task's logs
    logs = [tlg.get("A") for tlg in ElementTree.parse(taskdata).getroot().findall("TSK[@A='TSK1']/TLG")]
    marks = expected_marks(variant, to=0, window_ms=2000, logs=logs)
    assert marks > 50
    assert int(np.nansum(table.columns[YIELD_IGNORED_COLUMN] == 1)) == marks
    # those are out of work already: cleaning counts them under recordingStatus Off, the first rule they fail
    _, report = standardize(table)
    assert report.reasons.get(YIELD_IGNORED_REASON, 0) < report.reasons["recordingStatus Off"]


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
