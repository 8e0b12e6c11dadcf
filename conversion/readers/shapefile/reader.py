"""The shapefile reader: one point table per shapefile, its columns mapped to the standard properties."""

from __future__ import annotations

import struct
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import shapefile

from conversion.crops import normalize_crop_name
from conversion.readers.base import (
    NO_POSITION,
    Dataset,
    MachineIdentity,
    PointTable,
    Reader,
    UnreadableDataset,
    left_out_warning,
    recording_status,
    register,
    usable_positions,
)
from conversion.readers.crs import wgs84_transformer
from conversion.readers.units import normalize_unit, to_canonical
from conversion.readers.values import text_value

from .columns import (
    COLUMN_RULES,
    CROP_NAMES,
    PRODUCT_NAMES,
    RATE_NAMES,
    TARGET_NAMES,
    TIME_ISO_NAMES,
    TIME_TEXT_NAMES,
    VARIETY_NAMES,
    _jd_metadata,
    _map_strings,
    _meta_products,
    _meta_unit,
    _meta_units,
    _parse_iso,
    _uniques,
    column_match,
    normalized_name,
    parse_text_times,
    rate_operation,
    rate_property,
    time_warnings,
    unit_from_suffix,
)
from .decode import _dbf_codec, _prj_crs, _read_dbf, _read_geometry, _sibling, _text_to_float, _to_wgs84


@register
class ShapefileReader(Reader):
    """Point (and polygon) shapefiles; polygon centroids become points and their area the point area; a MultiPoint
    record is read at its first point."""

    format = "SHAPEFILE"

    def read_tables(self, dataset: Dataset) -> list[PointTable]:
        """One table per shapefile."""
        shp_path = dataset.path
        dbf_path = _sibling(shp_path, ".dbf")
        if dbf_path is None:
            raise UnreadableDataset(f"{shp_path.name}: the .dbf file with the attributes is missing")
        shx_path = _sibling(shp_path, ".shx")
        for part, header_bytes in ((shp_path, 100), (shx_path, 100), (dbf_path, 32)):
            if part is not None and part.stat().st_size < header_bytes:
                raise UnreadableDataset(f"{shp_path.name}: the {part.name} file is empty or cut short")
        with ExitStack() as parts:
            try:
                # pyshp gets no .shx: the decoder reads the index itself, and a data set may lack it. Field names
                # come through Latin-1, byte for byte, for `_read_dbf` to decode in the DBF's code page.
                reader = shapefile.Reader(
                    shp=parts.enter_context(shp_path.open("rb")),
                    dbf=parts.enter_context(dbf_path.open("rb")),
                    encoding="latin-1",
                )
            except (shapefile.ShapefileException, OSError, ValueError) as exc:
                raise UnreadableDataset(f"{shp_path.name}: not a readable shapefile ({exc})") from exc
            except struct.error as exc:  # a header cut short
                raise UnreadableDataset(f"{shp_path.name}: not a readable shapefile (a part is cut short)") from exc
            with reader:
                return [self._read(reader, shp_path, dbf_path)]

    def _read(self, reader: shapefile.Reader, shp_path: Path, dbf_path: Path) -> PointTable:
        metadata, metadata_warnings = _jd_metadata(shp_path)
        fields = [f for f in reader.fields if f[0] != "DeletionFlag"]
        codec, fallback, codec_warnings = _dbf_codec(dbf_path)
        records, keep, dbf_warnings = _read_dbf(dbf_path, fields, codec, fallback)
        prj = _sibling(shp_path, ".prj")
        crs = _prj_crs(shp_path, prj)
        to_wgs84 = wgs84_transformer(crs, where=f"{shp_path.name}: the .prj file") if crs is not None else None
        lon, lat, area, z, geometry_warnings = _read_geometry(reader, shp_path, len(keep), to_wgs84)
        lon, lat = lon[keep], lat[keep]
        area, z = (None if values is None else values[keep] for values in (area, z))
        lon, lat = _to_wgs84(shp_path, crs, to_wgs84, lon, lat)
        warnings: list[str] = [*metadata_warnings, *codec_warnings, *dbf_warnings, *geometry_warnings]

        meta_units = _meta_units(metadata)
        columns: dict[str, np.ndarray] = {"lon": lon, "lat": lat}
        units: dict[str, str] = {}
        source_units: dict[str, str] = {}
        raw: dict[str, np.ndarray] = {}
        raw_units: dict[str, str] = {}
        by_norm = {normalized_name(name): name for name in records}
        used: set[str] = set()

        def numeric(name: str) -> np.ndarray:
            return records[name] if records[name].dtype.kind == "f" else _text_to_float(records[name])

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
            name = column_match(by_norm, rule.names, used)
            if name is None:
                continue
            if rule.prop in ("sectionId", "recordingStatus"):
                values = records[name]
                columns[rule.prop] = recording_status(values) if rule.prop == "recordingStatus" else values
                used.add(name)
                continue
            unit = _meta_unit(meta_units, name) or unit_from_suffix(name) or rule.default_unit
            put(rule.prop, name, unit)

        rate_name = column_match(by_norm, RATE_NAMES, used, prefix=True)
        target_name = column_match(by_norm, TARGET_NAMES, used, prefix=True)
        operation = rate_operation(metadata, columns, rate_name, target_name, meta_units, by_norm)
        for name, is_target in ((rate_name, False), (target_name, True)):
            if name is None:
                continue
            prop, unit = rate_property(
                operation, _meta_unit(meta_units, name) or unit_from_suffix(name), target=is_target
            )
            put(prop, name, unit)
            if unit is None and prop in columns:
                warnings.append(f"{name}: no unit in the file; the value is kept as it is")

        # Timestamps: JD's IsoTime is UTC with ms; the plain Time column is local time of unknown zone.
        timestamp = None
        iso_name = time_name = column_match(by_norm, TIME_ISO_NAMES, used)
        if iso_name is not None:
            timestamp = _parse_iso(records[iso_name])
            used.add(iso_name)
        text_name = column_match(by_norm, TIME_TEXT_NAMES, used)
        if text_name is not None and (timestamp is None or np.isnat(timestamp).all()):
            timestamp = parse_text_times(records[text_name])
            time_name = text_name
            used.add(text_name)
        if timestamp is None:
            timestamp = np.full(len(lon), np.datetime64("NaT", "ms"))
        warnings.extend(time_warnings(timestamp, time_name))
        columns["timestamp"] = timestamp

        crops: list[str] = []
        varieties: list[str] = []
        products: list[str] = []
        crop_name = column_match(by_norm, CROP_NAMES, used)
        if crop_name is not None:
            per_point = _map_strings(records[crop_name], normalize_crop_name)
            columns["crop"] = per_point
            crops = _uniques(per_point)
            used.add(crop_name)
        if metadata:
            token = normalize_crop_name(metadata.get("CropToken"))
            if token and token not in crops:
                crops.append(token)
        variety_name = column_match(by_norm, VARIETY_NAMES, used)
        if variety_name is not None:
            columns["variety"] = _map_strings(records[variety_name], text_value)
            varieties = _uniques(columns["variety"])
            used.add(variety_name)
        product_name = column_match(by_norm, PRODUCT_NAMES, used)
        if product_name is not None:
            columns["products"] = _map_strings(records[product_name], text_value)
            products = _uniques(columns["products"])
            used.add(product_name)
        for name in _meta_products(metadata):
            if name not in products:
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
        valid = usable_positions(lon, lat)
        if not valid.all():
            table.warnings.extend(left_out_warning(~valid, len(valid), NO_POSITION))
            table = table.select(valid)
        table.refresh_time_range()
        return table
