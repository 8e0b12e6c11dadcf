"""ISOXML reader on real task controller exports: values checked against what the files themselves record."""

import codecs
import re
import shutil
import struct
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from conversion.readers import Dataset, UnreadableDataset, get_reader
from conversion.readers import ddi as ddis
from conversion.readers.isoxml import IsoxmlReader
from conversion.readers.isoxml.tlg import TimeLogError, read_time_log
from tests.conversion.readers.conftest import DOTNET, walk_tlg

LOAD = f"{DOTNET}/LoadFromStream"


def _files(folder: Path, stem: str) -> tuple[Path, Path]:
    by_lower = {p.name.lower(): p for p in folder.iterdir()}
    return by_lower[f"{stem.lower()}.xml"], by_lower[f"{stem.lower()}.bin"]


def _read(taskdata: Path, **kwargs):
    return IsoxmlReader(**kwargs).read(Dataset("ISOXML", taskdata, taskdata.parent, taskdata.parent.name))


def _tasks(taskdata: Path) -> list[ElementTree.Element]:
    return ElementTree.parse(taskdata).getroot().findall("TSK")


def _valid_points(walk: dict) -> int:
    return sum(1 for r in walk["records"] if not (r["ptn"].get("A") == 0 and r["ptn"].get("B") == 0))


@pytest.fixture(scope="module")
def valid_tables(valid_timelogs):
    return {t.name: t for t in _read(valid_timelogs / "TASKDATA.XML")}


def test_every_valid_time_log_is_consumed_byte_exact(valid_timelogs):
    # Given every TLG pair of the CCI export
    stems = sorted(p.stem for p in valid_timelogs.glob("TLG*.xml"))
    assert len(stems) == 21
    for stem in stems:
        xml_path, bin_path = _files(valid_timelogs, stem)
        # When read by our reader and by the independent walker
        log = read_time_log(xml_path, bin_path)
        walk = walk_tlg(xml_path, bin_path)
        # Then both end exactly at the end of the file, with the same number of records
        assert log.leftover_bytes == 0 and not log.truncated_record, stem
        assert walk["consumed"] == walk["size"], stem
        assert log.n_records == len(walk["records"]), stem


def _carried_forward(walk: dict, index: int, bitfield: bool) -> np.ndarray:
    """Per record, the last value logged for DLV `index` so far (NaN before the first), from the walker."""
    out, current = [], np.nan
    for record in walk["records"]:
        for logged_index, value in record["values"]:
            if logged_index == index:
                current = float(value & 0xFFFFFFFF if bitfield else value)
        out.append(current)
    return np.asarray(out)


@pytest.mark.parametrize("chunk_records", [65_536, 3], ids=["chunks-of-the-reader", "chunks-of-3-records"])
def test_every_value_position_and_time_matches_the_independent_walker(valid_timelogs, chunk_records, monkeypatch):
    """Also with the pairs located 3 records at a time, so that every log spans many chunks (the reader's chunks are
    65,536 records: longer than these logs)."""
    from conversion.readers.isoxml import tlg

    monkeypatch.setattr(tlg, "PAIR_CHUNK_RECORDS", chunk_records)
    stems = sorted(p.stem for p in valid_timelogs.glob("TLG*.xml"))
    assert len(stems) == 21  # (the export's time logs: PROVENANCE.md)
    for stem in stems:
        xml_path, bin_path = _files(valid_timelogs, stem)
        log = read_time_log(xml_path, bin_path)
        walk = walk_tlg(xml_path, bin_path)
        records = walk["records"]
        # Positions and TC time, record by record
        assert np.array_equal(log.ptn["north"], np.asarray([r["ptn"]["A"] for r in records]) * 1e-7), stem
        assert np.array_equal(log.ptn["east"], np.asarray([r["ptn"]["B"] for r in records]) * 1e-7), stem
        ms = np.asarray([r["tc_day"] * 86_400_000 + r["tc_ms"] for r in records], dtype=np.int64)
        assert np.array_equal((log.tc_time - np.datetime64("1980-01-01", "ms")).astype(np.int64), ms), stem
        # Every DLV: only changes are logged, so each value is carried forward until the next one
        for spec in log.header.dlvs:
            expected = _carried_forward(walk, spec.index, ddis.is_bitfield(spec.ddi))
            assert np.array_equal(log.raw_values(spec.index), expected, equal_nan=True), (stem, spec.index)
            logged = sum(1 for r in records for i, _ in r["values"] if i == spec.index)
            assert log.logged_count(spec.index) == logged, (stem, spec.index)


def test_a_dlv_logged_twice_in_one_record_keeps_the_later_value(tmp_path):
    # Given a hand-made log: TC time only, DLV 0 logged in records 1 and 2, twice in record 2, never in record 0
    (tmp_path / "TLG00001.xml").write_text('<TIM A=""><DLV A="0001" C="DET-1"/><DLV A="0002" C="DET-1"/></TIM>')
    record = struct.Struct("<IH")
    data = record.pack(1000, 16000) + bytes([1]) + struct.pack("<Bi", 1, 7)
    data += record.pack(2000, 16000) + bytes([1]) + struct.pack("<Bi", 0, -5)
    data += record.pack(3000, 16000) + bytes([2]) + struct.pack("<Bi", 0, 11) + struct.pack("<Bi", 0, 12)
    data += record.pack(4000, 16000) + bytes([0])
    (tmp_path / "TLG00001.bin").write_bytes(data)
    # When read
    log = read_time_log(tmp_path / "TLG00001.xml", tmp_path / "TLG00001.bin")
    # Then values are carried forward, NaN before the first, and the later of two values in a record wins
    assert log.n_records == 4 and log.leftover_bytes == 0
    assert np.array_equal(log.raw_values(0), [np.nan, -5, 12, 12], equal_nan=True)
    assert np.array_equal(log.raw_values(1), [7, 7, 7, 7])
    assert log.logged_count(0) == 3


