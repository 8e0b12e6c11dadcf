"""The GeoJSON reader: one point table per FeatureCollection of points (reprojected to WGS84 when a `crs` member
names another system), its properties mapped to the standard properties."""

from __future__ import annotations

import numpy as np
from pyproj import CRS

from conversion.crops import normalize_crop_name
from conversion.readers.base import (
    NO_POSITION,
    Dataset,
    PointTable,
    Reader,
    UnreadableDataset,
    left_out_warning,
    recording_status,
    register,
    usable_positions,
)
from conversion.readers.crs import declared_crs_contradiction, wgs84_transformer
from conversion.readers.shapefile.columns import normalized_name
from conversion.readers.values import text_value
from fields.geodesy import geojson_crs

from .columns import _STRING_PROPS, STANDARD_UNITS, _exporter_columns, _guess_operation, _standard_column, _timestamps
from .points import _ALL, MAX_COLUMNS, _Points
from .stream import _JsonStream, _NotJson, _read_collection, json_text_file


@register
class GeojsonReader(Reader):
    """FeatureCollection of Point features."""

    format = "GEOJSON"

    def read_tables(self, dataset: Dataset) -> list[PointTable]:
        """One table for the collection; UnreadableDataset when it is not a FeatureCollection of points."""
        name = dataset.path.name
        try:
            with json_text_file(dataset.path) as fh:
                members = _read_collection(_JsonStream(fh), name)
        except _NotJson as exc:
            raise UnreadableDataset(f"{name}: not valid JSON ({exc})") from None
        except (OSError, ValueError) as exc:
            raise UnreadableDataset(f"{name}: not valid JSON ({exc})") from exc
        except RecursionError:
            raise UnreadableDataset(f"{name}: not valid JSON (values nested too deeply)") from None
        if members.get("type") != "FeatureCollection":
            raise UnreadableDataset(f"{name}: not a GeoJSON FeatureCollection")
        points = members.get("features") or _Points()
        if not isinstance(points, _Points):
            raise UnreadableDataset(f"{name}: the FeatureCollection's features are not a list")
        if not points.lon:
            raise UnreadableDataset(f"{name}: the FeatureCollection holds no Point features")
        lon_array, lat_array = np.frombuffer(points.lon), np.frombuffer(points.lat)
        crs = _declared_crs(dataset, members.get("crs"))
        if crs is not None:
            contradiction = declared_crs_contradiction(crs, lon_array, lat_array, "crs member")
            if contradiction:
                raise UnreadableDataset(f"{name}: {contradiction}")
        to_wgs84 = wgs84_transformer(crs, where=f"{name}: the crs member") if crs is not None else None
        if to_wgs84 is not None:
            lon_array, lat_array = (np.asarray(a, float) for a in to_wgs84.transform(lon_array, lat_array))
        usable = usable_positions(lon_array, lat_array)
        if not usable.any():
            raise UnreadableDataset(
                f"{name}: no Point feature has usable coordinates (numbers, WGS84 longitude -180..180 "
                "and latitude -90..90)"
            )
        keep = _ALL if usable.all() else usable
        said = left_out_warning(~usable, len(usable), NO_POSITION)
        # Without a crs the first points with usable positions name the properties, as those are the points kept;
        # with one, positions are only known usable after reprojection, once the file is read: the first points
        # with numbers as coordinates name them.
        keys = points.keys_finite if members.get("crs") is not None else points.keys_on_globe
        table = self._table(dataset, lon_array[keep], lat_array[keep], points, list(keys), keep)
        table.warnings.extend(said)
        return [table]

    def _table(
        self, dataset: Dataset, lon: np.ndarray, lat: np.ndarray, points: _Points, keys: list[str], keep
    ) -> PointTable:
        columns: dict[str, np.ndarray] = {"lon": lon, "lat": lat}
        units: dict[str, str] = {}
        source_units: dict[str, str] = {}
        raw: dict[str, np.ndarray] = {}
        # Names that are not our own spelling, by normalised name (the first spelling of one wins): the exporters'.
        by_norm: dict[str, str] = {}
        operation = None
        for key in keys:
            column = points.columns[key]
            raw[key] = column.raw(keep)
            nkey = normalized_name(key)
            if key == "operationType":
                found = {v for v in column.values(keep) if isinstance(v, str) and v}
                operation = found.pop() if len(found) == 1 else operation
            elif nkey in _STRING_PROPS:
                # Names as `readers.values.text_value` takes them: a number is its digits, an object no name.
                mapper = normalize_crop_name if nkey == "crop" else text_value
                columns[_STRING_PROPS[nkey]] = np.asarray([mapper(v) for v in column.values(keep)], dtype=object)
            elif key == "recordingStatus":
                columns[key] = recording_status(column.values(keep))
            elif key in STANDARD_UNITS:
                _standard_column(key, column.numbers_at(keep), columns, units, source_units)
            else:
                by_norm.setdefault(nkey, key)
        if operation not in ("harvested", "planted", "applied", "tillage", "other"):
            operation = None
        warnings = _exporter_columns(points, keep, by_norm, operation, columns, units, source_units)
        columns["timestamp"], time_said = _timestamps(points, keep, len(lon), keys, by_norm)
        warnings.extend(time_said)
        if points.names_left_out:
            warnings.append(
                f"{len(points.names_left_out)} property names left out past the first {MAX_COLUMNS} (a column each)."
            )
        if points.left_out:
            warnings.append(
                f"{points.left_out} features left out: not a Point (or MultiPoint) with two coordinates (lines, "
                "polygons, a missing geometry, an entry that is no object)."
            )
        if points.multi:
            # (as a shapefile's MultiPoint records are said: the other points were dropped unsaid)
            warnings.append(f"{points.multi} features are MultiPoints of several points; each is read at its first.")
        if operation is None:
            operation = _guess_operation(columns)
        table = PointTable(
            name=dataset.path.stem,
            operation_type=operation,  # type: ignore[arg-type]
            columns=columns,
            units=units,
            source_units=source_units,
            raw_columns=raw,
            crops=_uniques(columns.get("crop")),
            varieties=_uniques(columns.get("variety")),
            products=_uniques(columns.get("products")),
            source_format="GEOJSON",
            warnings=warnings,
        )
        table.refresh_time_range()
        return table


def _declared_crs(dataset: Dataset, member) -> CRS | None:
    """The coordinate system a `crs` member names (`fields.geodesy.geojson_crs`); None without one."""
    try:
        return geojson_crs(member)
    except ValueError as exc:
        raise UnreadableDataset(
            f"{dataset.path.name}: {exc} (a named coordinate system can be read, or none for WGS84 longitude/latitude)"
        ) from None


def _uniques(values: np.ndarray | None) -> list[str]:
    if values is None:
        return []
    out: list[str] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out
