"""Decoding the files of a shapefile: the DBF records in their code page, the shapes of the .shp (through its .shx
index when the data set has one) and the .prj.

pyshp reads the headers and any non-point geometry; point geometry and the DBF records, which are fixed-width,
are decoded with numpy because a per-record Python loop is 20 times slower on exports of a million rows.
"""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import numpy as np
import shapefile
import shapely
from pyproj import CRS, Transformer
from shapely import geometry as shp_geometry

from conversion.readers.base import UnreadableDataset
from conversion.readers.binary import values_at
from conversion.readers.crs import declared_crs_contradiction
from conversion.readers.textcodecs import code_page, decodes
from conversion.readers.values import number_from_text
from fields.geodesy import geodesic_areas_m2, pyproj_arrays


def _sibling(path: Path, suffix: str) -> Path | None:
    """The file next to `path` with the same stem and `suffix`, matched case-insensitively."""
    exact = path.with_suffix(suffix)
    if exact.exists():
        return exact
    for candidate in path.parent.iterdir():
        if candidate.stem.lower() == path.stem.lower() and candidate.suffix.lower() == suffix:
            return candidate
    return None


# -- DBF ------------------------------------------------------------------------------------------------------

# Code pages of the DBF header's language driver id (byte 29), as dBase, ESRI and GDAL read them. 0x57 means "the
# current ANSI code page": Windows-1252 on the Western systems these exports come from.
_LANGUAGE_DRIVERS = {
    0x01: "cp437", 0x02: "cp850", 0x03: "cp1252", 0x08: "cp865", 0x09: "cp437", 0x0A: "cp850", 0x0B: "cp437",
    0x0D: "cp437", 0x0E: "cp850", 0x0F: "cp437", 0x10: "cp850", 0x11: "cp437", 0x12: "cp850", 0x13: "cp932",
    0x14: "cp850", 0x15: "cp437", 0x16: "cp850", 0x17: "cp865", 0x18: "cp437", 0x19: "cp437", 0x1A: "cp850",
    0x1B: "cp437", 0x1C: "cp863", 0x1D: "cp850", 0x1F: "cp852", 0x22: "cp852", 0x23: "cp852", 0x24: "cp860",
    0x25: "cp850", 0x26: "cp866", 0x37: "cp850", 0x40: "cp852", 0x4D: "cp936", 0x4E: "cp949", 0x4F: "cp950",
    0x50: "cp874", 0x57: "cp1252", 0x58: "cp1252", 0x59: "cp1252", 0x64: "cp852", 0x65: "cp866", 0x66: "cp865",
    0x67: "cp861", 0x6A: "cp737", 0x6B: "cp857", 0x78: "cp950", 0x79: "cp949", 0x7A: "cp936", 0x7B: "cp932",
    0x7C: "cp874", 0x86: "cp737", 0x87: "cp852", 0x88: "cp857", 0xC8: "cp1250", 0xC9: "cp1251", 0xCA: "cp1254",
    0xCB: "cp1253", 0xCC: "cp1257",
}  # fmt: skip
# Text of a DBF that declares no code page and is not UTF-8: legacy Windows exporters write Windows-1252.
_UNDECLARED_CODEC = "cp1252"


def _dbf_codec(dbf_path: Path) -> tuple[str | None, str, list[str]]:
    """(the codec the data set's .cpg file names, or None; the codec for text that is not UTF-8 when the .cpg does
    not read it; warnings). The fallback is the code page of the DBF header's language driver, else Windows-1252:
    writers set that byte to their default whatever they write (John Deere's exports say Windows-1252), so text
    that is all UTF-8 is read as UTF-8 first (`_read_dbf`); Windows-1252 text is almost never valid UTF-8."""
    warnings: list[str] = []
    codec = None
    cpg = _sibling(dbf_path, ".cpg")
    if cpg is not None:
        lines = cpg.read_bytes()[:100].decode("utf-8", errors="replace").strip("\ufeff \t\r\n\x00").splitlines()
        declared = lines[0].strip() if lines else ""
        codec = _cpg_codec(declared)
        if codec is None and declared:
            warnings.append(f"{cpg.name}: code page {declared!r} not known; the text is read as the .dbf header says")
    with dbf_path.open("rb") as dbf:
        header = dbf.read(32)
    fallback = _LANGUAGE_DRIVERS.get(header[29]) if len(header) == 32 else None
    return codec, fallback or _UNDECLARED_CODEC, warnings


