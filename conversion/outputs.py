"""What a converted file produces, written to storage: points, standardGeojson, rawGeojson, summary, units.

`produce(file, table)` runs the pure pipeline (`conversion.standardize`) on one operation's points and stores
every output under the file's storage folder, recording each step's status; `Produced.apply(file)` copies the
results onto the row (the caller saves it inside its transaction). Nothing here touches other apps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from django.core.files.storage import default_storage

from platform_site.text import storable

from . import archive, pointstore, standardize, storage
from .file_images import file_images_render
from .models import BatchDataset, File
from .readers import UnreadableDataset
from .readers.base import Dataset, PointTable

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_datetime(value) -> dt.datetime | None:
    """A point time (datetime64) as an aware UTC datetime, to the millisecond: counted from the epoch in whole
    milliseconds (through float seconds, times far from 1970 lost their microseconds, and a file's `startTime`
    said 12:34:56.000 where its points said 56.001)."""
    if value is None or np.isnat(value):
        return None
    ms = int(np.datetime64(value, "ms").astype(np.int64))
    return _EPOCH + dt.timedelta(milliseconds=ms)


def crop_key(crop: str) -> str:
    """A crop's name as the `crop` filter compares it: case and spacing aside, a `|` (the separator of the keys)
    written as U+001F, so that no name or filter value spans two crops ("corn|soybeans" matched a file of both)."""
    return " ".join(crop.split()).lower().replace("|", "\x1f")


def crop_keys(crops: list[str]) -> str:
    return ("|" + "|".join(crop_key(c) for c in crops) + "|")[:1024] if crops else ""


def _step(status: str, message: str | None = None) -> dict:
    return {"status": status, "message": message}


# A file record's `warnings` stay small whatever the file holds: every record of a list carries them.
WARNINGS_MAX = 100
WARNING_MAX_CHARS = 1000


def file_warnings(warnings: Iterable[str]) -> list[str]:
    """A file record's `warnings`: the table's warnings in their order, each cleaned like any text from a file
    (`storable`) and cut to WARNING_MAX_CHARS, empty ones and repeats left out; past WARNINGS_MAX, the first ones
    and a last entry saying how many more there were."""
    kept: dict[str, None] = {}
    for warning in warnings:
        text = storable(str(warning)).strip()
        if len(text) > WARNING_MAX_CHARS:
            text = text[: WARNING_MAX_CHARS - 1] + "\u2026"
        if text:
            kept[text] = None
    out = list(kept)
    if len(out) > WARNINGS_MAX:
        more = len(out) - (WARNINGS_MAX - 1)
        out = [*out[: WARNINGS_MAX - 1], f"{more} more warnings not shown"]
    return out


@dataclass
class Produced:
    """Outputs of one file: storage names, summary, units and step statuses; `table` is the table as finally
    standardised (derived, then cleaned), whose warnings become the file's."""

    table: PointTable
    summary: dict
    units: dict
    imperial_units: dict
    names: dict[str, str]
    steps: dict[str, dict]
    size: int
    dropped: int = 0
    drop_reasons: dict[str, int] = field(default_factory=dict)
    images: list[dict] = field(default_factory=list)

    def apply(self, file: File) -> None:
        props = self.summary["properties"]
        file.operation_type = self.table.operation_type
        file.start_time = to_datetime(self.table.start)
        file.end_time = to_datetime(self.table.end)
        file.summary = self.summary
        file.units = self.units
        file.imperial_units = self.imperial_units
        file.steps = self.steps
        file.point_count = len(self.table)
        file.warnings = file_warnings(self.table.warnings)
        file.area = (props.get("totalArea") or {}).get("value")
        file.crops = list(self.table.crops)
        file.crop_keys = crop_keys(file.crops)
        file.varieties = list(self.table.varieties)
        file.products = list(self.table.products)
        file.size_in_bytes = self.size
        file.images = self.images
        file.points_name = self.names.get("points", "")
        file.raw_points_name = self.names.get("raw_points", "")
        file.standard_geojson_name = self.names.get("standard", "")
        file.raw_geojson_name = self.names.get("raw", "")
        if self.names.get("original"):
            file.original_name = self.names["original"]


