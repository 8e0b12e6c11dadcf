"""Odd variants of real sample files, built in a test's tmp_path: what an exporter or a damaged upload could give."""

import glob
import shutil
import struct
from pathlib import Path
from xml.etree import ElementTree

from conversion.readers import Dataset
from conversion.readers.isoxml import IsoxmlReader
from tests.conversion.readers.conftest import PTN_ORDER, walk_tlg

# The times SingleDPD's task writes on its TIM and ASP starts (without a zone).
SINGLE_DPD_TASK_STAMPS = ("2022-10-19T16:03:11", "2022-10-19T16:05:26", "2022-10-19T16:03:13")


def copy_shapefile_set(folder: Path, stem: str, dest: Path, *, leave_out: tuple[str, ...] = ()) -> Path:
    """Copy the parts and sidecars of shapefile `stem` (but the suffixes in `leave_out`) to `dest`; its .shp."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in folder.glob(f"{glob.escape(stem)}*"):
        if part.suffix.lower() not in leave_out:
            shutil.copy(part, dest / part.name)
    return dest / f"{stem}.shp"


def set_dbf_text(dbf: Path, field: str, value: bytes, *, language_driver: int | None = None) -> None:
    """Write the bytes `value` (space-padded to the field's width) into text field `field` of every record, as an
    exporter writing in some code page would; optionally set the header's language driver id (byte 29)."""
    data = bytearray(dbf.read_bytes())
    header_len = int.from_bytes(data[8:10], "little")
    record_len = int.from_bytes(data[10:12], "little")
    count = int.from_bytes(data[4:8], "little")
    offset, pos = 1, 32
    while data[pos] != 0x0D:
        name, width = data[pos : pos + 11].split(b"\0")[0].decode("ascii"), data[pos + 16]
        if name == field:
            break
        offset += width
        pos += 32
    else:
        raise AssertionError(f"no field {field} in {dbf.name}")
    assert len(value) <= width
    for record in range(count):
        start = header_len + record * record_len + offset
        data[start : start + width] = value.ljust(width, b" ")
    if language_driver is not None:
        data[29] = language_driver
    dbf.write_bytes(bytes(data))


def fixed_start_time_log(xml_path: Path, bin_path: Path, start: str) -> tuple[bytes, bytes]:
    """A time log rewritten to a fixed start: the header's TIM A holds `start` and its records no time of their own
    (ISO 11783-10: an attribute with a value is fixed for all records). GPS time (PTN H/I) is left out too, so the
    start is the only time the log states. Positions and DLV values stay as recorded. Returns (XML, binary)."""
    root = ElementTree.parse(xml_path).getroot()
    ptn = root.find("PTN")
    kept = [a for a in "ABCDEFG" if ptn.get(a) == ""]
    for attr in ("H", "I"):
        ptn.attrib.pop(attr, None)
    root.set("A", start)
    formats = {"A": "<i", "B": "<i", "C": "<i", "D": "<B", "E": "<H", "F": "<H", "G": "<B"}
    binary = bytearray()
    for record in walk_tlg(xml_path, bin_path)["records"]:
        for attr in kept:
            binary += struct.pack(formats[attr], record["ptn"][attr])
        binary += struct.pack("<B", len(record["values"]))
        for index, value in record["values"]:
            binary += struct.pack("<Bi", index, value)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True), bytes(binary)


def rewritten_time_log(xml_path: Path, bin_path: Path, edit) -> bytes:
    """The binary of a time log whose records `edit(record)` changed (a record as `walk_tlg` reads it: `tc_ms`,
    `tc_day`, `ptn` by attribute letter, `values`), written back in the header's layout."""
    root = ElementTree.parse(xml_path).getroot()
    ptn = root.find("PTN")
    present = [a for a in PTN_ORDER if ptn is not None and ptn.get(a) == ""]
    formats = {"A": "<i", "B": "<i", "C": "<i", "D": "<B", "E": "<H", "F": "<H", "G": "<B", "H": "<I", "I": "<H"}
    binary = bytearray()
    for record in walk_tlg(xml_path, bin_path)["records"]:
        edit(record)
        if root.get("A") == "":
            binary += struct.pack("<IH", record["tc_ms"], record["tc_day"])
        for attr in present:
            binary += struct.pack(formats[attr], record["ptn"][attr])
        binary += struct.pack("<B", len(record["values"]))
        for index, value in record["values"]:
            binary += struct.pack("<Bi", index, value)
    return bytes(binary)


def zone_task_times(taskdata: Path, zone: str) -> None:
    """Append `zone` (`+13:00`, `Z`...) to the TIM/ASP times of SingleDPD's task in `taskdata` (TASKDATA.XML)."""
    text = taskdata.read_text()
    for stamp in SINGLE_DPD_TASK_STAMPS:
        assert f'"{stamp}"' in text
        text = text.replace(f'"{stamp}"', f'"{stamp}{zone}"')
    taskdata.write_text(text)


def read_one_task(taskdata: Path):
    """The point table of the one task of an ISOXML data set, read without an internal error."""
    reader = IsoxmlReader()
    tables = reader.read(Dataset("ISOXML", taskdata, taskdata.parent, taskdata.parent.name))
    assert not reader.failed, "a task met an internal error"
    [table] = tables
    return table
