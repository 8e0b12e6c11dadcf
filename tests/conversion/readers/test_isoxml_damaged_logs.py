"""Damaged time logs in the real CCI export (ValidTimeLogs), copied to tmp_path and broken there: an empty binary, a
binary cut inside a record, a binary or header missing. The user is told which log and what was lost; the complete
records are all read and nothing is read from a partial one; a data set left with no point fails with the reason."""

import shutil
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from conversion.readers import Dataset, UnreadableDataset
from conversion.readers.isoxml import IsoxmlReader
from conversion.readers.isoxml.tlg import read_time_log
from tests.conversion.readers.conftest import walk_tlg

pytestmark = pytest.mark.embedded

# TLG00003 is the only log of task "zJY"; task "jk" has two, TLG00006 and TLG00007; TLG00001 is task "SAV"'s only one.
# Their headers log TC time and PTN A, B, D: 6 + 4 + 4 + 1 bytes before each record's DLV count.
FIXED_SIZE = 15


@pytest.fixture
def export(valid_timelogs, tmp_path) -> Path:
    """A copy of the whole CCI export, to damage."""
    return Path(shutil.copytree(valid_timelogs, tmp_path / "TASKDATA"))


def _read(folder: Path) -> tuple[IsoxmlReader, dict]:
    reader = IsoxmlReader()
    tables = reader.read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, folder.name))
    assert not reader.failed, "a task met an internal error"
    return reader, {table.name: table for table in tables}


def _valid_points(records: list[dict]) -> int:
    """Records the reader turns into points: those with a position other than (0, 0)."""
    return sum(1 for r in records if not (r["ptn"]["A"] == 0 and r["ptn"]["B"] == 0))


def test_an_empty_binary_is_named_and_the_other_log_of_its_task_is_read(export):
    # Given task jk's first log empty (0 bytes)
    (export / "TLG00006.bin").write_bytes(b"")
    # When the export is read
    reader, tables = _read(export)
    # Then the task says so, and its points are all those of its other log
    assert "TLG00006.bin is empty: no points logged" in tables["jk"].warnings
    assert len(tables["jk"]) == _valid_points(walk_tlg(export / "TLG00007.xml", export / "TLG00007.bin")["records"])
    assert reader.skipped == []


def test_a_task_whose_only_binary_is_empty_fails_alone_with_the_reason(export):
    # Given task SAV's only log empty
    (export / "TLG00001.bin").write_bytes(b"")
    # When the export is read
    reader, tables = _read(export)
    # Then that task fails, naming the empty log, and the others are read
    assert reader.skipped == [("SAV", "task SAV: no readable time log (TLG00001.bin is empty: no points logged)")]
    assert "SAV" not in tables and len(tables) == 18


def test_an_export_whose_every_binary_is_empty_is_unreadable(export):
    # Given every binary of the export empty
    for binary in export.glob("TLG*.bin"):
        binary.write_bytes(b"")
    # When read, then the data set fails, naming the empty logs
    with pytest.raises(UnreadableDataset) as failure:
        _read(export)
    reason = str(failure.value)
    assert reason.startswith("task SAV: no readable time log (TLG00001.bin is empty: no points logged)")
    assert "task jk: no readable time log (TLG00006.bin is empty: no points logged; TLG00007.bin is empty" in reason


@pytest.mark.parametrize(
    ("where", "into_record"),
    [
        ("inside its TC time", 3),
        ("inside its position", 6 + 5),
        ("before its DLV count", FIXED_SIZE),
        ("inside its first DLV pair", FIXED_SIZE + 1 + 2),
        ("inside its last DLV pair", None),  # one byte short of the record's end
    ],
)
def test_a_binary_cut_inside_a_record_keeps_every_complete_record(export, valid_timelogs, where, into_record):
    # Given TLG00003 cut inside record 800, which logs DLV values
    original = walk_tlg(valid_timelogs / "TLG00003.xml", valid_timelogs / "TLG00003.bin")["records"]
    kept = 800
    assert len(original[kept]["values"]) >= 1
    start, end = original[kept - 1]["end"], original[kept]["end"]
    cut = end - 1 if into_record is None else start + into_record
    assert start < cut < end
    data = (export / "TLG00003.bin").read_bytes()
    (export / "TLG00003.bin").write_bytes(data[:cut])

    # When the export is read
    reader, tables = _read(export)

    # Then the user is told which log lost how many bytes, and the 800 complete records are all points
    table = tables["zJY"]
    assert (
        f"TLG00003.bin ends inside a record: {cut - start} bytes at its end (a partial record) left unread, "
        "the 800 complete records before it read"
    ) in table.warnings, where
    assert len(table) == _valid_points(original[:kept])
    assert reader.skipped == []
    # And nothing is taken from the partial record: positions and every DLV are those of the first 800 records
    log = read_time_log(export / "TLG00003.xml", export / "TLG00003.bin")
    whole = read_time_log(valid_timelogs / "TLG00003.xml", valid_timelogs / "TLG00003.bin")
    assert log.n_records == kept and log.leftover_bytes == cut - start
    assert np.array_equal(log.lat, whole.lat[:kept]) and np.array_equal(log.lon, whole.lon[:kept])
    for spec in log.header.dlvs:
        assert np.array_equal(log.raw_values(spec.index), whole.raw_values(spec.index)[:kept], equal_nan=True)


