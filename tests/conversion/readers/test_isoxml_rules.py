"""ISOXML reader rules on small hand-made task data: which rate, time, position, operation type and section width a
user gets where two readings of the file compete."""

import struct
from pathlib import Path

import numpy as np
import pytest

from tests.conversion.readers.test_isoxml import _hand_log, _hand_points, _hand_task, _read

pytestmark = pytest.mark.embedded


def _name(device_class: int) -> str:
    """The ISO NAME (DVC D) of an agricultural device of `device_class`."""
    return f"{(1 << 63) | (2 << 60) | (device_class << 49):016X}"


def _devices_task(folder: Path, devices: str) -> Path:
    """TASKDATA.XML of the devices `devices` (DVC elements) and one task logged in TLG00001, named for no operation."""
    return _hand_task(folder, ["TLG00001"], name="Work", devices=devices)


def test_an_element_logging_a_volume_and_a_mass_rate_has_the_volume_rate(tmp_path):
    """With both actual volume (0002) and mass (0007) rates on one element, appliedRate is the volume rate."""
    _hand_log(tmp_path, "TLG00001", [0x0002, 0x0007], _hand_points({0: 2_000_000, 1: 15_000}))
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.units["appliedRate"] == "L/ha"
    assert table.columns["appliedRate"].tolist() == pytest.approx([200.0] * 3)


def test_a_rate_logged_only_as_zero_gives_way_to_one_that_is_not(tmp_path):
    """A volume rate (0002) logged as 0 throughout gives way to the mass rate (0007) the element applies."""
    _hand_log(tmp_path, "TLG00001", [0x0002, 0x0007], _hand_points({0: 0, 1: 15_000}, 5))
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert len(table) == 5
    assert table.units["appliedRate"] == "kg/ha"
    assert table.columns["appliedRate"].tolist() == pytest.approx([150.0] * 5)


def test_records_whose_gps_date_is_0_take_the_tc_clock(tmp_path):
    """A GPS date of 0 (no date yet) is no GPS time: those records take the TC clock's, not a time in 1980."""
    # Given a log of GPS time and date (PTN H, I) whose receiver writes date 0 on its first two records
    (tmp_path / "TLG00001.xml").write_text('<TIM A="" D="4"><PTN A="" B="" H="" I=""/><DLV A="0054" C="DET-1"/></TIM>')
    data = b""
    for t in range(5):
        ms, gps_date = 36_000_000 + t * 1000, 0 if t < 2 else 16000
        data += struct.pack("<IHiiIH", ms, 16000, round((48 + t * 2e-5) * 1e7), 11 * 10**7, ms, gps_date)
        data += bytes([1]) + struct.pack("<Bi", 0, 500_000)
    (tmp_path / "TLG00001.bin").write_bytes(data)
    # When read, then every point is on the TC clock's day (16000 days after 1980-01-01), from 10:00:00
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert [str(t) for t in table.columns["timestamp"]] == [f"2023-10-22T10:00:0{t}.000" for t in range(5)]
    assert table.start == np.datetime64("2023-10-22T10:00:00", "ms")


def test_a_point_on_the_greenwich_meridian_is_kept(tmp_path):
    """Only latitude and longitude both 0 are a receiver without a fix: a point at longitude 0.0 is a position."""
    _hand_log(tmp_path, "TLG00001", [0x0054], [(t * 1000, 51.48, (t - 2) * 1e-5, {0: 500_000}) for t in range(5)])
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert len(table) == 5 and not table.warnings
    assert table.columns["lon"].tolist() == pytest.approx([-2e-5, -1e-5, 0.0, 1e-5, 2e-5])


def test_the_implement_not_the_machine_listed_before_it_says_the_operation(tmp_path):
    """A harvester (class 7) listed before a planter (class 4): the implement says the operation, planted."""
    _hand_log(tmp_path, "TLG00001", [0x018D, 0x000C], _hand_points({0: 2_000, 1: 8_000}))
    header = tmp_path / "TLG00001.xml"
    header.write_text(header.read_text().replace('<DLV A="000C" C="DET-1"/>', '<DLV A="000C" C="DET-2"/>'))
    devices = (
        f'<DVC A="DVC-1" B="Machine" D="{_name(7)}"><DET A="DET-1" B="1" C="1" D="Machine" E="0" F="0"/></DVC>'
        f'<DVC A="DVC-2" B="Planter" D="{_name(4)}"><DET A="DET-2" B="1" C="1" D="Planter" E="0" F="0"/></DVC>'
    )
    [table] = _read(_devices_task(tmp_path, devices))
    assert [m.name for m in table.machines] == ["Machine", "Planter"]
    assert table.operation_type == "planted"
    assert table.columns["seedRate"].tolist() == [80_000.0] * 3


