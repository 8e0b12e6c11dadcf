"""Safe extraction of hostile and odd zips, and detection of data sets (including unsupported proprietary ones)."""

import errno
import io
import random
import stat
import zipfile
from pathlib import Path

import pytest

from conversion.archive import (
    AG_LEADER,
    CLIMATE,
    CNH_CN1,
    JD_GEN4,
    JD_GS,
    PRECISION_PLANTING,
    TRIMBLE_AGDATA,
    TRIMBLE_AGGPS,
    ArchiveError,
    detect,
    safe_extract,
)


def _zip(path: Path, entries: dict[str, bytes], *, compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def _files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_non_zip_bytes_fail_clearly(tmp_path):
    path = tmp_path / "upload.zip"
    path.write_bytes(b"this is not a zip at all" * 100)
    with pytest.raises(ArchiveError, match="not a zip archive"):
        safe_extract(path, tmp_path / "out")


def test_truncated_zip_fails_clearly(samples_dir, tmp_path):
    data = (
        samples_dir / "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/LoadFromStream" / "SingleDPD.zip"
    ).read_bytes()
    path = tmp_path / "cut.zip"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArchiveError, match="not a zip archive or is truncated"):
        safe_extract(path, tmp_path / "out")


def test_corrupt_entry_fails_clearly(tmp_path):
    payload = random.Random(1).randbytes(5000)
    path = _zip(tmp_path / "c.zip", {"TASKDATA/TLG00001.BIN": payload})
    data = bytearray(path.read_bytes())
    data[100:130] = b"\x00" * 30  # inside the compressed stream of the only entry
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="corrupt"):
        safe_extract(path, tmp_path / "out")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../evil.txt", "path traversal"),
        ("data/../../evil.txt", "path traversal"),
        ("/etc/evil.txt", "absolute path"),
        ("C:/evil.txt", "absolute path"),
        ("..\\evil.txt", "path traversal"),
    ],
)
def test_unsafe_names_are_refused(tmp_path, name, reason):
    path = tmp_path / "bad.zip"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ok.txt", b"fine")
        zf.writestr(zipfile.ZipInfo(name), b"evil")
    path.write_bytes(buf.getvalue())
    dest = tmp_path / "a" / "b" / "out"
    with pytest.raises(ArchiveError, match=reason):
        safe_extract(path, dest)
    assert not list(tmp_path.rglob("evil.txt"))


def test_symlink_entries_are_refused(tmp_path):
    info = zipfile.ZipInfo("TASKDATA/link")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    path = tmp_path / "link.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        safe_extract(path, tmp_path / "out")
    assert not (tmp_path / "out" / "TASKDATA" / "link").exists()


def test_zip_bomb_stops_on_total_size(tmp_path):
    # 20 MB of zeros compress to about 20 KB; the limit is 5 MB.
    path = _zip(tmp_path / "bomb.zip", {f"part{i}.bin": b"\0" * (4 * 1024 * 1024) for i in range(5)})
    assert path.stat().st_size < 200_000
    with pytest.raises(ArchiveError, match="zip bomb"):
        safe_extract(path, tmp_path / "out", max_total_bytes=5 * 1024 * 1024, max_ratio=10_000)
    assert sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file()) <= 5 * 1024 * 1024


def test_zip_bomb_stops_on_compression_ratio(tmp_path):
    path = _zip(tmp_path / "bomb.zip", {"zeros.bin": b"\0" * (8 * 1024 * 1024)})
    with pytest.raises(ArchiveError, match="expands .* times"):
        safe_extract(path, tmp_path / "out")
    assert not (tmp_path / "out" / "zeros.bin").exists()


