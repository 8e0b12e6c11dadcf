"""What the exporters' columns mean: which column carries which standard property, in which unit, and what the
operation was; and the values of text and time columns (status values: `readers.base.recording_status`).

Column names are matched case-insensitively, including the abbreviated forms that DBF re-exports produce
(FORMATS.md 5.1, 5.2). Units come from the JD `-Deere-Metadata.json` sidecar when there is one, else from the
column name's suffix, else from the exporting system's defaults (US units for JD and SMS). Values are converted to
canonical metric; `source_units` remembers what the file used.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from conversion.readers.base import HARVEST_COLUMNS
from conversion.readers.units import to_canonical
from conversion.readers.values import text_codes, text_value
from platform_site.text import iso_time_text


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


def normalized_name(name: str) -> str:
    """A column name as the rules name it: lower case, letters and digits only (`Yld_Mass_W` -> `yldmassw`)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _meta_unit(meta_units: dict[str, str | None], name: str) -> str | None:
    """The metadata unit of a DBF column; DBF names are cut to 10 characters, so a prefix match counts."""
    key = normalized_name(name)
    if key in meta_units:
        return meta_units[key]
    matches = [unit for full, unit in meta_units.items() if full.startswith(key)]
    return matches[0] if len(matches) == 1 else None


# A JD metadata sidecar names a few dozen columns (a few KB); a larger one is no sidecar we know.
JD_METADATA_MAX_BYTES = 16 * 1024 * 1024


def _jd_metadata(shp_path: Path) -> tuple[dict | None, list[str]]:
    """The JD `-Deere-Metadata.json` sidecar of the shapefile (None when there is none or it cannot be read), and a
    warning naming one that cannot be read: no JSON (in UTF-8, UTF-16 or UTF-32 by its BOM, else in Windows-1252 as
    DBF text), nested too deeply, over JD_METADATA_MAX_BYTES, or not a JSON object; the units and products it names
    are then unknown, and its columns are read as without it. Its values are as the file wrote them: read names with
    `_meta_units` and `_meta_products`."""
    for candidate in shp_path.parent.iterdir():
        if candidate.name.lower() == f"{shp_path.stem}-deere-metadata.json".lower():
            try:
                if candidate.stat().st_size > JD_METADATA_MAX_BYTES:
                    return None, [_metadata_unread(candidate, f"over {JD_METADATA_MAX_BYTES // 2**20} MiB")]
                metadata = json.loads(_metadata_text(candidate.read_bytes()))
            except OSError as exc:
                return None, [_metadata_unread(candidate, exc.strerror or type(exc).__name__)]
            except ValueError as exc:
                return None, [_metadata_unread(candidate, f"not JSON: {exc}")]
            except RecursionError:
                return None, [_metadata_unread(candidate, "not JSON: values nested too deeply")]
            if not isinstance(metadata, dict):
                return None, [_metadata_unread(candidate, "not a JSON object")]
            return metadata, []
    return None, []


