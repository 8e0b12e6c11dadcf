"""Decoding the files of a shapefile: the DBF records, the shapes of the .shp (through its .shx index) and the .prj.

pyshp reads the headers and any non-point geometry; point geometry and the DBF records, which are fixed-width,
are decoded with numpy because a per-record Python loop is 20 times slower on exports of a million rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import shapefile
import shapely
from pyproj import CRS, Transformer
from shapely import geometry as shp_geometry

from conversion.readers.base import UnreadableDataset
from conversion.readers.binary import values_at
from conversion.readers.crs import wgs84_transformer
from fields.geodesy import geodesic_area_m2


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


# -- geometry -------------------------------------------------------------------------------------------------

_POINT_TYPES = {shapefile.POINT, shapefile.POINTZ, shapefile.POINTM}
_POLYGON_TYPES = {shapefile.POLYGON, shapefile.POLYGONZ, shapefile.POLYGONM}


def _read_geometry(
    reader: shapefile.Reader, shp_path: Path, n_dbf: int, to_wgs84: Transformer | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """x/y (source CRS) per record; per-record geodesic area (m2) for polygons, taken on the polygon brought to
    WGS84 with `to_wgs84` (None: already longitude/latitude); Z for PointZ."""
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
            areas.append(geodesic_area_m2(_transformed(geom, to_wgs84)))
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


def _transformed(geom, to_wgs84: Transformer | None):
    if to_wgs84 is None:
        return geom
    return shapely.transform(geom, lambda xy: np.column_stack(to_wgs84.transform(xy[:, 0], xy[:, 1])))


def _wgs84_transformer(shp_path: Path, prj: Path | None) -> Transformer | None:
    """From the coordinate system of the .prj file `prj` to WGS84 longitude/latitude; None when there is nothing
    to do (no .prj, or one that already is WGS84 longitude/latitude)."""
    if prj is None:
        return None
    try:
        crs = CRS.from_wkt(prj.read_text(errors="replace"))
    except Exception as exc:  # pyproj raises CRSError, but a garbled file may raise others
        raise UnreadableDataset(f"{shp_path.name}: the .prj file is not a coordinate system ({exc})") from exc
    return wgs84_transformer(crs)


def _to_wgs84(
    shp_path: Path, prj: Path | None, to_wgs84: Transformer | None, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Longitude/latitude of the points; without a .prj (`prj` None) they must already be."""
    if to_wgs84 is not None:
        # pyproj takes a one-element array for a scalar (with a NumPy warning) and answers scalars.
        lon, lat = to_wgs84.transform(x.item(), y.item()) if x.size == 1 else to_wgs84.transform(x, y)
        return np.asarray(lon, dtype=float).reshape(x.shape), np.asarray(lat, dtype=float).reshape(y.shape)
    if prj is None:
        finite = np.isfinite(x) & np.isfinite(y)
        if finite.any() and (np.abs(x[finite]).max() > 180 or np.abs(y[finite]).max() > 90):
            raise UnreadableDataset(f"{shp_path.name}: no .prj file and the coordinates are not longitude/latitude")
    return x, y