def test_zip_bomb_of_small_entries_stops_on_the_ratio_of_the_whole_archive(tmp_path):
    """Entries under 1 MiB are not held to the ratio one by one (a small file compresses extremely well), but the
    archive as a whole is: 40 MB of zeros in 40 entries from about 80 KB."""
    path = _zip(tmp_path / "bomb.zip", {f"part{i}.bin": b"\0" * (1024 * 1024 - 1) for i in range(40)})
    with pytest.raises(ArchiveError, match=r"^bomb.zip expands \d+ times its size \(limit 200\); this looks like"):
        safe_extract(path, tmp_path / "out")
    assert not list((tmp_path / "out").rglob("*.bin"))  # refused before a byte is written
    # Within the limit, the same entries are extracted
    assert len(safe_extract(path, tmp_path / "out2", max_ratio=5_000).files) == 40


def test_lying_declared_size_is_caught_while_streaming(tmp_path):
    # Declare 1 KB but hold 3 MB: the written-bytes counter (or zipfile's own check) stops it.
    path = _zip(tmp_path / "liar.zip", {"data.bin": b"\1\2\3" * 1024 * 1024})
    data = bytearray(path.read_bytes())
    real = (3 * 1024 * 1024).to_bytes(4, "little")
    fake = (1024).to_bytes(4, "little")
    assert data.count(real) == 2  # local header and central directory
    path.write_bytes(bytes(data).replace(real, fake))
    with pytest.raises(ArchiveError):
        safe_extract(path, tmp_path / "out")
    assert not (tmp_path / "out" / "data.bin").exists()


def test_too_many_entries(tmp_path):
    path = _zip(tmp_path / "many.zip", {f"f{i}.txt": b"x" for i in range(30)})
    with pytest.raises(ArchiveError, match="too many entries"):
        safe_extract(path, tmp_path / "out", max_entries=10)


def test_junk_is_skipped(tmp_path):
    path = _zip(
        tmp_path / "mac.zip",
        {
            "TASKDATA/TASKDATA.XML": b"<ISO11783_TaskData/>",
            "__MACOSX/TASKDATA/._TASKDATA.XML": b"junk",
            "TASKDATA/._TLG00001.BIN": b"junk",
            "TASKDATA/.DS_Store": b"junk",
        },
    )
    result = safe_extract(path, tmp_path / "out")
    assert _files_under(tmp_path / "out") == ["TASKDATA/TASKDATA.XML"]
    assert len(result.skipped) == 3


def test_nested_zips_are_extracted_within_the_budget(samples_dir, tmp_path):
    inner = (
        samples_dir / "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/LoadFromStream" / "SingleDPD.zip"
    ).read_bytes()
    middle = io.BytesIO()
    with zipfile.ZipFile(middle, "w") as zf:
        zf.writestr("monitor/card.zip", inner)
    outer = _zip(tmp_path / "outer.zip", {"upload/middle.zip": middle.getvalue(), "readme.txt": b"hi"})
    safe_extract(outer, tmp_path / "out")
    found = detect(tmp_path / "out")
    assert [d.format for d in found.datasets] == ["ISOXML"]
    assert not list((tmp_path / "out").rglob("*.zip"))

    with pytest.raises(ArchiveError, match="zip bomb|beyond"):
        safe_extract(outer, tmp_path / "out2", max_total_bytes=len(inner) + 1000)


def _nested(tmp_path, levels: int):
    """An upload holding a zip in a zip... `levels` deep, the innermost holding a.txt."""
    data = _zip(tmp_path / "level0.zip", {"a.txt": b"a"}).read_bytes()
    for level in range(1, levels + 1):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(f"level{level - 1}.zip", data)
        data = buf.getvalue()
    path = tmp_path / "deep.zip"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("levels", [4, 5])
def test_nesting_depth_is_bounded(tmp_path, levels):
    with pytest.raises(ArchiveError, match="nested more than 3 levels"):
        safe_extract(_nested(tmp_path, levels), tmp_path / "out")