def test_yield_total_mass_of_the_log_equals_the_task_total(valid_timelogs, valid_tables):
    tasks = _tasks(valid_timelogs / "TASKDATA.XML")
    task = next(t for t in tasks if t.find("TLG").get("A") == "TLG00001")
    recorded = {d.get("A"): float(d.get("B")) for d in task.find("TIM").findall("DLV")}
    assert recorded["005A"] == 259605

    log = read_time_log(*_files(valid_timelogs, "TLG00001"))
    index = next(s.index for s in log.header.dlvs if s.ddi == 0x005A)
    values = log.raw_values(index)
    values = values[~np.isnan(values)]
    assert values[-1] - values[0] == recorded["005A"]

    table = valid_tables[task.get("B")]
    assert table.recorded_totals["totalWetMass"] == (259605.0, "kg")
    assert table.recorded_totals["totalArea"] == (recorded["0074"], "m2")


def test_point_counts_are_the_record_counts_without_null_positions(valid_timelogs, valid_tables):
    for task in _tasks(valid_timelogs / "TASKDATA.XML"):
        stems = [t.get("A") for t in task.findall("TLG")]
        expected = sum(_valid_points(walk_tlg(*_files(valid_timelogs, s))) for s in stems)
        assert len(valid_tables[task.get("B").strip()]) == expected, task.get("B")


def test_time_range_operation_and_machine(valid_timelogs, valid_tables):
    task = next(t for t in _tasks(valid_timelogs / "TASKDATA.XML") if t.get("B") == "SAV")
    tim = task.find("TIM")
    table = valid_tables["SAV"]
    # No GPS time is logged, so the TC clock gives the times, which the task's TIM brackets.
    assert table.start == np.datetime64(tim.get("A"), "ms")
    assert table.end == np.datetime64(tim.get("B"), "ms")
    assert table.operation_type == "harvested"
    device = ElementTree.parse(valid_timelogs / "TASKDATA.XML").getroot().find("DVC")
    machine = table.machines[0]
    assert (machine.name, machine.serial_number) == (device.get("B"), device.get("E"))
    assert table.units["wetMassPerArea"] == "kg/ha"
    # ~38 t/ha wet forage at ~60 % moisture (provenance of the sample).
    yields = table.columns["wetMassPerArea"]
    assert 25_000 < np.median(yields[yields > 0]) < 60_000
    moisture = table.columns["harvestMoisture"]
    assert 45 < np.median(moisture[moisture > 0]) < 75


def test_single_dpd_planter_reads_condensed_work_state_as_unsigned(extracted):
    folder = extracted(f"{LOAD}/SingleDPD.zip")
    log = read_time_log(*_files(folder, "TLG00001"))
    index = next(s.index for s in log.header.dlvs if s.ddi == 0x00A1)
    walk = walk_tlg(*_files(folder, "TLG00001"))
    logged = [v for r in walk["records"] for i, v in r["values"] if i == index]
    assert -2731 in logged  # the file holds it as a signed int32
    raw = log.raw_values(index)
    assert (raw[~np.isnan(raw)] >= 0).all()
    assert (raw == 2**32 - 2731).any()

    [table] = _read(folder / "TASKDATA.XML")
    assert table.operation_type == "planted"
    assert table.units["seedRate"] == "seeds/ha"
    assert table.recorded_totals["totalPlanted"] == (12483.0, "seeds")
    assert table.machines[0].name == "IntelliAg" and table.machines[0].category == "planter/seeder"
    # The setpoint is its channel's (DET-453 "DC3050 Channel 1", raw 42,858 and 7,143 x 0.001 seeds/m2), not the
    # "Seed Operation" element's above it, which logs 0 throughout (the summary's seedRateTarget was 0)
    target = table.columns["seedRateTarget"]
    assert set(np.unique(target[np.isfinite(target)])) == {428_580.0, 71_430.0}


def test_cnh_planter_and_air_cart_export(extracted):
    folder = extracted(f"{LOAD}/Another-single-ACP.zip")
    tables = {t.name: t for t in _read(folder / "TASKDATA.XML")}
    planter = tables["20220919 Aussaat 25.77ha with..."]
    assert planter.operation_type == "planted"
    assert planter.products == ["Corn_PF", "56E"]
    assert "Planter Valoterra" in [m.name for m in planter.machines]
    # The task's TIM says 0074 = 175528 m2 on the planter's work element.
    assert planter.recorded_totals["totalArea"] == (175528.0, "m2")

    spreader = tables["Germany solid"]
    assert spreader.operation_type == "applied"
    assert spreader.products == ["56E"]
    assert spreader.units["appliedRate"] == "kg/ha"

    sprayer = tables["14.39ha Field"]
    assert sprayer.operation_type == "applied"
    assert sprayer.units["appliedRate"] == "L/ha"
    # Its GPS date is a day off the TC clock, so the TC clock at the task's -05:00 zone gives UTC times,
    # consistent with the task's own TIM start.
    tim_start = np.datetime64("2022-10-20T08:43:43", "ms") + np.timedelta64(5, "h")
    assert abs(sprayer.start - tim_start) < np.timedelta64(2, "s")


