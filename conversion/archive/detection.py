"""Detection of the data sets in an extracted upload: every data set at any depth, case-insensitively, including
proprietary formats we recognise but cannot read, and the files that make up each."""

from __future__ import annotations

import codecs
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from conversion.readers.base import Dataset
from platform_site.text import storable

from .extraction import UNREADABLE_SUFFIX


@dataclass(frozen=True)
class UnsupportedFound:
    """A proprietary data set we recognise but cannot read (no open specification), or a zip nested in the upload
    that cannot be read (`reason` says why; `path` is where it was)."""

    format_name: str
    path: Path
    reason: str | None = None


@dataclass
class Detection:
    """Data sets found under a folder: convertible ones and recognised-but-unsupported ones."""

    datasets: list[Dataset] = field(default_factory=list)
    unsupported: list[UnsupportedFound] = field(default_factory=list)
    # Files that look like the start of a data set but lack a part (a .shp without its .dbf), as "<path>: <what>".
    incomplete: list[str] = field(default_factory=list)


JD_GS = "John Deere GS2/GS3"
JD_GEN4 = "John Deere Gen4"
CNH_CN1 = "CNH CN1"
AG_LEADER = "Ag Leader"
PRECISION_PLANTING = "Precision Planting 2020"
CLIMATE = "Climate FieldView"
TRIMBLE_AGDATA = "Trimble AgData"
TRIMBLE_AGGPS = "Trimble AgGPS"
UNREADABLE_ZIP = "ZIP"
# The most of an unreadable nested zip's reason read back (`extraction.UNREADABLE_SUFFIX`).
UNREADABLE_REASON_CHARS = 2000

_FILE_FORMATS = {
    ".yld": AG_LEADER,
    ".ilf": AG_LEADER,
    ".agdata": AG_LEADER,
    ".2020": PRECISION_PLANTING,
    ".dat": CLIMATE,
}
# A shapefile's parts and sidecars: the files next to the .shp whose names start with its stem.
SHAPEFILE_SIDECARS = (".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".xml", ".json")
_SNIFF_BYTES = 1024 * 1024
_FC_RE = re.compile(r'"type"\s*:\s*"FeatureCollection"')
_POINT_RE = re.compile(r'"type"\s*:\s*"(Multi)?Point"')
_OTHER_GEOM_RE = re.compile(r'"type"\s*:\s*"(Multi)?(Polygon|LineString)"')


def detect(root: str | os.PathLike, *, name: str | None = None) -> Detection:
    """Find data sets anywhere under `root` (case-insensitive names; symlinks are not followed). A task data set at
    the top of `root` is named after the archive `name` (the uploaded file's name without `.zip`; TASKDATA when
    that leaves nothing), or after the `root` folder when no `name` is given. Names taken from the archive are
    cleaned like any text from outside (`storable`: a control character in an entry's name is no part of a name)."""
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
            if name.lower().endswith(".zip" + UNREADABLE_SUFFIX):
                found.unsupported.append(UnsupportedFound(UNREADABLE_ZIP, path.with_suffix(""), _unreadable(path)))
                continue
            file_format = _file_dataset_format(path, lower_files)
            if file_format is not None:
                found.datasets.append(Dataset(file_format, path, here, storable(Path(name).stem) or storable(name)))
            elif suffix == ".shp":
                found.incomplete.append(
                    f"{path.relative_to(root_path).as_posix()}: no {Path(name).stem}.dbf beside it (a shapefile's "
                    "values are in its .dbf: zip the .shp, .shx, .dbf and .prj together)"
                )
            elif suffix in _FILE_FORMATS and "taskdata.xml" not in lower_files:
                fmt = _FILE_FORMATS[suffix]
                if not any(u.format_name == fmt and u.path == here for u in found.unsupported):
                    found.unsupported.append(UnsupportedFound(fmt, here))
    return found


def _unreadable(marker: Path) -> str:
    """Why the nested zip a marker stands for could not be read, as extraction wrote it."""
    try:
        with open(marker, encoding="utf-8", errors="replace") as fh:
            return storable(fh.read(UNREADABLE_REASON_CHARS)) or "it cannot be read"
    except OSError:
        return "it cannot be read"


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
    if str(rel) == ".":
        return top_name
    return "/".join(part for part in map(storable, rel.parts) if part) or top_name


def _archive_stem(name: str | None) -> str:
    """The uploaded file's name without `.zip`, cleaned; empty when only dots are left (`..zip` named its task data
    "."): no name is left."""
    base = PurePosixPath((name or "").replace("\\", "/")).name
    stem = storable(base[:-4] if base.lower().endswith(".zip") else base)
    return stem if stem.strip(".") else ""


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
    """Cheap check on the first MiB, read as the reader reads it (UTF-8, UTF-16 or UTF-32 as `json.loads` tells them
    apart: the byte patterns never matched UTF-16's interleaved NULs): a FeatureCollection whose geometries there
    are mostly points. A file that short which looks like one but is no JSON (cut short, nested too deeply, not
    UTF-8) is one: its reader fails it with the reason, named after it; otherwise the upload was "No valid files
    found", or failed whole."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    # A character cut by the end of the MiB is left out; bytes that are not in the encoding do not hide the rest.
    head = codecs.getincrementaldecoder(json.detect_encoding(data))(errors="replace").decode(data)
    if not _FC_RE.search(head):
        return False
    # Mostly points: a collection of points that begins with a line or a polygon is still one (that feature is left
    # out, and said: the whole file was passed over unsaid), and a boundary with a label point is none.
    if len(_POINT_RE.findall(head)) <= len(_OTHER_GEOM_RE.findall(head)):
        return False
    if len(data) < _SNIFF_BYTES:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
            return True
        return isinstance(doc, dict) and doc.get("type") == "FeatureCollection"
    return True