def test_zips_nested_three_levels_deep_are_extracted(tmp_path):
    safe_extract(_nested(tmp_path, 3), tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").rglob("*") if p.is_file()] == ["a.txt"]


@pytest.mark.parametrize(
    ("zip_name", "format_name"),
    [
        ("GS2 - 2600 Documentation Data - Field 1.zip", JD_GS),
        ("GS3 - 2630 Planting With 4 Rates.zip", JD_GS),
        ("Gen4 - 4600 Harvest Data.zip", JD_GEN4),
        ("Gen4 - 4600 Planting Data.zip", JD_GEN4),
    ],
)
def test_john_deere_display_cards_are_recognised_as_unsupported(samples_dir, tmp_path, zip_name, format_name):
    safe_extract(samples_dir / "johndeere-sampledata" / "Display data" / zip_name, tmp_path)
    found = detect(tmp_path)
    assert found.datasets == []
    assert [u.format_name for u in found.unsupported] == [format_name]


def test_other_proprietary_formats_are_recognised(tmp_path):
    layout = {
        "cnh/field.cn1/index.vy1": CNH_CN1,
        "agleader/harvest.yld": AG_LEADER,
        "pp/planting.2020": PRECISION_PLANTING,
        "climate/export.dat": CLIMATE,
        "trimble/AgData/Fields/x.bin": TRIMBLE_AGDATA,
        "trimble2/AgGPS/Data/y.bin": TRIMBLE_AGGPS,
    }
    for rel in layout:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"\0")
    found = detect(tmp_path)
    assert sorted(u.format_name for u in found.unsupported) == sorted(layout.values())
    assert found.datasets == []


@pytest.mark.parametrize(
    ("rel", "format_name"),
    [
        ("card/RCD/EIC/x.fdd", JD_GS),
        ("card/rcd/EIC/x.FDL", JD_GS),
        ("card/RCD/EIC/x.fdr", JD_GS),
        ("card/RCD/global.ver", JD_GS),
        ("card/Rcd/notes.txt", None),  # an RCD folder without display files is no GreenStar card
        ("card/jd-data/Log/x.jdl", JD_GEN4),
        ("card/JD-Data/log/x.JDL", JD_GEN4),
        ("card/jd-data/other/x.jdl", None),  # Gen4 logs live in its log folder
    ],
)
def test_each_file_that_marks_a_john_deere_card_is_enough(tmp_path, rel, format_name):
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_bytes(b"\0")
    found = detect(tmp_path)
    assert [u.format_name for u in found.unsupported] == ([format_name] if format_name else [])
    assert found.datasets == []


def test_several_data_sets_case_insensitive(tmp_path):
    for rel in ("a/taskdata/taskdata.xml", "b/TaskData/TASKDATA.XML"):
        (tmp_path / rel).parent.mkdir(parents=True)
        (tmp_path / rel).write_text("<ISO11783_TaskData/>")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "Yield.SHP").write_bytes(b"")
    (tmp_path / "c" / "Yield.DBF").write_bytes(b"")
    (tmp_path / "c" / "Orphan.shp").write_bytes(b"")
    found = detect(tmp_path)
    assert sorted((d.format, d.name) for d in found.datasets) == [
        ("ISOXML", "a/taskdata"),
        ("ISOXML", "b/TaskData"),
        ("SHAPEFILE", "Yield"),
    ]


class _FillingDisk:
    """A file being written on a disk with `room` bytes left: past them, its write fails as the kernel's does."""

    def __init__(self, file, room: int):
        self.file, self.room = file, room

    def write(self, data: bytes) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.file.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def test_a_full_disk_while_extracting_is_no_fault_of_the_archive(tmp_path, monkeypatch):
    """Every OSError was "entry ... is corrupt or truncated ([Errno 28] No space left on device)": the upload was
    blamed (and its batch failed as unreadable) for our disk."""
    from conversion.archive import disk_failure, extraction

    path = _zip(tmp_path / "card.zip", {"TASKDATA/TASKDATA.XML": random.Random(1).randbytes(3 * 1024 * 1024)})
    monkeypatch.setattr(extraction, "open", lambda *a: _FillingDisk(open(*a), 1024 * 1024), raising=False)
    with pytest.raises(OSError) as raised:
        safe_extract(path, tmp_path / "out")
    assert not isinstance(raised.value, ArchiveError) and disk_failure(raised.value)
    assert _files_under(tmp_path / "out") == []  # the partial entry removed