def test_all_fields_moved_classifies_by_the_logging_implement(extracted):
    folder = extracted(f"{LOAD}/AllFieldsMoved_Or_Simplified_Out.zip")
    taskdata = next(folder.rglob("TASKDATA.XML"))
    tables = _read(taskdata)
    assert len(tables) == 2
    for table, stem in zip(tables, ("TLG00001", "TLG00002"), strict=True):
        walk = walk_tlg(*_files(taskdata.parent, stem))
        assert len(table) == _valid_points(walk)
        # Every logged DLV belongs to the Great Plains True-Tandem (ClientNAME class 2, tillage); the Horsch
        # sprayer is only allocated, logs nothing, so the points are tillage.
        assert table.operation_type == "tillage"
        assert table.machines[0].category == "primary soil tillage"
        assert "Horsch Sonstige Pflanzenschut..." in [m.name for m in table.machines]


def test_topcon_xfr_split_export_prefers_gps_time(extracted):
    folder = extracted("isoxml-js/data/2021-04-09T15_33_26_taskdata.zip") / "TASKDATA"
    [table] = _read(folder / "TASKDATA.XML")
    walk = walk_tlg(*_files(folder, "TLG00001"))
    gps = np.array(
        [
            np.datetime64("1980-01-01", "ms") + np.timedelta64(r["ptn"]["I"] * 86_400_000 + r["ptn"]["H"], "ms")
            for r in walk["records"]
        ]
    )
    tc = np.array(
        [
            np.datetime64("1980-01-01", "ms") + np.timedelta64(r["tc_day"] * 86_400_000 + r["tc_ms"], "ms")
            for r in walk["records"]
        ]
    )
    assert len(table) == len(gps) == 207
    assert (table.columns["timestamp"] == gps).all()
    offsets = (gps - tc).astype(np.int64) / 1000
    assert np.all(np.abs(offsets - 2039) < 1.5)
    assert table.machines[0].name == "8250-8280 TTV"
    assert table.units["speed"] == "m/s"


def test_taskdata_found_several_folders_deep(detect_zip):
    found = detect_zip(f"{LOAD}/MultiSubFolder.zip")
    [dataset] = found.datasets
    assert dataset.format == "ISOXML"
    assert dataset.root.name == "AnotherSubFolder Again"
    [table] = get_reader("ISOXML").read(dataset)
    assert table.operation_type == "planted"


def test_invalid_archive_has_no_dataset(detect_zip):
    found = detect_zip(f"{LOAD}/InvalidArchive.zip")
    assert found.datasets == [] and found.unsupported == []


@pytest.mark.parametrize(
    ("zip_name", "reason"),
    [
        ("isoxml-js/data/duplicate-xmlid.zip", "duplicate XML id CTP-1"),
        ("isoxml-js/data/grid-without-binary.zip", "no task has a time log"),
        ("isoxml-js/data/task_with_grid.zip", "no task has a time log"),
        ("isoxml-js/data/task_full.zip", "no task has a time log"),  # (partfields, an attached file; no log)
        (f"{LOAD}/ZippedTaskWithSubFolder.zip", "no task has a time log"),
    ],
)
def test_data_sets_without_logged_data_are_unreadable_with_a_reason(detect_zip, zip_name, reason):
    [dataset] = detect_zip(zip_name).datasets
    with pytest.raises(UnreadableDataset, match=reason):
        get_reader("ISOXML").read(dataset)


def test_external_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    (tmp_path / "TASKDATA.XML").write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
        '<ISO11783_TaskData VersionMajor="4" VersionMinor="3"><TSK A="TSK1" B="&xxe;"/></ISO11783_TaskData>'
    )
    with pytest.raises(UnreadableDataset, match="refused") as info:
        _read(tmp_path / "TASKDATA.XML")
    assert "TOP-SECRET" not in str(info.value)


# Where SingleDPD's TASKDATA.XML in Windows-1252 first holds a byte that is no UTF-8: its DET designator "ÙààÓè".
FIRST_NOT_UTF8 = "byte 0xD9 at line 1348, column 35"


def _single_dpd_encoded(single_dpd: Path, task_name: str, declaration: str, encode) -> Path:
    """SingleDPD's TASKDATA.XML with the logged task named `task_name`, its declaration `declaration` and the
    document written with `encode(text)` (bytes)."""
    taskdata = single_dpd / "TASKDATA.XML"
    text = taskdata.read_text(encoding="utf-8").replace('B="73.67ac Field"', f'B="{task_name}"')
    text = declaration + text[text.index("?>") + 2 :]
    taskdata.write_bytes(encode(text))
    return taskdata


@pytest.mark.parametrize(
    ("task_name", "declaration", "encode"),
    [
        (
            "肥料散布",
            '<?xml version="1.0" encoding="Shift_JIS"?>',
            lambda text: text.encode("shift_jis", "xmlcharrefreplace"),  # the sample's "ÙààÓè" as &#217;...
        ),
        ("Säure Plüs", '<?xml version="1.0" encoding="UTF-16"?>', lambda text: text.encode("utf-16")),
        (
            "Säure Plüs",
            '<?xml version="1.0" encoding="ISO-8859-1"?>',
            lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),
        ),
        ("Säure Plüs", '<?xml version="1.0" encoding="windows-1252"?>', lambda text: text.encode("cp1252")),
    ],
    ids=["shift-jis", "utf-16-bom", "utf-8-bom-declaring-latin-1", "windows-1252"],
)
def test_taskdata_is_read_in_its_bom_else_its_declared_encoding(single_dpd, task_name, declaration, encode):
    """Shift_JIS failed "multi-byte encodings are not supported" (expat); a UTF-8 BOM before `ISO-8859-1` was read
    as Latin-1, "SÃ¤ure" (XML 1.0 Appendix F: the BOM wins)."""
    [table] = _read(_single_dpd_encoded(single_dpd, task_name, declaration, encode))
    assert table.name == task_name


