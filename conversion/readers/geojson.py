"""GeoJSON FeatureCollections of points with the standard property names (or recognisable SMS/JD ones).

Standard names are taken as already in canonical units (supplement: units of GeoJSON uploads are the exporting
system's defaults, and ours is metric). Other names go through the same column rules as shapefiles.
"""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np

from conversion.crops import normalize_crop_name
from conversion.readers.base import Dataset, PointTable, Reader, UnreadableDataset, register, usable_positions
from conversion.readers.crs import wgs84_transformer
from conversion.readers.shapefile.columns import COLUMN_RULES, RATE_NAMES, TARGET_NAMES, _norm
from conversion.readers.units import to_canonical
from conversion.readers.values import text_value
from fields.geodesy import geojson_crs

STANDARD_UNITS: dict[str, str] = {
    "area": "m2",
    "distance": "m",
    "heading": "arcdeg",
    "speed": "m/s",
    "elevation": "m",
    "equipmentWidth": "m",
    "sectionId": "",
    "seedRate": "seeds/ha",
    "seedRateTarget": "seeds/ha",
    "seedDepth": "m",
    "appliedRate": "L/ha",
    "appliedRateTarget": "L/ha",
    "wetMass": "kg",
    "wetMassPerArea": "kg/ha",
    "dryMass": "kg",
    "dryMassPerArea": "kg/ha",
    "wetVolume": "L",
    "wetVolumePerArea": "L/ha",
    "dryVolume": "L",
    "dryVolumePerArea": "L/ha",
    "harvestMoisture": "percentage",
    "cropFlow": "kg/s",
}
_STANDARD_BY_NORM = {_norm(k): k for k in STANDARD_UNITS}
_STRING_PROPS = {"crop": "crop", "variety": "variety", "products": "products", "product": "products"}
_TIME_KEYS = ("timestamp", "time", "isotime", "datetime")


