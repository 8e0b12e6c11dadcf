"""Shapefile exports of yield, seeding and application data (John Deere Operations Center, SMS / Ag Leader).

Column names are matched case-insensitively, including the abbreviated forms that DBF re-exports produce
(FORMATS.md 5.1, 5.2). Units come from the JD `-Deere-Metadata.json` sidecar when there is one, else from the
column name's suffix, else from the exporting system's defaults (US units for JD and SMS). Values are converted to
canonical metric; `source_units` remembers what the file used.

pyshp reads the headers and any non-point geometry; point geometry and the DBF records, which are fixed-width,
are decoded with numpy because a per-record Python loop is 20 times slower on exports of a million rows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import shapefile
from pyproj import CRS, Transformer
from shapely import geometry as shp_geometry

from conversion.crops import normalize_crop_name
from conversion.readers.base import Dataset, MachineIdentity, PointTable, Reader, UnreadableDataset, register
from conversion.readers.binary import values_at
from conversion.readers.units import normalize_unit, to_canonical

NULL_TOKENS = (b"", b"*")


@dataclass(frozen=True)
class ColumnRule:
    """A standard property, the normalised column names that carry it, and the unit used when nothing says."""

    prop: str
    names: tuple[str, ...]
    default_unit: str | None = None


# Names are compared after lower-casing and dropping everything but letters and digits.
COLUMN_RULES: tuple[ColumnRule, ...] = (
    ColumnRule("distance", ("distance", "distancef", "distanceft", "dstncf", "dist"), "ft"),
    ColumnRule("equipmentWidth", ("swathwidth", "swathwi", "swthwdth", "swthwdthf", "swthw", "swathwidt"), "ft"),
    ColumnRule("dryVolumePerArea", ("vryieldvol", "yldvoldr", "yldvld", "yldvold", "drvol"), "bu/ac"),
    ColumnRule("dryMassPerArea", ("yldmassd", "yldmssd", "yldmassdr"), "lb/ac"),
    ColumnRule("wetVolumePerArea", ("yldvolwe", "yldvlw", "yldvolw"), "bu/ac"),
    ColumnRule("wetMassPerArea", ("wetmass", "yldmassw", "yldmssw", "yldmasswe"), "lb/ac"),
    ColumnRule("harvestMoisture", ("moisture", "mostr", "mstr", "moist"), "percentage"),
    ColumnRule("cropFlow", ("cropflwm", "crpflwm", "cropflow"), "lb/s"),
    ColumnRule("heading", ("heading", "trackdeg", "trckdg", "track"), "arcdeg"),
    ColumnRule("elevation", ("elevation", "elevtn", "elev", "altitude"), "ft"),
    ColumnRule("speed", ("speedmph", "spdmp", "spdmph", "speed"), "mph"),
    ColumnRule("sectionId", ("sectionid", "section", "sectid"), None),
    ColumnRule("recordingStatus", ("workstatus", "wrkstt", "recordingstatus"), None),
)
RATE_NAMES = ("appliedrate", "appliedrat", "appldrt", "rtapd", "rateapplied", "asapplied")
TARGET_NAMES = ("targetrate", "tgtrate", "trgtrt", "trgtrate", "controlrate", "controlrat")
TIME_ISO_NAMES = ("isotime",)
TIME_TEXT_NAMES = ("time", "datetime", "date")
CROP_NAMES = ("crop", "cropname", "croptype")
VARIETY_NAMES = ("variety", "varietyname", "hybrid", "prodctvr")
PRODUCT_NAMES = ("product", "productname", "prodct")
JD_OPERATIONS = {"harvest": "harvested", "seeding": "planted", "application": "applied", "tillage": "tillage"}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@register
class ShapefileReader(Reader):
    """Point (and polygon) shapefiles; polygon centroids become points and their area the point area."""

    format = "SHAPEFILE"

    def read(self, dataset: Dataset) -> list[PointTable]:
        """One table per shapefile."""
        shp_path = dataset.path
        dbf_path = _sibling(shp_path, ".dbf")
        if dbf_path is None:
            raise UnreadableDataset(f"{shp_path.name}: the .dbf file with the attributes is missing")
        try:
            reader = shapefile.Reader(shp=str(shp_path), dbf=str(dbf_path), shx=_opt(_sibling(shp_path, ".shx")))
        except (shapefile.ShapefileException, OSError, ValueError) as exc:
            raise UnreadableDataset(f"{shp_path.name}: not a readable shapefile ({exc})") from exc
        with reader:
            return [self._read(reader, shp_path, dbf_path)]

    def _read(self, reader: shapefile.Reader, shp_path: Path, dbf_path: Path) -> PointTable:
        metadata = _jd_metadata(shp_path)
        fields = [f for f in reader.fields if f[0] != "DeletionFlag"]
        records, keep = _read_dbf(dbf_path, fields, reader.encoding)
        lon, lat, area, z = _read_geometry(reader, shp_path, len(keep))
        lon, lat, area = lon[keep], lat[keep], (area[keep] if area is not None else None)
        lon, lat = _to_wgs84(shp_path, lon, lat)
        warnings: list[str] = []

        meta_units = {_norm(a.get("Name", "")): a.get("Unit") for a in (metadata or {}).get("DataAttributes", [])}
        columns: dict[str, np.ndarray] = {"lon": lon, "lat": lat}
        units: dict[str, str] = {}
        source_units: dict[str, str] = {}
        raw: dict[str, np.ndarray] = {}
        raw_units: dict[str, str] = {}
        by_norm = {_norm(name): name for name in records}
        used: set[str] = set()

        def numeric(name: str) -> np.ndarray:
            return records[name] if records[name].dtype.kind == "f" else _to_float(records[name])

        def put(prop: str, name: str, src_unit: str | None) -> None:
            values = numeric(name)
            if np.isnan(values).all():
                return
            conv = to_canonical(src_unit) if src_unit else None
            if src_unit and conv is None:
                warnings.append(f"{name}: unit {src_unit!r} not understood; values kept as they are")
            if conv is not None:
                canonical, factor = conv
                columns[prop] = values * factor if factor != 1.0 else values
                units[prop] = canonical
                source_units[prop] = normalize_unit(src_unit) or canonical
            else:
                columns[prop] = values
                units[prop] = "unknown"
            used.add(name)

        for rule in COLUMN_RULES:
            name = _match(by_norm, rule.names, used)
            if name is None:
                continue
            if rule.prop in ("sectionId", "recordingStatus"):
                values = records[name]
                columns[rule.prop] = _status(values) if rule.prop == "recordingStatus" else values
                used.add(name)
                continue
            unit = _meta_unit(meta_units, name) or _unit_from_suffix(name) or rule.default_unit
            put(rule.prop, name, unit)

        rate_name = _match(by_norm, RATE_NAMES, used, prefix=True)
        target_name = _match(by_norm, TARGET_NAMES, used, prefix=True)
        operation = _operation(metadata, columns, rate_name, target_name, meta_units, by_norm)
        for name, is_target in ((rate_name, False), (target_name, True)):
            if name is None:
                continue
            unit = _meta_unit(meta_units, name) or _unit_from_suffix(name)
            canonical = to_canonical(unit)
            seeds = operation == "planted" and (canonical is None or canonical[0] == "seeds/ha")
            prop = ("seedRate" if seeds else "appliedRate") + ("Target" if is_target else "")
            if unit is None:
                unit = "seeds/ac" if seeds else None
            put(prop, name, unit)
            if unit is None and prop in columns:
                warnings.append(f"{name}: no unit in the file; the value is kept as it is")

        # Timestamps: JD's IsoTime is UTC with ms; the plain Time column is local time of unknown zone.
        timestamp = None
        iso_name = _match(by_norm, TIME_ISO_NAMES, used)
        if iso_name is not None:
            timestamp = _parse_iso(records[iso_name])
            used.add(iso_name)
        text_name = _match(by_norm, TIME_TEXT_NAMES, used)
        if text_name is not None and (timestamp is None or np.isnat(timestamp).all()):
            timestamp = _parse_text_times(records[text_name])
            used.add(text_name)
        if timestamp is None:
            timestamp = np.full(len(lon), np.datetime64("NaT", "ms"))
            warnings.append("no time column; points have no timestamp")
        columns["timestamp"] = timestamp

        crops: list[str] = []
        varieties: list[str] = []
        products: list[str] = []
        crop_name = _match(by_norm, CROP_NAMES, used)
        if crop_name is not None:
            per_point = _map_strings(records[crop_name], normalize_crop_name)
            columns["crop"] = per_point
            crops = _uniques(per_point)
            used.add(crop_name)
        if metadata and metadata.get("CropToken"):
            token = normalize_crop_name(str(metadata["CropToken"]))
            if token and token not in crops:
                crops.append(token)
        variety_name = _match(by_norm, VARIETY_NAMES, used)
        if variety_name is not None:
            columns["variety"] = _map_strings(records[variety_name], lambda v: str(v).strip() or None)
            varieties = _uniques(columns["variety"])
            used.add(variety_name)
        product_name = _match(by_norm, PRODUCT_NAMES, used)
        if product_name is not None:
            columns["products"] = _map_strings(records[product_name], lambda v: str(v).strip() or None)
            products = _uniques(columns["products"])
            used.add(product_name)
        if metadata and isinstance(metadata.get("Product"), dict):
            for part in [metadata["Product"], *metadata["Product"].get("Components", [])]:
                name = (part.get("ProductName") or part.get("Name") or "").strip()
                if name and name != "Tank Mix" and name not in products and not part.get("Carrier"):
                    products.append(name)
        if area is not None:
            columns["area"] = area
            units["area"] = "m2"
        if z is not None and "elevation" not in columns and np.isfinite(z).any() and np.nanmax(np.abs(z)) > 0:
            columns["elevation"] = z
            units["elevation"] = "m"

        for name, values in records.items():
            raw[name] = values if values.dtype.kind != "S" else _map_strings(values, lambda v: str(v).strip() or None)
            src_unit = _meta_unit(meta_units, name)
            if src_unit:
                raw_units[name] = src_unit

        machines: list[MachineIdentity] = []
        table = PointTable(
            name=shp_path.stem,
            operation_type=operation,  # type: ignore[arg-type]
            columns=columns,
            units=units,
            source_units=source_units,
            raw_columns=raw,
            raw_units=raw_units,
            crops=crops,
            varieties=varieties,
            products=products,
            machines=machines,
            source_format="SHAPEFILE",
            warnings=warnings,
        )
        valid = np.isfinite(lon) & np.isfinite(lat)
        if not valid.all():
            table = table.select(valid)
        table.refresh_time_range()
        return table


def _meta_unit(meta_units: dict[str, str | None], name: str) -> str | None:
    """The metadata unit of a DBF column; DBF names are cut to 10 characters, so a prefix match counts."""
    key = _norm(name)
    if key in meta_units:
        return meta_units[key]
    matches = [unit for full, unit in meta_units.items() if full.startswith(key)]
    return matches[0] if len(matches) == 1 else None


def _opt(path: Path | None) -> str | None:
    return str(path) if path else None


def _sibling(path: Path, suffix: str) -> Path | None:
    """The file next to `path` with the same stem and `suffix`, matched case-insensitively."""
    exact = path.with_suffix(suffix)
    if exact.exists():
        return exact
    for candidate in path.parent.iterdir():
        if candidate.stem.lower() == path.stem.lower() and candidate.suffix.lower() == suffix:
            return candidate
    return None


def _jd_metadata(shp_path: Path) -> dict | None:
    for candidate in shp_path.parent.iterdir():
        if candidate.name.lower() == f"{shp_path.stem}-deere-metadata.json".lower():
            try:
                return json.loads(candidate.read_text(encoding="utf-8-sig"))
            except (OSError, ValueError):
                return None
    return None


def _match(by_norm: dict[str, str], names: tuple[str, ...], used: set[str], *, prefix: bool = False) -> str | None:
    for wanted in names:
        name = by_norm.get(wanted)
        if name is not None and name not in used:
            return name
    if prefix:
        for wanted in names:
            for key, name in by_norm.items():
                if key.startswith(wanted) and name not in used:
                    return name
    return None


_SUFFIX_UNITS = (
    ("galac", "gal/ac"),
    ("gal", "gal/ac"),
    ("lbac", "lb/ac"),
    ("lb", "lb/ac"),
    ("kgha", "kg/ha"),
    ("lha", "L/ha"),
    ("ksds", "kseeds/ac"),
    ("sdsac", "seeds/ac"),
    ("seedsac", "seeds/ac"),
    ("sds", "seeds/ac"),
    ("mph", "mph"),
    ("kmh", "km/h"),
)


def _unit_from_suffix(name: str) -> str | None:
    """A unit written into an SMS-style column name (`Rt_Apd_gal_ac`, `Tgt_Rate_lb_ac`), if it is unambiguous."""
    parts = re.split(r"[_\s]+", name.lower())
    if len(parts) < 2:
        return None
    tail = "".join(parts[2:] if parts[0] in ("tgt", "rt", "trgt") else parts[1:])
    for suffix, unit in _SUFFIX_UNITS:
        if tail.startswith(suffix):
            return unit
    return None


def _operation(metadata, columns, rate_name, target_name, meta_units, by_norm) -> str:
    if metadata and str(metadata.get("Operation", "")).lower() in JD_OPERATIONS:
        return JD_OPERATIONS[str(metadata["Operation"]).lower()]
    if any(p in columns for p in ("wetMassPerArea", "dryMassPerArea", "dryVolumePerArea", "wetVolumePerArea")):
        return "harvested"
    for name in (rate_name, target_name):
        if name is None:
            continue
        unit = _meta_unit(meta_units, name) or _unit_from_suffix(name)
        canonical = to_canonical(unit)
        if (canonical and canonical[0] == "seeds/ha") or "seed" in name.lower() or "sds" in name.lower():
            return "planted"
    if rate_name or target_name:
        return "applied"
    if any("seed" in key or "sds" in key for key in by_norm):
        return "planted"
    return "other"


# -- DBF ------------------------------------------------------------------------------------------------------


def _read_dbf(dbf_path: Path, fields: list, encoding: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Columns of the DBF (numbers as float64 with NaN for blanks and `****`, text as bytes) and the kept rows."""
    data = dbf_path.read_bytes()
    if len(data) < 32:
        raise UnreadableDataset(f"{dbf_path.name}: the .dbf file is truncated")
    n_records = int.from_bytes(data[4:8], "little")
    header_len = int.from_bytes(data[8:10], "little")
    record_len = int.from_bytes(data[10:12], "little")
    dtype_fields = [("_deleted", "S1")]
    names: list[str] = []
    for name, _ftype, size, _dec in fields:
        unique = name
        while unique in names or unique == "_deleted":
            unique += "_"
        names.append(unique)
        dtype_fields.append((unique, f"S{size}"))
    dtype = np.dtype(dtype_fields)
    if dtype.itemsize != record_len:
        raise UnreadableDataset(f"{dbf_path.name}: field sizes ({dtype.itemsize}) disagree with the record length")
    available = max(0, (len(data) - header_len) // record_len)
    count = min(n_records, available)
    table = np.frombuffer(data, dtype=dtype, count=count, offset=header_len)
    keep = table["_deleted"] != b"*"
    columns: dict[str, np.ndarray] = {}
    for (name, ftype, _size, _dec), key in zip(fields, names, strict=True):
        col = table[key][keep]
        if ftype in ("N", "F"):
            columns[name] = _to_float(col)
        elif ftype == "L":
            stripped = np.char.upper(np.char.strip(col))
            true, false = np.isin(stripped, [b"T", b"Y"]), np.isin(stripped, [b"F", b"N"])
            columns[name] = np.where(true, 1.0, np.where(false, 0.0, np.nan))
        else:
            columns[name] = _decode(col, encoding)
    return columns, keep


def _to_float(col: np.ndarray) -> np.ndarray:
    if col.dtype.kind == "O":
        out = np.full(len(col), np.nan)
        for i, v in enumerate(col):
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                pass
        return out
    stripped = np.char.strip(col)
    bad = (stripped == b"") | (np.char.find(stripped, b"*") >= 0)
    if bad.any():
        stripped = np.where(bad, b"nan", stripped)
    try:
        return stripped.astype(np.float64)
    except ValueError:
        # A stray non-number: fall back to parsing value by value, keeping the rest.
        out = np.full(len(stripped), np.nan)
        for i, v in enumerate(stripped):
            try:
                out[i] = float(v)
            except ValueError:
                pass
        return out


def _decode(col: np.ndarray, encoding: str) -> np.ndarray:
    uniques, inverse = np.unique(col, return_inverse=True)
    decoded = np.array([u.decode(encoding or "utf-8", errors="replace").strip() or None for u in uniques], dtype=object)
    return decoded[inverse] if len(uniques) else np.empty(0, dtype=object)


def _status(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f":
        return np.where(np.isnan(values), np.nan, (values > 0).astype(float))
    lowered = np.array([str(v).strip().lower() if v is not None else "" for v in values], dtype=object)
    on = np.isin(lowered, ["on", "1", "true", "yes", "y"])
    off = np.isin(lowered, ["off", "0", "false", "no", "n"])
    return np.where(on, 1.0, np.where(off, 0.0, np.nan))


def _map_strings(values: np.ndarray, fn) -> np.ndarray:
    if values.dtype.kind == "f":
        uniques, inverse = np.unique(values, return_inverse=True)
        mapped = np.array(
            [None if np.isnan(u) else fn(int(u) if float(u).is_integer() else u) for u in uniques], dtype=object
        )
        return mapped[inverse]
    uniques, inverse = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    mapped = np.array([fn(u) if u not in ("None", "") else None for u in uniques], dtype=object)
    return mapped[inverse]


def _uniques(values: np.ndarray) -> list[str]:
    out: list[str] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
            if len(out) > 100:
                break
    return out


def _parse_iso(values: np.ndarray) -> np.ndarray:
    """ISO 8601 strings to datetime64[ms] UTC; vectorised for the usual `...Z` form, else value by value."""
    text = np.asarray(values, dtype=object)
    try:
        return np.char.rstrip(text.astype("U40"), "Z").astype("datetime64[ms]")
    except ValueError:
        pass
    uniques, inverse = np.unique(text.astype(str), return_inverse=True)
    parsed = np.full(len(uniques), np.datetime64("NaT", "ms"))
    for i, item in enumerate(uniques):
        try:
            stamp = datetime.fromisoformat(item.strip().replace("Z", "+00:00"))
        except ValueError:
            continue
        if stamp.tzinfo is not None:
            stamp = (stamp - stamp.utcoffset()).replace(tzinfo=None)
        parsed[i] = np.datetime64(stamp, "ms")
    return parsed[inverse]


_TEXT_FORMATS = (
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%d.%m.%Y %H:%M:%S",
    "%Y/%m/%d %H:%M:%S",
)


def _parse_text_times(values: np.ndarray) -> np.ndarray:
    uniques, inverse = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    parsed = np.full(len(uniques), np.datetime64("NaT", "ms"))
    for i, text in enumerate(uniques):
        for fmt in _TEXT_FORMATS:
            try:
                parsed[i] = np.datetime64(datetime.strptime(text.strip(), fmt), "ms")
                break
            except ValueError:
                continue
    return parsed[inverse]


# -- geometry -------------------------------------------------------------------------------------------------

_POINT_TYPES = {shapefile.POINT, shapefile.POINTZ, shapefile.POINTM}
_POLYGON_TYPES = {shapefile.POLYGON, shapefile.POLYGONZ, shapefile.POLYGONM}


def _read_geometry(
    reader: shapefile.Reader, shp_path: Path, n_dbf: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """lon/lat (source CRS) per record; per-record area (m2) for polygons; Z for PointZ."""
    shape_type = reader.shapeType
    shx_path = _sibling(shp_path, ".shx")
    if shape_type in _POINT_TYPES and shx_path is not None:
        x, y, z = _fast_points(shp_path.read_bytes(), shx_path.read_bytes(), shape_type)
        if len(x) != n_dbf:
            raise UnreadableDataset(f"{shp_path.name}: {len(x)} shapes but {n_dbf} attribute records")
        return x, y, None, z
    if shape_type in _POINT_TYPES or shape_type in _POLYGON_TYPES:
        xs, ys, areas = [], [], []
        for shape in reader.iterShapes():
            if shape.shapeType == shapefile.NULL or not shape.points:
                xs.append(np.nan)
                ys.append(np.nan)
                areas.append(np.nan)
                continue
            if shape.shapeType in _POINT_TYPES:
                xs.append(shape.points[0][0])
                ys.append(shape.points[0][1])
                areas.append(np.nan)
                continue
            geom = shp_geometry.shape(shape.__geo_interface__)
            centroid = geom.representative_point() if not geom.is_valid else geom.centroid
            xs.append(centroid.x)
            ys.append(centroid.y)
            areas.append(_geodesic_area(geom))
        if len(xs) != n_dbf:
            raise UnreadableDataset(f"{shp_path.name}: {len(xs)} shapes but {n_dbf} attribute records")
        area = np.asarray(areas) if shape_type in _POLYGON_TYPES else None
        return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), area, None
    raise UnreadableDataset(f"{shp_path.name}: geometry type {reader.shapeTypeName} is not points or polygons")


def _fast_points(shp: bytes, shx: bytes, shape_type: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    index = np.frombuffer(shx, dtype=">i4", offset=100).reshape(-1, 2)
    starts = index[:, 0].astype(np.int64) * 2 + 8  # 16-bit words -> bytes, past the record header
    buf = np.frombuffer(shp, dtype=np.uint8)
    if len(starts) and starts.max() + 20 > len(buf):
        raise UnreadableDataset("the .shp file is shorter than its .shx index says")
    types = values_at(buf, starts, "<i4")
    x = values_at(buf, starts + 4, "<f8").copy()
    y = values_at(buf, starts + 12, "<f8").copy()
    null = types == shapefile.NULL
    x[null] = np.nan
    y[null] = np.nan
    z = None
    if shape_type == shapefile.POINTZ and (starts.max(initial=0) + 28 <= len(buf)):
        z = values_at(buf, starts + 20, "<f8").copy()
        z[null] = np.nan
    return x, y, z


def _geodesic_area(geom) -> float:
    from pyproj import Geod

    return abs(Geod(ellps="WGS84").geometry_area_perimeter(geom)[0])


def _to_wgs84(shp_path: Path, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    prj = _sibling(shp_path, ".prj")
    if prj is None:
        finite = np.isfinite(x) & np.isfinite(y)
        if finite.any() and (np.abs(x[finite]).max() > 180 or np.abs(y[finite]).max() > 90):
            raise UnreadableDataset(f"{shp_path.name}: no .prj file and the coordinates are not longitude/latitude")
        return x, y
    try:
        crs = CRS.from_wkt(prj.read_text(errors="replace"))
    except Exception as exc:  # pyproj raises CRSError, but a garbled file may raise others
        raise UnreadableDataset(f"{shp_path.name}: the .prj file is not a coordinate system ({exc})") from exc
    wgs84 = CRS.from_epsg(4326)
    if crs.is_geographic and crs.ellipsoid and crs.ellipsoid.name.replace(" ", "").upper() in ("WGS84", "WGS_1984"):
        return x, y
    if crs.equals(wgs84, ignore_axis_order=True):
        return x, y
    transformer = Transformer.from_crs(crs, wgs84, always_xy=True)
    lon, lat = transformer.transform(x, y)
    return np.asarray(lon, dtype=float), np.asarray(lat, dtype=float)