@pytest.mark.parametrize(
    ("declaration", "reason"),
    [
        ('<?xml version="1.0" encoding="UTF-8"?>', f"is not UTF-8 text as it declares: {FIRST_NOT_UTF8}"),
        ("", f"is not UTF-8 text as XML without an encoding declaration must be: {FIRST_NOT_UTF8}"),
        ('<?xml version="1.0" encoding="punycode"?>', "declares the encoding 'punycode', which is no code page"),
    ],
    ids=["declared-utf-8", "undeclared", "punycode"],
)
def test_taskdata_not_in_its_encoding_fails_saying_so_and_where(single_dpd, declaration, reason):
    """It said "TASKDATA.XML is not valid XML: not well-formed (invalid token): line 1348, column 35"."""
    taskdata = _single_dpd_encoded(single_dpd, "Säure Plüs", declaration, lambda text: text.encode("cp1252"))
    with pytest.raises(UnreadableDataset) as info:
        _read(taskdata)
    assert str(info.value).startswith(f"TASKDATA.XML {reason}"), info.value


def _copy_task(valid_timelogs: Path, dest: Path, stems: list[str]) -> Path:
    """A copy of the CCI TASKDATA.XML holding the first task, pointing at `stems` time logs."""
    root = ElementTree.parse(valid_timelogs / "TASKDATA.XML").getroot()
    for task in root.findall("TSK")[1:]:
        root.remove(task)
    task = root.find("TSK")
    for tlg in task.findall("TLG"):
        task.remove(tlg)
    for stem in stems:
        ElementTree.SubElement(task, "TLG", A=stem, C="1")
        for path in _files(valid_timelogs, stem):
            shutil.copy(path, dest / path.name)
    ElementTree.ElementTree(root).write(dest / "TASKDATA.XML", encoding="utf-8", xml_declaration=True)
    return dest / "TASKDATA.XML"