def test_a_binary_cut_inside_its_first_record_fails_its_task_with_the_reason(export):
    # Given TLG00003, task zJY's only log, cut 3 bytes into its first record
    data = (export / "TLG00003.bin").read_bytes()
    (export / "TLG00003.bin").write_bytes(data[:3])
    # When read, then the task fails saying the log holds no complete record, and the others are read
    reader, tables = _read(export)
    assert reader.skipped == [
        (
            "zJY",
            "task zJY: no readable time log (TLG00003.bin ends inside its first record: its 3 bytes "
            "(a partial record) left unread, no points logged)",
        )
    ]
    assert "zJY" not in tables and len(tables) == 18


def test_garbage_after_a_cut_is_corruption_not_a_partial_record(export, valid_timelogs):
    # Given TLG00003 cut inside the DLV pairs of record 800 and filled up with 0xFF, which is no DLV index it declares
    original = walk_tlg(valid_timelogs / "TLG00003.xml", valid_timelogs / "TLG00003.bin")["records"]
    start = original[799]["end"]
    data = (export / "TLG00003.bin").read_bytes()
    (export / "TLG00003.bin").write_bytes(data[: start + FIXED_SIZE + 1] + b"\xff" * 12)
    # When read, then the log is refused as corrupt, naming the record, and its task fails alone
    reader, tables = _read(export)
    [(name, reason)] = reader.skipped
    assert name == "zJY"
    assert f"TLG00003: record 800 (byte {start}) logs DLV index 255 but the header declares only 26 DLVs" in reason
    assert len(tables) == 18


def test_a_missing_binary_is_named_and_the_other_log_of_its_task_is_read(export):
    (export / "TLG00006.bin").unlink()
    _reader, tables = _read(export)
    assert "TLG00006: binary file missing, log skipped" in tables["jk"].warnings
    assert len(tables["jk"]) == _valid_points(walk_tlg(export / "TLG00007.xml", export / "TLG00007.bin")["records"])


def test_a_binary_without_its_header_is_named_and_the_other_log_of_its_task_is_read(export):
    (export / "TLG00007.xml").unlink()
    _reader, tables = _read(export)
    assert "TLG00007: header XML file missing, log skipped" in tables["jk"].warnings
    assert len(tables["jk"]) == _valid_points(walk_tlg(export / "TLG00006.xml", export / "TLG00006.bin")["records"])


def test_an_export_whose_only_binary_is_missing_is_unreadable(export):
    # Given a data set of one task (SAV) whose binary is gone
    root = ElementTree.parse(export / "TASKDATA.XML").getroot()
    for task in root.findall("TSK")[1:]:
        root.remove(task)
    ElementTree.ElementTree(root).write(export / "TASKDATA.XML", encoding="utf-8", xml_declaration=True)
    (export / "TLG00001.bin").unlink()
    # When read, then it fails naming the missing binary
    with pytest.raises(UnreadableDataset, match=r"^task SAV: no readable time log \(TLG00001: binary file missing"):
        _read(export)


def test_records_without_a_fix_are_left_out_with_a_warning(export, valid_timelogs):
    # Given TLG00003, task zJY's only log, whose first five records are at (0, 0): a receiver without a fix
    original = walk_tlg(valid_timelogs / "TLG00003.xml", valid_timelogs / "TLG00003.bin")["records"]
    assert _valid_points(original) == len(original)  # (the sample has none)
    data = bytearray((export / "TLG00003.bin").read_bytes())
    for record in range(5):
        start = original[record - 1]["end"] if record else 0
        data[start + 6 : start + 14] = bytes(8)  # PTN A and B after the TC time
    (export / "TLG00003.bin").write_bytes(bytes(data))
    # When the export is read, then those records are no points, and the warnings say so
    _, tables = _read(export)
    table = tables["zJY"]
    assert len(table) == len(original) - 5
    said = f"5 of {len(original)} points left out: no position (0, 0 is a receiver without a fix)."
    assert said in table.warnings, table.warnings
    # And a log without such records says nothing of the kind
    assert not any("left out" in warning for warning in tables["jk"].warnings)


def test_a_time_log_header_declaring_entities_is_refused_in_words_a_user_reads(export):
    """It said "header is not valid XML (EntitiesForbidden(name='xx', system_id='file:///etc/passwd', ...))"."""
    # Given task SAV's only log header declaring an external entity
    header = (export / "TLG00001.xml").read_text()
    body = header[header.index("<TIM") :]
    (export / "TLG00001.xml").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE TIM [<!ENTITY xx SYSTEM "file:///etc/passwd">]>\n' + body
    )
    # When the export is read
    reader, tables = _read(export)
    # Then that task fails, saying why as TASKDATA.XML would, and the others are read
    assert reader.skipped == [
        (
            "SAV",
            "task SAV: no readable time log (TLG00001.xml (time log header) declares XML entities or a DTD, which are "
            "refused for security (EntitiesForbidden); log skipped)",
        )
    ]
    assert len(tables) == 18