def store_original(dataset: BatchDataset, source: Dataset, *, extra: Sequence[Path] = ()) -> str:
    """Store the data set's own files (`archive.dataset_files`, plus the `extra` files its reader used from a
    subfolder, at their place) as one zip: a file's `originalFile`."""
    base = source.root if source.format != "GEOJSON" else source.path.parent
    paths = sorted({*archive.dataset_files(source), *extra})
    return storage.store_zip_of(f"datasets/{dataset.batch_id}/{dataset.position}.zip", paths, base)


def produce(file: File, table: PointTable, *, original_name: str = "", clean: bool = True) -> Produced:
    """Standardise and clean `table` and store the file's outputs; raises `UnreadableDataset` when no point
    is left after cleaning."""
    prefix = storage.file_prefix(file.pk)
    names: dict[str, str] = {"original": original_name} if original_name else {}
    names["raw_points"], _ = storage.store_stream(f"{prefix}/raw.npz", lambda f: pointstore.table_save(table, f))
    if clean:
        cleaned, result = standardize.standardize(table)
        dropped, reasons = result.dropped, result.reasons
    else:
        cleaned, dropped, reasons = table, 0, {}
    if len(table) == 0:
        # The reader left every point out: its warnings say why ("0 read; dropped: all" blamed cleaning).
        said = "; ".join(warning.rstrip(".") for warning in table.warnings)
        raise UnreadableDataset(f"No point could be read ({said})" if said else "No point could be read")
    if len(cleaned) == 0:
        detail = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
        raise UnreadableDataset(f"No point is left after cleaning ({len(table)} read; dropped: {detail or 'all'})")
    names["raw"], _ = storage.store_stream(f"{prefix}/raw.geojson", lambda f: standardize.write_raw_geojson(table, f))
    names["points"], _ = storage.store_stream(
        f"{prefix}/points.npz", lambda f: pointstore.table_save(cleaned, f, include_raw=False)
    )
    names["standard"], _ = storage.store_stream(
        f"{prefix}/standard.geojson", lambda f: standardize.write_standard_geojson(cleaned, f)
    )
    summary = standardize.summary(cleaned)
    summary["properties"]["cleaning"] = {"pointsRead": len(table), "pointsDropped": dropped, "reasons": reasons}
    # The file's own warnings, not its points': a merge of it checks its own totals.
    cleaned = replace(cleaned, warnings=[*cleaned.warnings, *standardize.totals_disagreements(summary["properties"])])
    units = standardize.units(cleaned)
    steps = {
        "rawGeojson": _step("processed"),
        "standardGeojson": _step("processed"),
        "summary": _step("processed"),
        "units": _step("processed"),
    }
    images, steps["propertiesPNGs"] = file_images_render(file, cleaned, summary=summary, units=units)
    size = default_storage.size(names.get("original") or names["standard"])
    imperial_units = standardize.imperial_units(cleaned, units)
    return Produced(cleaned, summary, units, imperial_units, names, steps, size, dropped, reasons, images)


def load_points(file: File) -> PointTable:
    """The file's cleaned points (what standardGeojson holds) from storage."""
    with default_storage.open(file.points_name, "rb") as fh:
        return pointstore.table_load(fh, include_raw=False)


def original_download_name(file: File) -> str:
    """The file's name (a data set's name has no extension: `Yield 2016.09.19 v1.2` keeps its `.2`) as a zip."""
    return f"{Path(file.file_name).name or file.pk}.zip"


UNIT_SYSTEMS = ("metric", "imperial")


def file_units(file: File, unit_system: str = "metric") -> dict | None:
    """A processed file's units map: metric, as its outputs are; or `imperial`: the units the source used where it
    used imperial ones (supplement: "imperial on request where the source is imperial"). A file processed before
    the imperial map was kept gets it from its stored points (their source units), each time: nothing is written."""
    if unit_system == "metric" or file.units is None:
        return file.units
    if file.imperial_units is None:
        return standardize.imperial_units(load_points(file), file.units)
    return file.imperial_units


def file_summary(file: File, unit_system: str = "metric") -> dict | None:
    """A processed file's summary, its measures in the units of `file_units` (the stored summary is metric)."""
    if unit_system == "metric" or file.summary is None:
        return file.summary
    return standardize.summary_in_units(file.summary, file.units or {}, file_units(file, unit_system) or {})