def test_truncated_time_log_keeps_the_complete_records(valid_timelogs, tmp_path):
    taskdata = _copy_task(valid_timelogs, tmp_path, ["TLG00003"])
    bin_path = tmp_path / "TLG00003.bin"
    data = bin_path.read_bytes()
    bin_path.write_bytes(data[: len(data) // 2 + 3])
    walk = walk_tlg(tmp_path / "TLG00003.xml", bin_path)

    log = read_time_log(tmp_path / "TLG00003.xml", bin_path)
    # A record cut short is left out whole, as the walker does (test_isoxml_damaged_logs.py cuts at every part).
    assert log.n_records == len(walk["records"]) and log.truncated_record
    [table] = _read(taskdata)
    assert len(table) <= log.n_records


def test_garbled_time_log_is_skipped_with_a_reason(valid_timelogs, tmp_path):
    taskdata = _copy_task(valid_timelogs, tmp_path, ["TLG00003", "TLG00006"])
    bin_path = tmp_path / "TLG00003.bin"
    data = bytearray(bin_path.read_bytes())
    data[5000:7000] = b"\xff" * 2000
    bin_path.write_bytes(bytes(data))

    with pytest.raises(TimeLogError, match="TLG00003"):
        read_time_log(tmp_path / "TLG00003.xml", bin_path)
    [table] = _read(taskdata)
    assert len(table) == _valid_points(walk_tlg(*_files(tmp_path, "TLG00006")))
    assert any("TLG00003" in w and "skipped" in w for w in table.warnings)


def test_all_logs_garbled_is_unreadable(valid_timelogs, tmp_path):
    taskdata = _copy_task(valid_timelogs, tmp_path, ["TLG00006"])
    (tmp_path / "TLG00006.bin").write_bytes(b"\x00" * 10 + b"\xff" * 500)
    with pytest.raises(UnreadableDataset, match="no readable time log"):
        _read(taskdata)


def test_missing_binary_is_reported(valid_timelogs, tmp_path):
    taskdata = _copy_task(valid_timelogs, tmp_path, ["TLG00006"])
    (tmp_path / "TLG00006.bin").unlink()
    with pytest.raises(UnreadableDataset, match="binary file missing"):
        _read(taskdata)


def _hand_log(folder: Path, stem: str, ddis_logged: list[int], records: list[tuple]) -> None:
    """A time log with TC time and position in every record; `records`: (ms, lat, lon, {dlv index: raw value})."""
    dlvs = "".join(f'<DLV A="{ddi:04X}" C="DET-1"/>' for ddi in ddis_logged)
    (folder / f"{stem}.xml").write_text(f'<TIM A="" D="4"><PTN A="" B=""/>{dlvs}</TIM>')
    data = b""
    for ms, lat, lon, values in records:
        data += struct.pack("<IHii", ms, 16000, round(lat * 1e7), round(lon * 1e7)) + bytes([len(values)])
        data += b"".join(struct.pack("<Bi", index, value) for index, value in values.items())
    (folder / f"{stem}.bin").write_bytes(data)


def _hand_task(folder: Path, stems: list[str], *, name: str = "Harvest", devices: str = "") -> Path:
    """TASKDATA.XML of one task `name` logged in the time logs `stems`, after the devices `devices` (DVC elements)."""
    logs = "".join(f'<TLG A="{stem}"/>' for stem in stems)
    (folder / "TASKDATA.XML").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="3" '
        f'DataTransferOrigin="1">{devices}<TSK A="TSK1" B="{name}" G="4">{logs}</TSK></ISO11783_TaskData>'
    )
    return folder / "TASKDATA.XML"


def test_parallel_time_logs_are_joined_by_time(tmp_path):
    # Given two logs over the same seconds, as CNH writes a device with more than 255 DLVs: the yield in one (every
    # second), the moisture in the other (at its own moments)
    _hand_log(tmp_path, "TLG00001", [0x0054], [(t * 1000, 48 + t * 1e-5, 11, {0: 500_000 + t}) for t in range(4)])
    _hand_log(tmp_path, "TLG00002", [0x0063], [(0, 48, 11, {0: 150_000}), (2500, 48.00002, 11, {0: 160_000})])
    # When the task is read
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002"]))
    # Then it has one point per second, each with the yield logged then and the moisture as of that time
    assert len(table) == 4
    assert np.allclose(table.columns["wetMassPerArea"], [5000.0, 5000.01, 5000.02, 5000.03])
    assert table.columns["harvestMoisture"].tolist() == [15.0, 15.0, 15.0, 16.0]
    assert table.columns["timestamp"].tolist() == sorted(set(table.columns["timestamp"].tolist()))
    # And the raw columns of both logs are there, side by side, per point and in their DDI's unit
    assert table.raw_columns["DDI0063_DET-1"].tolist() == [150_000.0, 150_000.0, 150_000.0, 160_000.0]  # (ppm)
    assert table.raw_columns["DDI0054_DET-1"].tolist() == [500_000.0, 500_001.0, 500_002.0, 500_003.0]  # (mg/m2)


def test_a_parallel_logs_raw_column_has_no_value_before_its_first_record(tmp_path):
    """Its raw column takes at each point of the base log the value it held then, in its DDI's unit (a seed rate in
    /m2, not in the 0.001 /m2 steps logged): none before its first record."""
    _hand_log(tmp_path, "TLG00001", [0x0054], [(t * 1000, 48 + t * 1e-5, 11, {0: 500_000}) for t in range(4)])
    points = [(1500, 48, 11, {0: 8_000, 1: 1_000, 2: 1_000}), (2500, 48.00002, 11, {0: 9_000, 1: 2_000, 2: 2_000})]
    _hand_log(tmp_path, "TLG00002", [0x000C, 0x0075, 0x0090], points)
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002"]))
    # (the seed rate also read for the points' rate; the distance counter (mm) and an angle (0.001 arcdeg steps) only
    # for their raw columns)
    seed_rate, distance = table.raw_columns["DDI000C_DET-1"], table.raw_columns["DDI0075_DET-1"]
    angle = table.raw_columns["DDI0090_DET-1"]
    assert np.isnan(seed_rate[:2]).all() and seed_rate[2:].tolist() == [8.0, 9.0]
    assert np.isnan(distance[:2]).all() and distance[2:].tolist() == [1_000.0, 2_000.0]
    assert np.isnan(angle[:2]).all() and angle[2:].tolist() == [1.0, 2.0]


def test_three_parallel_logs_each_give_their_own_columns(tmp_path):
    """A DLV of the third of three logs written side by side is read from the third, not the second."""
    _hand_log(tmp_path, "TLG00001", [0x0054], [(t * 1000, 48 + t * 1e-5, 11, {0: 500_000}) for t in range(4)])
    _hand_log(tmp_path, "TLG00002", [0x000C], [(0, 48, 11, {0: 8_000}), (3000, 48.00003, 11, {0: 9_000})])
    _hand_log(tmp_path, "TLG00003", [0x0075], [(500, 48, 11, {0: 10}), (2500, 48.00002, 11, {0: 30})])
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002", "TLG00003"]))
    assert table.raw_columns["DDI000C_DET-1"].tolist() == [8.0, 8.0, 8.0, 9.0]
    distance = table.raw_columns["DDI0075_DET-1"]
    assert np.isnan(distance[0]) and distance[1:].tolist() == [10.0, 10.0, 30.0]


def test_time_logs_one_after_another_are_not_joined(tmp_path):
    # Given a task paused and resumed: its second log starts after the first ends
    _hand_log(tmp_path, "TLG00001", [0x0054], [(t * 1000, 48, 11 + t * 1e-5, {0: 500_000}) for t in range(4)])
    _hand_log(tmp_path, "TLG00002", [0x0054], [(t * 1000, 48, 11 + t * 1e-5, {0: 600_000}) for t in range(60, 63)])
    # When read, then the points of both follow each other
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002"]))
    assert len(table) == 7
    assert np.allclose(table.columns["wetMassPerArea"], [5000.0] * 4 + [6000.0] * 3)


@pytest.mark.parametrize(
    ("ddi", "raw", "prop", "value", "unit"),
    [
        # ISO 11783-11 resolutions: 200 L/ha is 20,000 mm3/m2, logged in steps of 0.01 mm3/m2
        (0x0002, 2_000_000, "appliedRate", 200.0, "L/ha"),
        # 150 kg/ha is 15,000 mg/m2, in steps of 1 mg/m2
        (0x0007, 15_000, "appliedRate", 150.0, "kg/ha"),
        # 80,000 seeds/ha is 8 seeds/m2, in steps of 0.001 /m2
        (0x000C, 8_000, "seedRate", 80_000.0, "seeds/ha"),
        # 10 km/h is 2778 mm/s
        (0x018D, 2_778, "speed", 2.778, "m/s"),
    ],
)
def test_rates_are_read_in_the_resolution_of_their_ddi(tmp_path, ddi, raw, prop, value, unit):
    _hand_log(tmp_path, "TLG00001", [ddi], [(t * 1000, 48 + t * 1e-5, 11, {0: raw}) for t in range(3)])
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.units[prop] == unit
    assert np.allclose(table.columns[prop], value)


def test_a_record_without_a_position_fix_is_no_point(tmp_path):
    # Given a log whose third record has latitude and longitude 0 (no fix yet: the terminal writes zeros)
    records = [(0, 48, 11, {0: 8_000}), (1000, 48.00001, 11, {0: 8_000}), (2000, 0, 0, {0: 8_000})]
    _hand_log(tmp_path, "TLG00001", [0x000C], records)
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert len(table) == 2 and not ((table.columns["lat"] == 0) & (table.columns["lon"] == 0)).any()


def test_the_values_of_a_record_left_out_go_with_it(tmp_path):
    """The first record has no fix: each column and each raw column loses its value, and keeps the others' in step."""
    records = [
        (0, 0, 0, {0: 7_000, 1: 10}),
        (1000, 48, 11, {0: 8_000, 1: 20}),
        (2000, 48.00001, 11, {0: 9_000, 1: 30}),
    ]
    _hand_log(tmp_path, "TLG00001", [0x000C, 0x0075], records)
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert len(table) == 2 and np.allclose(table.columns["lat"], [48.0, 48.00001], rtol=0, atol=1e-7)
    assert table.columns["seedRate"].tolist() == [80_000.0, 90_000.0]
    assert {len(values) for values in table.raw_columns.values()} == {2}
    assert table.raw_columns["DDI000C_DET-1"].tolist() == [8.0, 9.0]
    assert table.raw_columns["DDI0075_DET-1"].tolist() == [20.0, 30.0]


def test_a_planter_logging_only_its_setpoint_has_the_setpoint_as_seed_rate_and_says_so(tmp_path):
    _hand_log(tmp_path, "TLG00001", [0x000B], [(t * 1000, 48 + t * 1e-5, 11, {0: 8_000}) for t in range(3)])
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.operation_type == "planted"
    assert np.allclose(table.columns["seedRate"], 80_000.0) and table.units["seedRate"] == "seeds/ha"
    assert any("seedRate is the setpoint" in warning for warning in table.warnings)


def test_speed_is_what_the_positions_and_their_times_give(extracted):
    """Independent of the DDI's resolution: the distance between consecutive fixes over the seconds between them."""
    from pyproj import Geod

    folder = extracted("isoxml-js/data/2021-04-09T15_33_26_taskdata.zip") / "TASKDATA"
    [table] = _read(folder / "TASKDATA.XML")
    lon, lat, speed = table.columns["lon"], table.columns["lat"], table.columns["speed"]
    seconds = table.columns["timestamp"].astype("datetime64[ms]").astype(np.int64) / 1000
    _, _, metres = Geod(ellps="WGS84").inv(lon[:-1], lat[:-1], lon[1:], lat[1:])
    step = np.diff(seconds)
    moving = (step > 0) & (step < 5) & (metres / np.where(step > 0, step, 1) > 0.5) & (speed[1:] > 0.5)
    assert moving.sum() > 50
    assert np.median(metres[moving] / step[moving] / speed[1:][moving]) == pytest.approx(1.0, abs=0.1)


def test_the_actual_seed_rate_follows_its_setpoint(extracted):
    folder = extracted(f"{LOAD}/Another-single-ACP.zip")
    planter = {t.name: t for t in _read(folder / "TASKDATA.XML")}["20220919 Aussaat 25.77ha with..."]
    actual, target = planter.columns["seedRate"], planter.columns["seedRateTarget"]
    sowing = (actual > 0) & (target > 0)
    assert sowing.sum() > 100
    assert np.median(actual[sowing] / target[sowing]) == pytest.approx(1.0, abs=0.05)
    assert 50_000 <= np.median(target[sowing]) <= 150_000  # maize, seeds per hectare


def test_elevation_is_the_positions_altitude_in_metres(extracted):
    """ISO 11783-10: PTN C, the altitude, is in millimetres."""
    folder = extracted("isoxml-js/data/2021-04-09T15_33_26_taskdata.zip") / "TASKDATA"
    [table] = _read(folder / "TASKDATA.XML")
    walk = walk_tlg(*_files(folder, "TLG00001"))
    assert np.allclose(table.columns["elevation"], [r["ptn"]["C"] / 1000 for r in walk["records"]])
    assert table.units["elevation"] == "m"


@pytest.mark.parametrize("zip_name", ["Another-single-ACP.zip", "AllFieldsMoved_Or_Simplified_Out.zip"])
def test_pgn_based_and_request_default_ddis_are_no_raw_values(extracted, zip_name):
    """DDI DFFE (a PGN-based value) and DFFF (the request for a default set) are no measurements: the logs hold them
    (checked with the independent walker), the raw output has no column of them."""
    folder = extracted(f"{LOAD}/{zip_name}")
    taskdata = next(folder.rglob("TASKDATA.XML"))
    logged = {
        s.ddi
        for xml in taskdata.parent.glob("TLG*.[xX][mM][lL]")
        for s in read_time_log(*_files(taskdata.parent, xml.stem)).header.dlvs
    }
    assert logged & {0xDFFE, 0xDFFF}
    for table in _read(taskdata):
        assert table.raw_columns, table.name
        assert not [c for c in table.raw_columns if c.startswith(("DDIDFFE_", "DDIDFFF_"))], table.name


@pytest.mark.parametrize(
    ("industry_group", "device_class", "kind", "category"),
    [
        (2, 7, "machine", "harvester"),
        (2, 1, "machine", "tractor"),
        (2, 4, "implement", "planter/seeder"),
        (0, 7, "machine", "non-specific"),  # outside agriculture, the class bits mean nothing
    ],
)
def test_a_devices_name_tells_machine_or_implement_and_its_category(industry_group, device_class, kind, category):
    from conversion.readers.isoxml.taskdata import ClientName, Device

    name = ClientName((industry_group << 60) | (device_class << 49))
    identity = Device(id="DVC-1", designator="Unit", serial="S1", client_name=name).identity()
    assert (identity.kind, identity.category) == (kind, category)


def test_a_gps_time_that_stays_put_is_no_clock(extracted):
    """SingleDPD logs a GPS time of 0 and no date: every point would be stamped midnight. The TC clock is used, and
    the table says so."""
    folder = extracted(f"{LOAD}/SingleDPD.zip")
    [table] = _read(folder / "TASKDATA.XML")
    times = table.columns["timestamp"]
    assert len(np.unique(times)) > 300 and (np.diff(times) >= np.timedelta64(0, "ms")).all()
    assert any("GPS time unusable" in warning for warning in table.warnings)


def test_a_seed_depth_is_read_for_plantings_only(extracted):
    """A tillage implement's working depth (0034 is also logged by tillage tools) is no seed depth."""
    folder = extracted(f"{LOAD}/AllFieldsMoved_Or_Simplified_Out.zip")
    tables = _read(next(folder.rglob("TASKDATA.XML")))
    assert all(t.operation_type == "tillage" and "seedDepth" not in t.columns for t in tables)


def _hand_points(values: dict[int, int], n: int = 3) -> list[tuple]:
    return [(t * 1000, 48 + t * 1e-5, 11, dict(values)) for t in range(n)]


def test_a_volume_yield_and_a_seed_depth_are_read_in_their_ddis_resolutions(tmp_path):
    """0053 is ml/m2 (10 L/ha each), 000C seeds/m2 x 0.001 (10 seeds/ha each), 0034 mm."""
    _hand_log(tmp_path, "TLG00001", [0x0053], _hand_points({0: 500}))
    [harvest] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert harvest.operation_type == "harvested"
    assert harvest.units["wetVolumePerArea"] == "L/ha" and harvest.columns["wetVolumePerArea"].tolist() == [5000.0] * 3

    planting = tmp_path / "planting"
    planting.mkdir()
    _hand_log(planting, "TLG00001", [0x000C, 0x0034], _hand_points({0: 8000, 1: 50}))
    [table] = _read(_hand_task(planting, ["TLG00001"]))
    assert table.operation_type == "planted"
    assert table.columns["seedRate"].tolist() == [80_000.0] * 3
    assert table.units["seedDepth"] == "m" and table.columns["seedDepth"] == pytest.approx([0.05] * 3)


@pytest.mark.parametrize("ddi", [0x0054, 0x0057])
def test_a_log_of_a_yield_or_of_a_crop_flow_alone_is_a_harvest(tmp_path, ddi):
    _hand_log(tmp_path, "TLG00001", [ddi], _hand_points({0: 500_000}))
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.operation_type == "harvested"


def test_a_work_state_of_error_or_not_available_is_unknown_not_off(tmp_path):
    """008D is 2 bits: 0 off, 1 on, 2 error, 3 not available. Only 0 is "off" (cleaning would drop the point)."""
    points = [(t * 1000, 48 + t * 1e-5, 11, {0: 500_000, 1: state}) for t, state in enumerate([1, 2, 3, 0])]
    _hand_log(tmp_path, "TLG00001", [0x0054, 0x008D], points)
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    np.testing.assert_array_equal(table.columns["recordingStatus"], [1.0, np.nan, np.nan, 0.0])


def test_the_tasks_last_time_says_its_totals(tmp_path):
    """A task's TIMs: the last one holds the totals as the task ended (an earlier one, as it was paused)."""
    _hand_log(tmp_path, "TLG00001", [0x0054], _hand_points({0: 500_000}))
    (tmp_path / "TASKDATA.XML").write_text(
        '<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="3" '
        'DataTransferOrigin="1"><TSK A="TSK1" B="Harvest" G="4">'
        '<TIM A="2024-09-01T10:00:00" B="2024-09-01T10:30:00" D="4"><DLV A="005A" B="100" C="DET-1"/></TIM>'
        '<TIM A="2024-09-01T11:00:00" B="2024-09-01T11:30:00" D="4"><DLV A="005A" B="300" C="DET-1"/></TIM>'
        '<TLG A="TLG00001"/></TSK></ISO11783_TaskData>'
    )
    [table] = _read(tmp_path / "TASKDATA.XML")
    assert table.recorded_totals["totalWetMass"] == (300.0, "kg")


def test_logged_counters_give_what_they_grew_by_across_a_reset(tmp_path):
    """Without totals in the task, the counters logged tell them: an area counter 0 -> 8231, reset, 0 -> 3936 grew
    by 12,167 m2; a distance counter (mm) 0 -> 12,000 by 12 m."""
    areas = [0, 4000, 8231, 0, 2000, 3936]
    distances = [0, 2000, 4000, 6000, 9000, 12_000]
    points = [
        (t * 1000, 48 + t * 1e-5, 11, {0: 500_000, 1: a, 2: d})
        for t, (a, d) in enumerate(zip(areas, distances, strict=True))
    ]
    _hand_log(tmp_path, "TLG00001", [0x0054, 0x0074, 0x0075], points)
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.recorded_totals["totalArea"] == (12_167.0, "m2")
    assert table.recorded_totals["totalDistance"] == (pytest.approx(12.0), "m")


def test_the_counters_of_a_task_paused_and_resumed_add_up_over_its_logs(tmp_path):
    """Two logs, each counting the distance from its own start (DDI 0075, mm): 3 m then 2 m are 5 m, not the
    last log's 2 m."""
    _hand_log(
        tmp_path,
        "TLG00001",
        [0x0054, 0x0075],
        [(t * 1000, 48, 11 + t * 1e-5, {0: 500_000, 1: t * 1000}) for t in range(4)],
    )
    _hand_log(
        tmp_path,
        "TLG00002",
        [0x0054, 0x0075],
        [(t * 1000, 48, 11 + t * 1e-5, {0: 500_000, 1: (t - 60) * 1000}) for t in range(60, 63)],
    )
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002"]))
    assert table.recorded_totals["totalDistance"] == (pytest.approx(5.0), "m")


def test_raw_columns_are_in_their_ddis_unit(tmp_path):
    """rawGeojson's `DDI000C_DET-1` is the seed rate in DDI 000C's unit (/m2: 8 seeds), not its raw count of
    0.001 /m2 steps (8000); so is a DDI read for its raw column alone (0090, an angle in 0.001 arcdeg steps)."""
    points = [(t * 1000, 48 + t * 1e-5, 11, {0: 8_000, 1: 2_500}) for t in range(3)]
    _hand_log(tmp_path, "TLG00001", [0x000C, 0x0090], points)
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.raw_columns["DDI000C_DET-1"].tolist() == [8.0, 8.0, 8.0]
    assert table.raw_units["DDI000C_DET-1"] == "/m2"
    assert table.raw_columns["DDI0090_DET-1"].tolist() == [2.5, 2.5, 2.5]
    assert table.raw_units["DDI0090_DET-1"] == "arcdeg"


def test_a_record_naming_a_dlv_past_the_headers_is_a_corrupt_log(tmp_path):
    """A header of one DLV (index 0) and a record logging index 1: the log is skipped with the reason, not read with
    a value of nowhere."""
    _hand_log(tmp_path, "TLG00001", [0x0054], _hand_points({0: 500_000}))
    _hand_log(tmp_path, "TLG00002", [0x0054], [(5000, 48, 11, {0: 500_000}), (6000, 48.00001, 11, {1: 7})])
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002"]))
    assert len(table) == 3
    assert any("TLG00002" in w and "DLV index 1" in w and "only 1" in w for w in table.warnings), table.warnings


def test_a_parallel_log_that_starts_later_has_no_values_before_its_first_record(tmp_path):
    _hand_log(tmp_path, "TLG00001", [0x0054], _hand_points({0: 500_000}, 4))
    _hand_log(tmp_path, "TLG00002", [0x0063], [(2500, 48.00002, 11, {0: 160_000})])
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "TLG00002"]))
    moisture = table.columns["harvestMoisture"]
    assert np.isnan(moisture[:3]).all() and moisture[3] == 16.0