def _metadata_text(data: bytes) -> str:
    """The text of a JSON file: UTF-8, UTF-16 or UTF-32 as `json.loads` tells them apart (by the BOM, else by the
    zero bytes of the first characters), else Windows-1252, as DBF text that declares nothing (JD's exporters are
    Windows programs; a sidecar holding "Säure Plüs" in Windows-1252 was thrown away with all its units)."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding, errors="surrogatepass")  # as `json.loads` decodes bytes
    except UnicodeDecodeError:
        if not encoding.startswith("utf-8"):
            raise
    return data.decode("cp1252", errors="replace")


def _metadata_unread(path: Path, why: str) -> str:
    return f"{path.name}: not read ({why}); the units and products it names are unknown"


def _meta_dicts(value) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _meta_units(metadata: dict | None) -> dict[str, str | None]:
    """The metadata's unit of each column, by normalised column name. Names and units are text as
    `readers.values.text_value` takes it (a number is its digits); an attribute without a name is left out."""
    units: dict[str, str | None] = {}
    for attribute in _meta_dicts((metadata or {}).get("DataAttributes")):
        name = text_value(attribute.get("Name"))
        if name:
            units[normalized_name(name)] = text_value(attribute.get("Unit"))
    return units


def _meta_products(metadata: dict | None) -> list[str]:
    """The products the metadata names: the product and its tank-mix components, without the carrier (water) and
    the "Tank Mix" name itself. Names are text as `readers.values.text_value` takes it (a number is its digits,
    anything else no name)."""
    product = (metadata or {}).get("Product")
    if not isinstance(product, dict):
        return []
    names: list[str] = []
    for part in [product, *_meta_dicts(product.get("Components"))]:
        name = text_value(part.get("ProductName")) or text_value(part.get("Name"))
        if name and name != "Tank Mix" and name not in names and not part.get("Carrier"):
            names.append(name)
    return names


def column_match(
    by_norm: dict[str, str], names: tuple[str, ...], used: set[str], *, prefix: bool = False
) -> str | None:
    """The column (of `by_norm`: normalised name -> column name) first named in `names` and not `used` yet; with
    `prefix`, else the first whose normalised name starts with one of them. Shared by the shapefile and GeoJSON
    readers."""
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


def unit_from_suffix(name: str) -> str | None:
    """A unit written into an SMS-style column name (`Rt_Apd_gal_ac`, `Tgt_Rate_lb_ac`), if it is unambiguous."""
    parts = re.split(r"[_\s]+", name.lower())
    if len(parts) < 2:
        return None
    tail = "".join(parts[2:] if parts[0] in ("tgt", "rt", "trgt") else parts[1:])
    for suffix, unit in _SUFFIX_UNITS:
        if tail.startswith(suffix):
            return unit
    return None


def rate_operation(metadata, columns, rate_name, target_name, meta_units, by_norm) -> str:
    """The operation of an export with rate columns: JD's metadata says it, else a harvest's columns, else a rate
    named or written in seeds (a planting), else any rate (an application)."""
    if metadata and str(metadata.get("Operation", "")).lower() in JD_OPERATIONS:
        return JD_OPERATIONS[str(metadata["Operation"]).lower()]
    if any(p in columns for p in HARVEST_COLUMNS):
        return "harvested"
    for name in (rate_name, target_name):
        if name is None:
            continue
        unit = _meta_unit(meta_units, name) or unit_from_suffix(name)
        canonical = to_canonical(unit)
        if (canonical and canonical[0] == "seeds/ha") or "seed" in name.lower() or "sds" in name.lower():
            return "planted"
    if rate_name or target_name:
        return "applied"
    if any("seed" in key or "sds" in key for key in by_norm):
        return "planted"
    return "other"


def rate_property(operation: str | None, unit: str | None, *, target: bool) -> tuple[str, str | None]:
    """The standard property of a rate column in `unit` (None: no unit stated), and its unit: in a planting, a
    rate in seeds or of no stated unit is the seed rate, in JD's seeds/ac when nothing says (FORMATS.md 5.1);
    else the applied rate, its unit None when not stated."""
    canonical = to_canonical(unit)
    seeds = operation == "planted" and (canonical is None or canonical[0] == "seeds/ha")
    prop = ("seedRate" if seeds else "appliedRate") + ("Target" if target else "")
    return prop, unit or ("seeds/ac" if seeds else None)


# -- column values --------------------------------------------------------------------------------------------


def _map_strings(values: np.ndarray, fn) -> np.ndarray:
    if values.dtype.kind == "f":
        uniques, inverse = np.unique(values, return_inverse=True)
        mapped = np.array(
            [None if np.isnan(u) else fn(int(u) if float(u).is_integer() else u) for u in uniques], dtype=object
        )
        return mapped[inverse]
    # (bytes as numpy reads them as text; they are as wide as the file's field already)
    uniques, codes = text_codes(values.astype(str) if values.dtype.kind == "S" else values)
    mapped = np.empty(len(uniques) + 1, dtype=object)  # (the last, for None, stays None)
    mapped[:-1] = [fn(u) if u not in ("None", "") else None for u in uniques]
    return mapped[codes]


def _uniques(values: np.ndarray) -> list[str]:
    out: list[str] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
            if len(out) > 100:
                break
    return out


def _parse_iso(values: np.ndarray) -> np.ndarray:
    """ISO 8601 strings to datetime64[ms] UTC; vectorised for the usual `...Z` form, else value by value. Times
    with a UTC offset go value by value: numpy still applies one, but warns that it will stop doing so."""
    text = np.asarray(values, dtype=object)
    strings = text.astype("U40")
    # An offset is a "+", or a "-" past the date's own two (`2016-09-19T09:45:11-05:00`)
    offset = (np.char.find(strings, "+") >= 0) | (np.char.rfind(strings, "-") > 7)
    if not offset.any() and _iso_shaped(strings).all():
        try:
            return np.char.rstrip(strings, "Z").astype("datetime64[ms]")
        except ValueError:
            pass
    uniques, codes = text_codes(text)
    parsed = np.array([*(iso_utc(item) for item in uniques), None], dtype="datetime64[ms]")
    return parsed[codes]


def _iso_shaped(strings: np.ndarray) -> np.ndarray:
    """Per text (a fixed-width numpy array), whether it starts as an ISO 8601 date-time does (`dddd-dd-dd`, then
    nothing or `T` or a space): what numpy's own parser may be given. It reads more: `now` and `today` (the
    conversion's clock), `2016` and `2016-09` (a month's first instant) were times of the points, where ISO 8601
    text is read as `iso_utc` reads it."""
    if not len(strings):
        return np.ones(0, dtype=bool)
    chars = np.ascontiguousarray(strings).view("U1").reshape(len(strings), -1)
    if chars.shape[1] < 10:
        return np.zeros(len(strings), dtype=bool)
    digits = np.char.isdigit(chars[:, [0, 1, 2, 3, 5, 6, 8, 9]]).all(axis=1)
    dashes = (chars[:, 4] == "-") & (chars[:, 7] == "-")
    joined = (chars[:, 10] == "T") | (chars[:, 10] == " ") | (chars[:, 10] == "") if chars.shape[1] > 10 else True
    return digits & dashes & joined


def iso_utc(text: str) -> np.datetime64:
    """One ISO 8601 time as UTC (an offset honoured, none taken as UTC); NaT when it is none."""
    text = iso_time_text(text)
    try:
        stamp = datetime.fromisoformat(text) if text is not None else None
        if stamp is not None and stamp.tzinfo is not None:
            stamp = stamp.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):  # OverflowError: an offset that moves year 1 or 9999 out of range
        stamp = None
    return np.datetime64("NaT", "ms") if stamp is None else np.datetime64(stamp, "ms")


_TEXT_FORMATS = (
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%d.%m.%Y %H:%M:%S",
    "%Y/%m/%d %H:%M:%S",
)


def parse_text_times(values: np.ndarray) -> np.ndarray:
    """Times as text: ISO 8601 as UTC (an offset honoured, none taken as UTC; `iso_utc`, as the API's filters read
    them), else as the exporters write them (`9/19/2016 4:45:10 PM`); NaT where none parses. A shapefile's `Time`
    column of ISO 8601 text gave no time at all, as its warning named ISO 8601."""
    uniques, inverse = text_codes(values)
    parsed = np.full(len(uniques) + 1, np.datetime64("NaT", "ms"))  # (the last for None)
    for i, text in enumerate(uniques):
        parsed[i] = iso_utc(text)
        if not np.isnat(parsed[i]):
            continue
        for fmt in _TEXT_FORMATS:
            try:
                parsed[i] = np.datetime64(datetime.strptime(text.strip(), fmt), "ms")
                break
            except ValueError:
                continue
    return parsed[inverse]


def time_warnings(stamps: np.ndarray, column: str | None) -> list[str]:
    """What a reader says of its points' times, read from `column` (None: the file has no time column): none when
    every point has one; else how many have none, since a point without a time is in no time range, and an
    operation's times come from its points."""
    missing = int(np.isnat(stamps).sum())
    if not missing:
        return []
    if column is None:
        return ["no time column; points have no timestamp"]
    if missing == len(stamps):
        return [f"{column}: no value is a time (ISO 8601, or as the exporters write it); points have no timestamp"]
    return [f"{column}: {missing} of {len(stamps)} values are no time; those points have no timestamp"]