def _cpg_codec(declared: str) -> str | None:
    """The Python codec of the code page a .cpg names: Python's names ("UTF-8", "ISO-8859-1", "cp1252") and ESRI's
    spellings ("88591", "ISO 88591", "1252", "ANSI 1252", "65001"); None for one that is no code page DBF text is
    written in (`textcodecs.code_page`: UTF-8, single-byte and East Asian multibyte ones; not UTF-16 or punycode)."""
    name = declared
    if match := re.fullmatch(r"(?:ISO)?[ _-]?8859[ _-]?(\d{1,2})", declared, re.IGNORECASE):
        name = f"iso8859-{match.group(1)}"
    elif match := re.fullmatch(r"(?:ANSI|OEM|CP|WINDOWS)?[ _-]?(\d{3,5})", declared, re.IGNORECASE):
        number = int(match.group(1))
        if number == 65001:
            name = "utf-8"
        elif 28591 <= number <= 28605:  # Windows' numbers for ISO-8859-1 to -15
            name = f"iso8859-{number - 28590}"
        else:
            name = f"cp{number}"
    return code_page(name)


def _read_dbf(
    dbf_path: Path, fields: list, codec: str | None, fallback: str = _UNDECLARED_CODEC
) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    """Columns of the DBF (numbers as float64 with NaN for blanks and `****`, text decoded), the kept rows, and
    warnings: per numeric column, how many of its values are there but no number (a damaged file: `54.9891999;99`),
    read as none. Said, as points left out are: cleaning dropped such a point as if its value were missing.

    `fields` are pyshp's (their types and sizes; the names are read here, `_field_names`). Names and text are decoded
    with `codec` (the .cpg's) when all of them are valid in it; without one, or when some are not (the .cpg is not
    the .dbf's: a tool rewrote one of them; said, with how many), as UTF-8 when all of them are UTF-8, else with
    `fallback`.
    """
    data = dbf_path.read_bytes()
    if len(data) < 32:
        raise UnreadableDataset(f"{dbf_path.name}: the .dbf file is truncated")
    n_records = int.from_bytes(data[4:8], "little")
    header_len = int.from_bytes(data[8:10], "little")
    record_len = int.from_bytes(data[10:12], "little")
    # numpy's names of the fields are their places: two fields of one name, or one of none (its name all NUL
    # bytes: numpy named it `f1`, and reading it by its name failed the data set), are each read
    dtype = np.dtype([("_deleted", "S1")] + [(f"_{place}", f"S{size}") for place, (_, _, size, _) in enumerate(fields)])
    if dtype.itemsize != record_len:
        raise UnreadableDataset(f"{dbf_path.name}: field sizes ({dtype.itemsize}) disagree with the record length")
    available = max(0, (len(data) - header_len) // record_len)
    count = min(n_records, available)
    table = np.frombuffer(data, dtype=dtype, count=count, offset=header_len)
    keep = table["_deleted"] != b"*"
    names = _field_names(data, [name.encode("latin-1") for name, *_ in fields])
    # Per column: its name's bytes and its values (numbers), or the unique texts and where each row's is (text).
    read: list[tuple[bytes, np.ndarray | tuple[np.ndarray, np.ndarray]]] = []
    unreadable: list[tuple[bytes, int]] = []
    for place, (_, ftype, _size, _dec) in enumerate(fields):
        col = table[f"_{place}"][keep]
        name = names[place] or f"FIELD{place + 1}".encode()  # (a field without a name is named by its place)
        if ftype in ("N", "F"):
            stripped = np.char.strip(col)
            numbers = _bytes_to_float(stripped)
            if count := int(np.count_nonzero(~_none_written(stripped) & np.isnan(numbers))):
                unreadable.append((name, count))
            read.append((name, _exact_integers(stripped, numbers)))
        elif ftype == "L":
            stripped = np.char.upper(np.char.strip(col))
            true, false = np.isin(stripped, [b"T", b"Y"]), np.isin(stripped, [b"F", b"N"])
            read.append((name, np.where(true, 1.0, np.where(false, 0.0, np.nan))))
        elif ftype == "D":
            uniques, inverse = np.unique(col, return_inverse=True)
            read.append((name, (np.array([_dbf_date(u) for u in uniques], dtype=object), inverse)))
        else:
            read.append((name, np.unique(col, return_inverse=True)))
    texts = [raw for raw, _ in read] + [u for _, v in read if isinstance(v, tuple) for u in v[0]]
    misread = None  # the .cpg's codec when it does not read all of the text
    if codec is not None and not all(decodes(text, codec) for text in texts):
        misread, codec = codec, None
    if codec is None:
        codec = "utf-8" if all(decodes(text, "utf-8") for text in texts) else fallback
    columns: dict[str, np.ndarray] = {}
    renamed: list[str] = []
    for raw_name, values in read:
        name = given = raw_name.decode(codec, errors="replace")
        # A second column of a name (a writer that cut longer names to 11 characters) took the first one's place,
        # unsaid: each is kept, the later ones numbered.
        number = 1
        while name in columns:
            number += 1
            name = f"{given}_{number}"
        if name != given:
            renamed.append(
                f"{given}: another column has this name; the one at place {len(columns) + 1} is read as {name}"
            )
        columns[name] = _decode(*values, codec) if isinstance(values, tuple) else values
    warnings = renamed + [
        f"{raw_name.decode(codec, errors='replace')}: {count} of {int(np.count_nonzero(keep))} values are not numbers; "
        "read as none"
        for raw_name, count in unreadable
    ]
    if misread is not None:
        cpg = _sibling(dbf_path, ".cpg")
        invalid, total = _invalid_count(read, misread)
        warnings.insert(
            0,
            f"{cpg.name if cpg else '.cpg'}: {invalid} of {total} text values and column names are not valid "
            f"{misread}, the code page it names; the text is read as {codec}, as without a .cpg",
        )
    return columns, keep, warnings


def _field_names(data: bytes, parsed: list[bytes]) -> list[bytes]:
    """The field names of the DBF header `data` (its descriptors of 32 bytes from byte 32, each name in their first
    11 bytes up to a NUL), one per field pyshp `parsed`; pyshp's own when the header holds another count of them.
    pyshp cut a name of all 11 bytes to 10: John Deere's `AppliedRate` and `ControlRate` were `AppliedRat` and
    `ControlRat`, and `TargetRate1` and `TargetRate2` one column `TargetRate`, the second in the first's place."""
    names = []
    for start in range(32, 32 + 32 * len(parsed), 32):
        descriptor = data[start : start + 32]
        if len(descriptor) < 32 or descriptor[:1] == b"\r":
            return parsed
        names.append(descriptor[:11].split(b"\x00", 1)[0].strip())
    return names


def _dbf_date(value: bytes) -> bytes:
    """A date field's value (`YYYYMMDD`) as an ISO 8601 date (`YYYY-MM-DD`, which `parse_text_times` reads as well);
    blank for `00000000`, dBase's and GDAL's writing of no date (it was kept as the value `00000000`); any other
    text as it is."""
    value = value.strip()
    if value.strip(b"0") == b"":
        return b""
    if len(value) == 8 and value.isdigit():
        return b"-".join((value[:4], value[4:6], value[6:]))
    return value


def _invalid_count(read: list, codec: str) -> tuple[int, int]:
    """How many of the column names and text values `_read_dbf` read are not valid in `codec`, and of how many."""
    invalid = sum(not decodes(raw_name, codec) for raw_name, _ in read)
    total = len(read)
    for _, values in read:
        if isinstance(values, tuple):
            uniques, inverse = values
            bad = np.fromiter((not decodes(u, codec) for u in uniques), dtype=bool, count=len(uniques))
            invalid += int(np.count_nonzero(bad[inverse])) if len(uniques) else 0
            total += len(inverse)
    return invalid, total


def _text_to_float(col: np.ndarray) -> np.ndarray:
    """A text column (as `_read_dbf` decodes it) holding numbers as numbers, NaN where a value is none or no number
    (`number_from_text`: plain decimals, not `1_000` or other scripts' digits, which `float()` also reads). Numeric
    columns are numbers already (`_bytes_to_float`)."""
    out = np.full(len(col), np.nan)
    for i, v in enumerate(col):
        if isinstance(v, int | float) and not isinstance(v, bool):  # (`_exact_integers`' column)
            out[i] = float(v)
            continue
        number = number_from_text(v) if isinstance(v, str) else None
        if number is not None:
            out[i] = number
    return out


def _none_written(stripped: np.ndarray) -> np.ndarray:
    """Per value of a numeric DBF column (stripped bytes), whether it is written as none: blank, or `****` (a number
    too wide for its field)."""
    return (stripped == b"") | (np.char.find(stripped, b"*") >= 0)


def _bytes_to_float(stripped: np.ndarray) -> np.ndarray:
    """A numeric DBF column's stripped bytes as numbers, NaN where none is written (`_none_written`) and where the
    value is no plain number (`1_000`, a damaged `54.98;9`)."""
    bad = _none_written(stripped) | (np.char.find(stripped, b"_") >= 0)
    if bad.any():
        stripped = np.where(bad, b"nan", stripped)
    try:
        return stripped.astype(np.float64)
    except ValueError:
        # A stray non-number: fall back to parsing value by value, keeping the rest.
        out = np.full(len(stripped), np.nan)
        for i, v in enumerate(stripped):
            number = number_from_text(v.decode("latin-1"))
            if number is not None:
                out[i] = number
        return out


# The most digits a double holds exactly (2**53 has 16).
_EXACT_DIGITS = 15
_PLAIN_INTEGER = re.compile(rb"[-+]?[0-9]+")


def _exact_integers(stripped: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """A numeric column as `numbers`, unless it holds a whole number of more digits than a double keeps (an id in an
    N(18,0) field: 123456789012345678 was 1.2345678901234568e+17, 9007199254740993 ...992): then each value as
    Python reads it, whole numbers as ints (exact), others as floats, None where there is none."""
    if not len(stripped) or stripped.dtype.itemsize <= _EXACT_DIGITS:
        return numbers
    digits = np.char.lstrip(np.char.lstrip(stripped, b"-+"), b"0")
    # (whole numbers only: a coordinate of many decimals, `-93.12345678901234`, is a float as it was)
    long = np.char.isdigit(digits) & (np.char.str_len(digits) > _EXACT_DIGITS)
    if not long.any():
        return numbers
    out = np.empty(len(numbers), dtype=object)
    for i, (text, number) in enumerate(zip(stripped.tolist(), numbers.tolist(), strict=True)):
        if _PLAIN_INTEGER.fullmatch(text):
            out[i] = int(text)
        else:
            out[i] = None if math.isnan(number) else number
    return out


def _decode(uniques: np.ndarray, inverse: np.ndarray, codec: str) -> np.ndarray:
    decoded = np.array([u.decode(codec, errors="replace").strip() or None for u in uniques], dtype=object)
    return decoded[inverse] if len(uniques) else np.empty(0, dtype=object)


# -- geometry -------------------------------------------------------------------------------------------------

_POINT_TYPES = {shapefile.POINT, shapefile.POINTZ, shapefile.POINTM}
_POLYGON_TYPES = {shapefile.POLYGON, shapefile.POLYGONZ, shapefile.POLYGONM}
_MULTIPOINT_TYPES = {shapefile.MULTIPOINT, shapefile.MULTIPOINTZ, shapefile.MULTIPOINTM}


def _read_geometry(
    reader: shapefile.Reader, shp_path: Path, n_dbf: int, to_wgs84: Transformer | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, list[str]]:
    """x/y (source CRS) per record; per-record geodesic area (m2) for polygons, taken on the polygon brought to
    WGS84 with `to_wgs84` (None: already longitude/latitude); Z for PointZ (and MultiPointZ); warnings.

    Points are read at the record offsets of the .shx index or, in a data set without one, at those found by
    walking the .shp's record headers: the same points either way. A damaged index fails the data set, as any
    damaged part does (`_index_starts`). pyshp reads polygons straight through the .shp, never using the index.
    """
    shape_type = reader.shapeType
    shx_path = _sibling(shp_path, ".shx")
    if shape_type in _POINT_TYPES:
        shp = shp_path.read_bytes()
        if shx_path is not None:
            starts = _index_starts(shp_path.name, shx_path, len(shp))
        else:
            starts = _walk_records(shp_path.name, shp)
        x, y, z = _fast_points(shp_path.name, shp, starts, shape_type, shx_path)
        if len(x) != n_dbf:
            raise UnreadableDataset(f"{shp_path.name}: {len(x)} shapes but {n_dbf} attribute records")
        return x, y, None, z, []
    if shape_type in _MULTIPOINT_TYPES:
        if shx_path is not None:
            _index_starts(shp_path.name, shx_path, shp_path.stat().st_size)
        return (*_first_points(reader, shp_path.name, n_dbf, with_z=shape_type == shapefile.MULTIPOINTZ),)
    if shape_type in _POLYGON_TYPES:
        if shx_path is not None:
            _index_starts(shp_path.name, shx_path, shp_path.stat().st_size)
        chunks, polygons = [], []
        with np.errstate(invalid="ignore"):  # (shapely's warning of each ring with a NaN position: left out below)
            for shape in _shapes(reader, shp_path.name):
                empty = shape.shapeType == shapefile.NULL or not shape.points
                polygons.append(None if empty else _polygon(shape))
                if len(polygons) == POLYGON_CHUNK:
                    chunks.append(_centres_and_areas(polygons, to_wgs84))
                    polygons = []
            chunks.append(_centres_and_areas(polygons, to_wgs84))
        x, y, areas = (np.concatenate(parts) for parts in zip(*chunks, strict=True))
        if len(x) != n_dbf:
            raise UnreadableDataset(f"{shp_path.name}: {len(x)} shapes but {n_dbf} attribute records")
        return x, y, areas, None, []
    kind = shapefile.SHAPETYPE_LOOKUP.get(shape_type, f"{shape_type}, which no shapefile has,")
    raise UnreadableDataset(f"{shp_path.name}: geometry type {kind} is not points or polygons")


def _first_points(
    reader: shapefile.Reader, shp_name: str, n_dbf: int, *, with_z: bool
) -> tuple[np.ndarray, np.ndarray, None, np.ndarray | None, list[str]]:
    """A MultiPoint file's records at their first point each, as a GeoJSON MultiPoint is read (a logger writes one
    position per reading; such files were refused whole), with a warning counting the records of several points;
    a record without a point is one without a position (left out as such)."""
    xs, ys, zs = [], [], []
    several = 0
    for shape in _shapes(reader, shp_name):
        points = [] if shape.shapeType == shapefile.NULL else shape.points
        several += len(points) > 1
        xs.append(points[0][0] if points else np.nan)
        ys.append(points[0][1] if points else np.nan)
        zs.append(shape.z[0] if with_z and points and len(getattr(shape, "z", ())) else np.nan)
    if len(xs) != n_dbf:
        raise UnreadableDataset(f"{shp_name}: {len(xs)} shapes but {n_dbf} attribute records")
    warnings = [f"{shp_name}: {several} of {len(xs)} records are several points; each is read at its first"]
    return (
        np.asarray(xs, dtype=float),
        np.asarray(ys, dtype=float),
        None,
        np.asarray(zs, dtype=float) if with_z else None,
        warnings if several else [],
    )


# Polygons measured together (shapely's and `geodesic_areas_m2`'s array calls: one call a polygon took 40 times as
# long as reading a point), at most this many at once (all of a million-polygon file at once held 1.2 GB).
POLYGON_CHUNK = 50_000


def _polygon(shape: shapefile.Shape):
    """The shapely polygon of a polygon record; None (a record without a shape, left out as one) when its rings
    make none: a ring of one position, a ring not closed because a position is NaN (`_centres_and_areas` leaves out
    the others with a position that is no number). Such records failed the whole data set with an internal error."""
    try:
        return shp_geometry.shape(shape.__geo_interface__)
    except (ValueError, IndexError, shapely.errors.GEOSException):
        return None


def _every_position(geometries: np.ndarray, test) -> np.ndarray:
    """Whether each geometry has positions and `test` (an n x 2 array of them -> n booleans) holds for all."""
    coordinates, owners = shapely.get_coordinates(geometries, return_index=True)
    count = len(geometries)
    failing = owners[~test(coordinates)]
    return (np.bincount(owners, minlength=count) > 0) & (np.bincount(failing, minlength=count) == 0)


def _finite(coordinates: np.ndarray) -> np.ndarray:
    return np.isfinite(coordinates).all(axis=1)


def _on_the_globe(coordinates: np.ndarray) -> np.ndarray:
    return (np.abs(coordinates[:, 0]) <= 180) & (np.abs(coordinates[:, 1]) <= 90)


def _centres_and_areas(polygons: list, to_wgs84: Transformer | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x and y of each polygon's centre (its centroid, or a point on it when it is not valid: a self-crossing
    polygon's centroid may lie outside it) and its geodesic area in m2 (of the ground it covers), taken in WGS84
    (`_transformed`); NaN for None (a record without a shape), and for the area of a polygon off the globe, whose
    record is left out as its centre is (measured first, a single cell 3,000 km wide in degrees took 23 s and 2.9 GB;
    one with an infinite position failed the data set)."""
    geometries = np.empty(len(polygons), dtype=object)
    geometries[:] = polygons
    geometries[~_every_position(geometries, _finite)] = None  # (a position that is no number: a shape of nothing)
    present = ~shapely.is_missing(geometries)
    valid = shapely.is_valid(geometries)
    centres = np.full(len(geometries), None, dtype=object)
    centres[valid] = shapely.centroid(geometries[valid])
    crossing = present & ~valid
    centres[crossing] = shapely.point_on_surface(geometries[crossing])
    in_wgs84 = _transformed(geometries, to_wgs84)
    measured = _every_position(in_wgs84, _on_the_globe)
    # A cell that crosses itself (a bow tie where the machine turned) covers the ground of its lobes: measured as
    # drawn, lobes of opposite turning cancel out (a bow tie of two equal triangles measured 0 m2, and its point's
    # yield counted no mass). Measured as repaired (`make_valid`: the lobes as polygons of their own).
    repaired = measured & crossing
    in_wgs84[repaired] = shapely.make_valid(in_wgs84[repaired])
    areas = np.full(len(geometries), np.nan)
    areas[measured] = geodesic_areas_m2(in_wgs84[measured])
    return shapely.get_x(centres), shapely.get_y(centres), areas


def _shapes(reader: shapefile.Reader, shp_name: str):
    """pyshp's shapes of the .shp, one by one to its end; a record cut short fails the data set."""
    try:
        yield from reader.iterShapes()
    except (shapefile.ShapefileException, struct.error) as exc:
        raise UnreadableDataset(f"{shp_name}: the .shp file is cut short or corrupt ({exc})") from exc


def _index_starts(shp_name: str, shx_path: Path, shp_size: int) -> np.ndarray:
    """Byte offsets of the .shp's records by its .shx index (big-endian offset and length per 8-byte entry, in
    16-bit words). A damaged index is refused, never trusted or passed over: entries cut short, or an offset before
    the first record (0 and negative ones included) or past the end of the .shp."""
    shx = shx_path.read_bytes()
    entry_bytes = len(shx) - 100
    if entry_bytes % 8:
        raise UnreadableDataset(
            f"{shp_name}: the {shx_path.name} index is cut short "
            f"({entry_bytes} bytes of entries, not a whole number of 8-byte entries)"
        )
    starts = np.frombuffer(shx, dtype=">i4", offset=100)[::2].astype(np.int64) * 2
    outside = (starts < 100) | (starts + 12 > shp_size)  # a record header and its shape type
    if outside.any():
        entry = int(np.argmax(outside))
        raise UnreadableDataset(
            f"{shp_name}: entry {entry + 1} of the {shx_path.name} index points outside the records of the .shp "
            f"(byte {int(starts[entry])} of {shp_size})"
        )
    return starts


def _walk_records(shp_name: str, shp: bytes) -> np.ndarray:
    """Byte offsets of the .shp's records found without an index: each record header gives its content's length."""
    size = len(shp)
    if size >= 108:
        # Point records all have one length: try that stride and check it against every record header.
        words = int.from_bytes(shp[104:108], "big", signed=True)
        stride = 8 + 2 * words
        if words >= 2 and (size - 100) % stride == 0:
            starts = np.arange(100, size, stride, dtype=np.int64)
            if (values_at(shp, starts + 4, ">i4") == words).all():
                return starts
    found: list[int] = []
    pos = 100
    while pos < size:
        words = int.from_bytes(shp[pos + 4 : pos + 8], "big", signed=True) if pos + 8 <= size else -1
        if words < 2 or pos + 8 + 2 * words > size:  # at least the shape type
            raise UnreadableDataset(f"{shp_name}: the .shp file is cut short or corrupt at record {len(found) + 1}")
        found.append(pos)
        pos += 8 + 2 * words
    return np.asarray(found, dtype=np.int64)


def _fast_points(
    shp_name: str, shp: bytes, starts: np.ndarray, shape_type: int, shx_path: Path | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """x, y (and z for PointZ) of the point records whose headers start at `starts`, found by the index `shx_path`
    (None: by walking the .shp); NaN for null shapes."""
    buf = np.frombuffer(shp, dtype=np.uint8)
    types = values_at(buf, starts + 8, "<i4")
    null = types == shapefile.NULL
    wrong = ~null & (types != shape_type)
    if wrong.any():
        at = int(np.argmax(wrong))
        where = f"entry {at + 1} of the {shx_path.name} index points at" if shx_path else f"record {at + 1} is"
        raise UnreadableDataset(
            f"{shp_name}: {where} no {shapefile.SHAPETYPE_LOOKUP[shape_type]} shape of the .shp (type {int(types[at])})"
        )
    coords = starts[~null] + 12
    if len(coords) and coords.max() + 16 > len(buf):
        told = f"its {shx_path.name} index says" if shx_path else "its record headers say"
        raise UnreadableDataset(f"{shp_name}: the .shp file is shorter than {told}")
    x = np.full(len(starts), np.nan)
    y = np.full(len(starts), np.nan)
    x[~null] = values_at(buf, coords, "<f8")
    y[~null] = values_at(buf, coords + 8, "<f8")
    z = None
    if shape_type == shapefile.POINTZ and (len(coords) == 0 or coords.max() + 24 <= len(buf)):
        z = np.full(len(starts), np.nan)
        z[~null] = values_at(buf, coords + 16, "<f8")
    return x, y, z


def _transformed(geom, to_wgs84: Transformer | None):
    """`geom` (a geometry or an array of them) brought to WGS84 with `to_wgs84` (None: already there)."""
    if to_wgs84 is None:
        return geom
    return shapely.transform(geom, lambda xy: np.column_stack(to_wgs84.transform(xy[:, 0], xy[:, 1])))


def _prj_crs(shp_path: Path, prj: Path | None) -> CRS | None:
    """The coordinate system the .prj file `prj` names; None without one."""
    if prj is None:
        return None
    try:
        return CRS.from_wkt(prj.read_text(errors="replace"))
    except Exception as exc:  # pyproj raises CRSError, but a garbled file may raise others
        raise UnreadableDataset(f"{shp_path.name}: the .prj file is not a coordinate system ({exc})") from exc


def _to_wgs84(
    shp_path: Path, crs: CRS | None, to_wgs84: Transformer | None, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Longitude/latitude of the points, from `crs` (the .prj's) with `to_wgs84` (`wgs84_transformer`); without a
    .prj (`crs` None) they must already be. Coordinates that cannot be in the system the .prj names fail the data
    set (`declared_crs_contradiction`)."""
    if crs is not None:
        contradiction = declared_crs_contradiction(crs, x, y, ".prj")
        if contradiction:
            raise UnreadableDataset(f"{shp_path.name}: {contradiction}")
    if to_wgs84 is not None:
        lon, lat = pyproj_arrays(to_wgs84.transform, x.reshape(-1), y.reshape(-1))
        return np.asarray(lon, dtype=float).reshape(x.shape), np.asarray(lat, dtype=float).reshape(y.shape)
    if crs is None:
        finite = np.isfinite(x) & np.isfinite(y)
        if finite.any() and (np.abs(x[finite]).max() > 180 or np.abs(y[finite]).max() > 90):
            raise UnreadableDataset(f"{shp_path.name}: no .prj file and the coordinates are not longitude/latitude")
    return x, y