@pytest.mark.parametrize(
    ("element", "reason"),
    [
        ('<PTN A="٥٤" B=""/><DLV A="0054" C="DET-1"/>', "PTN A='٥٤' is not a number"),  # (read as latitude 54)
        ('<PTN A="4_8" B=""/><DLV A="0054" C="DET-1"/>', "PTN A='4_8' is not a number"),
        ('<PTN A="" B=""/><DLV A="0054" B="٣" C="DET-1"/>', "DLV 0 fixed value '٣' is not an integer"),
        ('<PTN A="" B=""/><DLV A="0054" B="1_000" C="DET-1"/>', "DLV 0 fixed value '1_000' is not an integer"),
        ('<PTN A="" B=""/><DLV A="٠٠٥٤" C="DET-1"/>', "DLV 0 has no valid DDI ('٠٠٥٤')"),
        ('<PTN A="" B=""/><DLV A="0x54" C="DET-1"/>', "DLV 0 has no valid DDI ('0x54')"),
    ],
)
def test_numbers_of_a_time_log_header_are_written_in_ascii(tmp_path, element, reason):
    """Python's int() and float() also read other scripts' digits and underscores: a fixed latitude "٥٤" put every
    point at 54 degrees, a fixed value "1_000" was 1000, where every other number of the file is held to ASCII."""
    (tmp_path / "TLG00001.xml").write_text(f'<TIM A="" D="4">{element}</TIM>', encoding="utf-8")
    (tmp_path / "TLG00001.bin").write_bytes(b"")
    with pytest.raises(TimeLogError, match="^" + re.escape(f"TLG00001.xml: {reason}")):
        read_time_log(tmp_path / "TLG00001.xml", tmp_path / "TLG00001.bin")


