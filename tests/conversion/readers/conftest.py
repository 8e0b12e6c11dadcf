"""Fixtures for reader tests: sample paths, extraction of sample zips, and an independent TLG record walker."""

import struct
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conversion.archive import detect, safe_extract
from tests.conftest import sample_path

DOTNET = "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata"
PTN_SIZES = {"A": 4, "B": 4, "C": 4, "D": 1, "E": 2, "F": 2, "G": 1, "H": 4, "I": 2}
PTN_ORDER = "ABCDEFGHI"
SINGLE_DPD = f"{DOTNET}/LoadFromStream/SingleDPD.zip"


@pytest.fixture
def single_dpd(samples_dir: Path, tmp_path: Path) -> Path:
    """The SingleDPD export (one task, one time log) extracted to `tmp_path/original`, to be rewritten."""
    folder = tmp_path / "original"
    with zipfile.ZipFile(samples_dir / SINGLE_DPD) as zf:
        zf.extractall(folder)
    return folder


@pytest.fixture(scope="session")
def valid_timelogs(samples_dir: Path) -> Path:
    """The CCI forage harvester export (TASKDATA.XML + 21 time logs)."""
    return sample_path(samples_dir, f"{DOTNET}/TimeLogs/ValidTimeLogs")


@pytest.fixture(scope="session")
def extracted(samples_dir: Path, tmp_path_factory):
    """Extract a sample zip (path relative to the samples folder) once per session; returns the folder."""
    cache: dict[str, Path] = {}

    def extract(relative: str) -> Path:
        if relative not in cache:
            dest = tmp_path_factory.mktemp("zip")
            safe_extract(samples_dir / relative, dest)
            cache[relative] = dest
        return cache[relative]

    return extract


@pytest.fixture(scope="session")
def detect_zip(extracted):
    """Extract a sample zip and run detection on it."""
    return lambda relative: detect(extracted(relative))


def walk_tlg(xml_path: Path, bin_path: Path) -> dict:
    """Independent reading of a time log, straight from the ISO 11783-10 layout with `struct`, record by record.

    Returns the record count, bytes consumed, per-record (lat, lon) raw ints (None if absent), TC ms/day, GPS ms/day,
    the raw values logged per DLV index, in order, and the byte offset where the record ends.
    """
    root = ElementTree.parse(xml_path).getroot()
    ptn = root.find("PTN")
    ptn_present = [a for a in PTN_ORDER if ptn is not None and ptn.get(a) == ""]
    data = bin_path.read_bytes()
    fixed = (6 if root.get("A") == "" else 0) + sum(PTN_SIZES[a] for a in ptn_present)
    pos, records = 0, []
    while pos + fixed + 1 <= len(data):
        rec: dict = {"ptn": {}, "values": []}
        if root.get("A") == "":
            rec["tc_ms"], rec["tc_day"] = struct.unpack_from("<IH", data, pos)
            pos += 6
        for attr in ptn_present:
            size = PTN_SIZES[attr]
            fmt = {1: "<B", 2: "<H", 4: "<i" if attr in "ABC" else "<I"}[size]
            rec["ptn"][attr] = struct.unpack_from(fmt, data, pos)[0]
            pos += size
        count = data[pos]
        pos += 1
        if pos + 5 * count > len(data):
            break
        for _ in range(count):
            index, value = struct.unpack_from("<Bi", data, pos)
            rec["values"].append((index, value))
            pos += 5
        rec["end"] = pos
        records.append(rec)
    return {"records": records, "consumed": pos, "size": len(data)}
