"""Safe extraction of uploaded zips and detection of the data sets inside.

Uploads are untrusted: extraction refuses path traversal, absolute paths and symlinks, and stops a zip bomb
before it fills the disk (entry count, total size and compression ratio are checked on the declared sizes first
and again on the bytes actually written while streaming). Nested zips are extracted in place, recursively, under
the same budget. `detect` then finds every data set at any depth, case-insensitively, including proprietary
formats we recognise but cannot read.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from conversion.readers.base import Dataset

GIB = 1024**3
CHUNK = 1024 * 1024
# Ratios are only meaningful for entries large enough to hurt; tiny highly-compressible files are common.
RATIO_MIN_BYTES = 1024 * 1024
JUNK_DIRS = frozenset({"__macosx"})
JUNK_FILES = frozenset({".ds_store", "thumbs.db", "desktop.ini"})
# A shapefile's parts and sidecars: the files next to the .shp whose names start with its stem.
SHAPEFILE_SIDECARS = (".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".xml", ".json")


class ArchiveError(Exception):
    """The upload cannot be extracted safely; the message says why."""


@dataclass
class ExtractionBudget:
    """Limits shared by an archive and every zip nested in it."""

    max_entries: int
    max_total_bytes: int
    max_ratio: float
    max_depth: int
    entries: int = 0
    total_bytes: int = 0

    def add_entry(self, name: str) -> None:
        """Count one entry; fail past the entry limit."""
        self.entries += 1
        if self.entries > self.max_entries:
            raise ArchiveError(f"too many entries in the archive (more than {self.max_entries}) at {name}")

    def add_bytes(self, n: int, name: str) -> None:
        """Count written bytes; fail past the total size limit."""
        self.total_bytes += n
        if self.total_bytes > self.max_total_bytes:
            raise ArchiveError(
                f"archive expands beyond {self.max_total_bytes} bytes (stopped while extracting {name}); "
                "this looks like a zip bomb"
            )


@dataclass
class ExtractResult:
    """What extraction wrote and what it skipped."""

    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    total_bytes: int = 0


def safe_extract(
    zip_path: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    max_entries: int = 20_000,
    max_total_bytes: int = 20 * GIB,
    max_ratio: float = 200.0,
    max_depth: int = 3,
    name: str | None = None,
) -> ExtractResult:
    """Extract `zip_path` into `dest` safely; nested zips are extracted next to where they were, then removed.

    Raises `ArchiveError` for a non-zip or corrupt file and for anything unsafe or unusable (traversal, absolute
    path, symlink, encrypted entry, a name too long for the disk, a file and a folder of one name, too many
    entries, too large, too compressed, zips nested deeper than `max_depth`). Messages name the archive `name`
    (the uploaded file's name; by default the file name of `zip_path`).
    """
    dest_path = Path(dest)
    dest_path.mkdir(parents=True, exist_ok=True)
    budget = ExtractionBudget(max_entries, max_total_bytes, max_ratio, max_depth)
    result = ExtractResult()
    _extract(Path(zip_path), dest_path.resolve(), budget, result, depth=0, label=name or Path(zip_path).name)
    result.total_bytes = budget.total_bytes
    return result


def _open_zip(path: Path, label: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ArchiveError(f"{label} is not a zip archive or is truncated ({exc})") from exc
    except (OSError, ValueError, EOFError) as exc:
        raise ArchiveError(f"{label} cannot be opened as a zip archive ({exc})") from exc


def _extract(zip_path: Path, dest: Path, budget: ExtractionBudget, result: ExtractResult, depth: int, label: str):
    with _open_zip(zip_path, label) as zf:
        try:
            infos = zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ArchiveError(f"{label}: corrupt zip directory ({exc})") from exc
        planned: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        declared = 0
        for info in infos:
            budget.add_entry(info.filename)
            rel = _safe_relative(info, label)
            if rel is None:
                result.skipped.append(info.filename)
                continue
            if _is_symlink(info):
                raise ArchiveError(f"{label}: entry {info.filename!r} is a symbolic link, which is not allowed")
            if info.flag_bits & 0x1:
                raise ArchiveError(
                    f"{label}: entry {info.filename!r} is encrypted (password protected); upload the files without "
                    "a password"
                )
            if info.is_dir():
                _make_folder(dest / rel, info, label)
                continue
            declared += info.file_size
            _check_ratio(info.file_size, info.compress_size, info.filename, budget, label)
            planned.append((info, rel))
        if budget.total_bytes + declared > budget.max_total_bytes:
            raise ArchiveError(
                f"{label} declares {declared} bytes uncompressed, beyond the limit of {budget.max_total_bytes}; "
                "this looks like a zip bomb"
            )
        nested: list[Path] = []
        for info, rel in planned:
            target = dest / rel
            try:
                inside = _inside(target, dest)
            except OSError as exc:
                raise _unwritable(info, label, exc) from exc
            if not inside:
                raise ArchiveError(f"{label}: entry {info.filename!r} would be written outside the destination")
            _make_folder(target.parent, info, label)
            _stream_entry(zf, info, target, budget, label)
            if rel.suffix.lower() == ".zip":
                nested.append(target)
            else:
                result.files.append(target)
    for inner in nested:
        if depth + 1 > budget.max_depth:
            raise ArchiveError(f"zips nested more than {budget.max_depth} levels deep ({inner.name})")
        folder = _free_folder(inner.with_suffix(""))
        folder.mkdir(parents=True)
        _extract(inner, folder, budget, result, depth + 1, label=f"{label}/{inner.name}")
        result.nested.append(str(inner.relative_to(dest)))
        inner.unlink()


def _safe_relative(info: zipfile.ZipInfo, label: str) -> PurePosixPath | None:
    """The entry's path relative to the destination; None for junk; ArchiveError for unsafe names."""
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or name.startswith("//"):
        raise ArchiveError(f"{label}: entry {info.filename!r} has an absolute path, which is not allowed")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ArchiveError(f"{label}: entry {info.filename!r} points outside the archive (path traversal)")
    if not parts:
        return None
    if any(p.lower() in JUNK_DIRS for p in parts) or parts[-1].lower() in JUNK_FILES or parts[-1].startswith("._"):
        return None
    if any("\x00" in p for p in parts):
        raise ArchiveError(f"{label}: entry {info.filename!r} has a NUL character in its name")
    return PurePosixPath(*parts)


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    # Unix mode bits live in the high 16 bits of the external attributes (zero for DOS-made zips).
    return stat.S_ISLNK(info.external_attr >> 16)


def _check_ratio(size: int, compressed: int, name: str, budget: ExtractionBudget, label: str) -> None:
    if size >= RATIO_MIN_BYTES and size > budget.max_ratio * max(compressed, 1):
        raise ArchiveError(
            f"{label}: entry {name!r} expands {size / max(compressed, 1):.0f} times "
            f"(limit {budget.max_ratio:.0f}); this looks like a zip bomb"
        )


def _inside(target: Path, dest: Path) -> bool:
    try:
        target.resolve().relative_to(dest)
    except ValueError:
        return False
    return True


def _make_folder(folder: Path, info: zipfile.ZipInfo, label: str) -> None:
    """Create the folder an entry goes in; ArchiveError when the entries clash or a name cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ArchiveError(
            f"{label}: entry {info.filename!r} needs a folder where another entry is a file of the same name"
        ) from exc
    except OSError as exc:
        raise _unwritable(info, label, exc) from exc


def _unwritable(info: zipfile.ZipInfo, label: str, exc: OSError) -> ArchiveError:
    if exc.errno == errno.ENAMETOOLONG:
        shown = info.filename if len(info.filename) <= 80 else info.filename[:80] + "..."
        return ArchiveError(f"{label}: entry {shown!r} has a name or path too long to be extracted")
    return ArchiveError(f"{label}: entry {info.filename!r} cannot be extracted ({exc.strerror or exc})")


def _stream_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget, label: str) -> None:
    """Copy one entry in chunks, counting real bytes: declared sizes can lie."""
    written = 0
    try:
        with zf.open(info) as src, open(target, "xb") as out:
            while True:
                chunk = src.read(CHUNK)
                if not chunk:
                    break
                written += len(chunk)
                budget.add_bytes(len(chunk), info.filename)
                if written >= RATIO_MIN_BYTES and written > budget.max_ratio * max(info.compress_size, 1):
                    raise ArchiveError(
                        f"{label}: entry {info.filename!r} expands more than {budget.max_ratio:.0f} times its "
                        "compressed size; this looks like a zip bomb"
                    )
                if written > info.file_size:
                    raise ArchiveError(f"{label}: entry {info.filename!r} is larger than its declared size")
                out.write(chunk)
    except ArchiveError:
        target.unlink(missing_ok=True)
        raise
    except FileExistsError as exc:
        if target.is_dir():
            raise ArchiveError(
                f"{label}: entry {info.filename!r} is a file where another entry needs a folder of the same name"
            ) from exc
        raise ArchiveError(f"{label}: entry {info.filename!r} appears twice") from exc
    except RuntimeError as exc:  # zipfile: encrypted entry (a flag the directory did not show)
        target.unlink(missing_ok=True)
        raise ArchiveError(f"{label}: entry {info.filename!r} is encrypted (password protected)") from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise _unwritable(info, label, exc) from exc
        target.unlink(missing_ok=True)
        raise ArchiveError(f"{label}: entry {info.filename!r} is corrupt or truncated ({exc})") from exc
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError) as exc:
        target.unlink(missing_ok=True)
        raise ArchiveError(f"{label}: entry {info.filename!r} is corrupt or truncated ({exc})") from exc


def _free_folder(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}_{n}")
        n += 1
    return candidate


# -- detection ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnsupportedFound:
    """A proprietary data set we recognise but cannot read (no open specification)."""

    format_name: str
    path: Path


@dataclass
class Detection:
    """Data sets found under a folder: convertible ones and recognised-but-unsupported ones."""

    datasets: list[Dataset] = field(default_factory=list)
    unsupported: list[UnsupportedFound] = field(default_factory=list)


JD_GS = "John Deere GS2/GS3"
JD_GEN4 = "John Deere Gen4"
CNH_CN1 = "CNH CN1"
AG_LEADER = "Ag Leader"
PRECISION_PLANTING = "Precision Planting 2020"
CLIMATE = "Climate FieldView"
TRIMBLE_AGDATA = "Trimble AgData"
TRIMBLE_AGGPS = "Trimble AgGPS"

_FILE_FORMATS = {
    ".yld": AG_LEADER,
    ".ilf": AG_LEADER,
    ".agdata": AG_LEADER,
    ".2020": PRECISION_PLANTING,
    ".dat": CLIMATE,
}
_SNIFF_BYTES = 1024 * 1024
_FC_RE = re.compile(rb'"type"\s*:\s*"FeatureCollection"')
_POINT_RE = re.compile(rb'"type"\s*:\s*"(Multi)?Point"')
_OTHER_GEOM_RE = re.compile(rb'"type"\s*:\s*"(Multi)?(Polygon|LineString)"')


def detect(root: str | os.PathLike, *, name: str | None = None) -> Detection:
    """Find data sets anywhere under `root` (case-insensitive names; symlinks are not followed). A task data set at
    the top of `root` is named after the archive `name` (the uploaded file's name without `.zip`; TASKDATA when
    that leaves nothing), or after the `root` folder when no `name` is given."""
    root_path = Path(root)
    top_name = root_path.name if name is None else (_archive_stem(name) or "TASKDATA")
    found = Detection()
    for dirpath, dirnames, filenames in os.walk(root_path, followlinks=False):
        here = Path(dirpath)
        lower_files = {f.lower(): f for f in filenames}
        dir_format = _proprietary_folder(here, dirnames, lower_files)
        if dir_format is not None:
            found.unsupported.append(UnsupportedFound(dir_format, here))
            dirnames[:] = []
            continue
        if "taskdata.xml" in lower_files:
            path = here / lower_files["taskdata.xml"]
            found.datasets.append(Dataset("ISOXML", path, here, _display_name(here, root_path, top_name)))
        dirnames.sort()
        for name in sorted(filenames):
            path = here / name
            suffix = Path(name.lower()).suffix
            file_format = _file_dataset_format(path, lower_files)
            if file_format is not None:
                found.datasets.append(Dataset(file_format, path, here, Path(name).stem))
            elif suffix in _FILE_FORMATS and "taskdata.xml" not in lower_files:
                fmt = _FILE_FORMATS[suffix]
                if not any(u.format_name == fmt and u.path == here for u in found.unsupported):
                    found.unsupported.append(UnsupportedFound(fmt, here))
    return found


def _proprietary_folder(here: Path, dirnames: list[str], lower_files: dict[str, str]) -> str | None:
    """The proprietary format a folder holds as a whole (its subfolders are not searched further)."""
    name = here.name.lower()
    if name == "rcd" and _tree_has(here, (".fdd", ".fdl", ".fdr"), ("global.ver",)):
        return JD_GS
    if name == "jd-data" and _tree_has(here / _child(here, "log"), (".jdl",), ()):
        return JD_GEN4
    if name.endswith(".cn1") or "index.vy1" in lower_files:
        return CNH_CN1
    if name == "agdata":
        return TRIMBLE_AGDATA
    if name == "aggps":
        return TRIMBLE_AGGPS
    return None


def _child(folder: Path, lower_name: str) -> str:
    try:
        for entry in folder.iterdir():
            if entry.name.lower() == lower_name:
                return entry.name
    except OSError:
        pass
    return lower_name


def _tree_has(folder: Path, suffixes: tuple[str, ...], names: tuple[str, ...]) -> bool:
    if not folder.is_dir():
        return False
    for _dirpath, _dirs, files in os.walk(folder, followlinks=False):
        for f in files:
            lower = f.lower()
            if lower in names or Path(lower).suffix in suffixes:
                return True
    return False


def _display_name(folder: Path, root: Path, top_name: str) -> str:
    try:
        rel = folder.relative_to(root)
    except ValueError:
        return folder.name
    return str(rel) if str(rel) != "." else top_name


def _archive_stem(name: str | None) -> str:
    base = PurePosixPath((name or "").replace("\\", "/")).name
    return base[:-4] if base.lower().endswith(".zip") else base


def dataset_files(dataset: Dataset) -> list[Path]:
    """The data set's own files (what its `originalFile` holds), sorted.

    ISOXML: the files directly in its folder (ISO 11783-10 keeps TASKDATA.XML and the files it references flat in
    one folder), without subfolders and without the files of other data sets `detect` finds next to it (a
    shapefile's parts, a GeoJSON point collection), so a task data set at the top of an upload does not carry the
    rest of the upload. Shapefile: its parts and sidecars. GeoJSON: the file.
    """
    if dataset.format == "GEOJSON":
        return [dataset.path]
    files = sorted(p for p in dataset.root.iterdir() if p.is_file() and not p.is_symlink())
    if dataset.format == "SHAPEFILE":
        return _shapefile_parts(dataset.path, files)
    lower_names = {p.name.lower() for p in files}
    others: set[Path] = set()
    for path in files:
        file_format = _file_dataset_format(path, lower_names)
        if file_format == "SHAPEFILE":
            others.update(_shapefile_parts(path, files))
        elif file_format == "GEOJSON":
            others.add(path)
    return [p for p in files if p not in others]


def _file_dataset_format(path: Path, lower_names) -> str | None:
    """The format of the data set a single file starts, by `detect`'s rule: a `.shp` with its `.dbf` beside it
    (`lower_names`: the lower-case names of its folder), or a GeoJSON point collection (not a John Deere metadata
    sidecar); None otherwise."""
    lower = path.name.lower()
    suffix = Path(lower).suffix
    if suffix == ".shp":
        return "SHAPEFILE" if f"{lower[:-4]}.dbf" in lower_names else None
    if suffix in (".geojson", ".json") and not lower.endswith("-deere-metadata.json") and _is_point_collection(path):
        return "GEOJSON"
    return None


def _shapefile_parts(shp: Path, files: list[Path]) -> list[Path]:
    stem = shp.stem.lower()
    return [p for p in files if p.name.lower().startswith(stem) and p.suffix.lower() in SHAPEFILE_SIDECARS]


def _is_point_collection(path: Path) -> bool:
    """Cheap check on the first MiB: a FeatureCollection whose first geometries are points."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    if not _FC_RE.search(head):
        return False
    point = _POINT_RE.search(head)
    other = _OTHER_GEOM_RE.search(head)
    if point is None:
        return False
    if other is not None and other.start() < point.start():
        return False
    if len(head) < _SNIFF_BYTES:
        try:
            doc = json.loads(head.decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError):
            return False
        return isinstance(doc, dict) and doc.get("type") == "FeatureCollection"
    return True


def cleanup(folder: str | os.PathLike) -> None:
    """Remove an extraction folder (ignoring errors: it is scratch space)."""
    shutil.rmtree(folder, ignore_errors=True)