def test_memory_of_a_long_time_log_follows_its_points_not_each_pair(tmp_path):
    """A time log's reading held, for each (index, value) pair, its byte offset and its record (4 bytes each), the
    positions of every DLV's pairs (8 bytes each), every raw column twice (decoded and in its unit), and the whole
    table again when some records had no position: 9.3 times the binary at its peak here. What is held now is the
    binary, a byte per pair, the points and one column being made."""
    import tracemalloc

    records, n_dlv, no_fix = 150_000, 16, 1_000
    pairs = [field for k in range(n_dlv) for field in ((f"i{k}", "u1"), (f"v{k}", "<i4"))]
    layout = np.dtype([("ms", "<u4"), ("days", "<u2"), ("lat", "<i4"), ("lon", "<i4"), ("n", "u1"), *pairs])
    data = np.zeros(records, dtype=layout)
    data["ms"] = np.arange(records) * 500  # (twice a second: the records fit in one day)
    data["days"] = 16000
    data["lat"] = np.where(np.arange(records) < no_fix, 0, 480_000_000 + np.arange(records))
    data["lon"] = np.where(np.arange(records) < no_fix, 0, 110_000_000)
    data["n"] = n_dlv
    for k in range(n_dlv):
        data[f"i{k}"] = k
        data[f"v{k}"] = np.arange(records) % 1000 + k
    dlvs = "".join(f'<DLV A="{ddi:04X}" C="DET-1"/>' for ddi in range(1, n_dlv + 1))
    (tmp_path / "TLG00001.xml").write_text(f'<TIM A="" D="4"><PTN A="" B=""/>{dlvs}</TIM>')
    (tmp_path / "TLG00001.bin").write_bytes(data.tobytes())
    size = len(data.tobytes())
    del data
    taskdata = _hand_task(tmp_path, ["TLG00001"])
    tracemalloc.start()
    try:
        [table] = _read(taskdata)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(table) == records - no_fix and len(table.raw_columns) == n_dlv
    assert table.raw_columns["DDI0010_DET-1"][-1] == pytest.approx((records - 1) % 1000 + 15)
    assert peak < 4.6 * size, peak / size  # (4.2 times, as tracemalloc counts; the points alone are 2.2)