@register
class GeojsonReader(Reader):
    """FeatureCollection of Point features."""

    format = "GEOJSON"

    def read_tables(self, dataset: Dataset) -> list[PointTable]:
        """One table for the collection; UnreadableDataset when it is not a FeatureCollection of points."""
        try:
            with open(dataset.path, encoding="utf-8-sig") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as exc:
            raise UnreadableDataset(f"{dataset.path.name}: not valid JSON ({exc})") from exc
        if not isinstance(doc, dict) or doc.get("type") != "FeatureCollection":
            raise UnreadableDataset(f"{dataset.path.name}: not a GeoJSON FeatureCollection")
        features = doc.get("features") or []
        if not isinstance(features, list):
            raise UnreadableDataset(f"{dataset.path.name}: the FeatureCollection's features are not a list")
        features = [f for f in features if isinstance(f, dict)]
        lon, lat, props = [], [], []
        for feature in features:
            geom = feature.get("geometry")
            geom = geom if isinstance(geom, dict) else {}
            coords = geom.get("coordinates")
            if geom.get("type") == "MultiPoint" and isinstance(coords, list) and coords:
                coords = coords[0]
            if geom.get("type") not in ("Point", "MultiPoint") or not isinstance(coords, list) or len(coords) < 2:
                continue
            lon.append(_coordinate(coords[0]))
            lat.append(_coordinate(coords[1]))
            properties = feature.get("properties")
            props.append(properties if isinstance(properties, dict) else {})
        if not lon:
            raise UnreadableDataset(f"{dataset.path.name}: the FeatureCollection holds no Point features")
        lon_array, lat_array = np.asarray(lon, float), np.asarray(lat, float)
        to_wgs84 = _crs_transformer(dataset, doc.get("crs"))
        if to_wgs84 is not None:
            lon_array, lat_array = (np.asarray(a, float) for a in to_wgs84.transform(lon_array, lat_array))
        usable = usable_positions(lon_array, lat_array)
        if not usable.any():
            raise UnreadableDataset(
                f"{dataset.path.name}: no Point feature has usable coordinates (numbers, WGS84 longitude -180..180 "
                "and latitude -90..90)"
            )
        if not usable.all():
            lon_array, lat_array = lon_array[usable], lat_array[usable]
            props = [p for p, keep in zip(props, usable, strict=True) if keep]
        return [self._table(dataset, lon_array, lat_array, props)]

    def _table(self, dataset: Dataset, lon: np.ndarray, lat: np.ndarray, props: list[dict]) -> PointTable:
        keys: list[str] = []
        for p in props[:1000]:
            keys.extend(k for k in p if k not in keys)
        columns: dict[str, np.ndarray] = {"lon": lon, "lat": lat}
        units: dict[str, str] = {}
        source_units: dict[str, str] = {}
        raw: dict[str, np.ndarray] = {}
        by_rule = {name: rule for rule in COLUMN_RULES for name in rule.names}
        operation = None
        for key in keys:
            values = [p.get(key) for p in props]
            raw[key] = np.asarray(values, dtype=object)
            nkey = _norm(key)
            if key == "operationType":
                found = {v for v in values if isinstance(v, str) and v}
                operation = found.pop() if len(found) == 1 else operation
                continue
            if nkey in _TIME_KEYS and "timestamp" not in columns:
                columns["timestamp"] = _times(values)
                continue
            if nkey in _STRING_PROPS:
                # Names as `readers.values.text_value` takes them: a number is its digits, an object no name.
                mapper = normalize_crop_name if nkey == "crop" else text_value
                columns[_STRING_PROPS[nkey]] = np.asarray([mapper(v) for v in values], dtype=object)
                continue
            if nkey == "recordingstatus":
                columns["recordingStatus"] = np.asarray(
                    [1.0 if str(v).lower() in ("on", "1", "true") else 0.0 if v is not None else np.nan for v in values]
                )
                continue
            numbers = _floats(values)
            if np.isnan(numbers).all():
                continue
            if nkey in _STANDARD_BY_NORM:
                prop = _STANDARD_BY_NORM[nkey]
                columns[prop] = numbers
                if STANDARD_UNITS[prop]:
                    units[prop] = source_units[prop] = STANDARD_UNITS[prop]
                continue
            rule = by_rule.get(nkey)
            prop, unit = (rule.prop, rule.default_unit) if rule else (None, None)
            if rule is None and any(nkey.startswith(n) for n in RATE_NAMES):
                prop = "appliedRate"
            elif rule is None and any(nkey.startswith(n) for n in TARGET_NAMES):
                prop = "appliedRateTarget"
            if prop is None or prop in columns:
                continue
            conv = to_canonical(unit)
            columns[prop] = numbers * conv[1] if conv else numbers
            units[prop] = conv[0] if conv else "unknown"
            if unit:
                source_units[prop] = unit
        if "timestamp" not in columns:
            columns["timestamp"] = np.full(len(lon), np.datetime64("NaT", "ms"))
        if operation not in ("harvested", "planted", "applied", "tillage", "other"):
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
        )
        table.refresh_time_range()
        return table


def _crs_transformer(dataset: Dataset, member):
    """To WGS84 from the coordinate system a `crs` member names (`fields.geodesy.geojson_crs`); None without one."""
    try:
        crs = geojson_crs(member)
    except ValueError as exc:
        raise UnreadableDataset(
            f"{dataset.path.name}: {exc} (a named coordinate system can be read, or none for WGS84 longitude/latitude)"
        ) from None
    return wgs84_transformer(crs) if crs is not None else None


def _guess_operation(columns: dict[str, np.ndarray]) -> str:
    if any(k in columns for k in ("wetMassPerArea", "dryMassPerArea", "wetVolumePerArea", "dryVolumePerArea")):
        return "harvested"
    if "seedRate" in columns:
        return "planted"
    if "appliedRate" in columns:
        return "applied"
    return "other"


def _coordinate(value) -> float:
    """A coordinate as a float; NaN (an unusable point) when it is not a number."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return np.nan
    try:
        return float(value)
    except OverflowError:  # an integer beyond float range
        return np.nan


def _floats(values: list) -> np.ndarray:
    """The values as floats; NaN where one is not a number or an integer beyond float range (missing values)."""
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if isinstance(v, int | float) and not isinstance(v, bool):
            try:
                out[i] = v
            except OverflowError:
                continue
    return out


def _times(values: list) -> np.ndarray:
    out = np.full(len(values), np.datetime64("NaT", "ms"))
    for i, v in enumerate(values):
        if not isinstance(v, str):
            continue
        try:
            stamp = datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
        except ValueError:
            continue
        if stamp.tzinfo is not None:
            stamp = (stamp - stamp.utcoffset()).replace(tzinfo=None)
        out[i] = np.datetime64(stamp, "ms")
    return out


def _uniques(values: np.ndarray | None) -> list[str]:
    if values is None:
        return []
    out: list[str] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out