def test_sections_the_state_counts_before_the_first_not_installed_share_the_boom(tmp_path):
    """No sections described: those before the first "not installed" (3) share the 12 m boom, 3 x 4 m."""
    # Given a 12 m boom (0043) whose condensed work state (00A1) has sections 1-3, then 4-16 not installed (3):
    # all three on, then section 2 off
    not_installed = 0xFFFFFF << 8
    states = [0b11_01_01_01 | not_installed] * 2 + [0b11_01_00_01 | not_installed] * 2
    points = [(t * 1000, 48 + t * 2e-5, 11, {0: 12_000, 1: s - 2**32, 2: 15_000}) for t, s in enumerate(states)]
    _hand_log(tmp_path, "TLG00001", [0x0043, 0x00A1, 0x0007], points)
    # When read, then a point's width is 4 m for each section on
    [table] = _read(_hand_task(tmp_path, ["TLG00001"]))
    assert table.units["equipmentWidth"] == "m"
    assert table.columns["equipmentWidth"].tolist() == pytest.approx([12.0, 12.0, 8.0, 8.0])


def test_a_section_described_with_an_actual_and_a_maximum_width_is_its_actual_width(tmp_path):
    """A section described with both an actual (0043, 2 m) and a maximum (0046, 3 m) width is 2 m wide."""
    # Given a spreader whose three sections each say 2 m actual, 3 m maximum, all on
    properties, sections = [], []
    for n in (1, 2, 3):
        properties.append(f'<DPT A="{20 + n}" B="0043" C="2000" D="Width"/><DPT A="{30 + n}" B="0046" C="3000"/>')
        dors = f'<DOR A="{20 + n}"/><DOR A="{30 + n}"/>'
        sections.append(f'<DET A="DET-{1 + n}" B="{1 + n}" C="4" D="Section {n}" E="{n}" F="1">{dors}</DET>')
    devices = (
        f'<DVC A="DVC-1" B="Spreader" D="{_name(5)}"><DET A="DET-1" B="1" C="1" D="Spreader" E="0" F="0"/>'
        + "".join(sections + properties)
        + "</DVC>"
    )
    _hand_log(tmp_path, "TLG00001", [0x00A1, 0x0007], _hand_points({0: 0b01_01_01, 1: 15_000}))
    # When read, then the width is the three sections' actual widths
    [table] = _read(_devices_task(tmp_path, devices))
    assert table.operation_type == "applied"
    assert table.columns["equipmentWidth"].tolist() == pytest.approx([6.0] * 3)


def test_a_time_log_listed_again_in_its_task_is_read_once(tmp_path):
    """Each copy joined the log to itself, its columns once more per copy: a 223 KB upload listing one log 300 times
    took 4.7 GB and wrote an 836 MB raw output of the same points."""
    _hand_log(tmp_path, "TLG00001", [0x0054], _hand_points({0: 500_000}))
    [table] = _read(_hand_task(tmp_path, ["TLG00001", "tlg00001", *["TLG00001"] * 200]))
    assert len(table) == 3
    assert [name for name in table.raw_columns if name.startswith("DDI0054")] == ["DDI0054_DET-1"]
    assert "time logs listed more than once in the task are read once: TLG00001" in table.warnings


def test_an_xfr_naming_task_data_itself_or_a_file_read_already_is_read_once(tmp_path):
    """Each such XFR merged the file's elements again: 2,000 of them (a 553-byte upload) took 1.9 GB, and each copy
    of a task was converted again as a task of its own ("Harvest 1", "Harvest 1 (TSK1)")."""
    _hand_log(tmp_path, "TLG00001", [0x0054], _hand_points({0: 500_000}))
    taskdata = _hand_task(tmp_path, ["TLG00001"])
    (tmp_path / "EXT00001.XML").write_text('<XFC><CTR A="CTR1" B="Smith"/></XFC>')
    xfrs = '<XFR A="TASKDATA" B="1"/>' * 500 + '<XFR A="EXT00001" B="1"/>' * 3
    taskdata.write_text(taskdata.read_text().replace("</ISO11783_TaskData>", xfrs + "</ISO11783_TaskData>"))
    [table] = _read(taskdata)
    assert len(table) == 3
    assert "external files referenced by XFR again, or TASKDATA itself, are read once: TASKDATA, EXT00001" in (
        table.warnings
    )
    assert not any("duplicate XML id" in warning for warning in table.warnings)
