"""Map images of a file (the `propertiesPNGs` step): one PNG per numeric property, stored under
`files/<id>/images/<property>.png`, drawn with the core user's inherited configuration (`operationsImageCreation`,
`geoimagesResolution`, `geoimagesShape`, `geoimagesProjection`, `geoimagesColorRamp`).

Rendering itself is `conversion.images.render_property_images` (pure); this module reads the configuration, picks
the properties, stores the PNGs and describes them for `File.images`. A rendering failure fails only this step:
the file is still processed.
"""

from __future__ import annotations

import logging

import numpy as np

from configs.services import config_resolve

from . import storage
from .images import render_property_images
from .links import coverage_geometry
from .models import File
from .readers.base import PointTable

log = logging.getLogger(__name__)

DISABLED_MESSAGE = "Map images are turned off by the configuration (operationsImageCreation is false)."


def images_prefix(file_id) -> str:
    return f"{storage.file_prefix(file_id)}/images"


def image_name(file_id, prop: str) -> str:
    return f"{images_prefix(file_id)}/{prop}.png"


def _step(status: str, message: str | None = None) -> dict:
    return {"status": status, "message": message}


def file_images_render(file: File, table: PointTable, *, summary: dict, units: dict) -> tuple[list[dict], dict]:
    """Render and store the PNGs of `table` (the file's cleaned points); returns (`File.images`, the step).

    Properties are the numeric ones the units map names (what the summary describes); cells outside the summary's
    coverage are transparent. Images stored by an earlier run of the file are removed first.
    """
    storage.delete_tree(images_prefix(file.pk))
    config = config_resolve(core_user=file.core_user)
    if not config.get("operationsImageCreation", True):
        return [], _step("skipped", DISABLED_MESSAGE)
    properties = {
        name: np.asarray(table.columns[name], dtype=np.float64)
        for name in units
        if name in table.columns and np.asarray(table.columns[name]).dtype.kind in "fiu"
    }
    if not properties:
        return [], _step("skipped", "The file has no numeric property to draw.")
    ramp = config.get("geoimagesColorRamp")
    try:
        rendered = render_property_images(
            table.columns["lon"],
            table.columns["lat"],
            properties,
            resolution=config.get("geoimagesResolution"),
            shape=config.get("geoimagesShape"),
            projection=config.get("geoimagesProjection"),
            color_ramp=ramp,
            coverage=coverage_geometry(summary),
            units=units,
        )
        images = []
        for image in rendered:
            name, _ = storage.store_stream(image_name(file.pk, image.property), lambda f, png=image.png: f.write(png))
            images.append(
                {
                    "property": image.property,
                    "ramp": ramp,
                    "name": name,
                    "extent": image.extent,
                    "legend": image.legend,
                    "width": image.width,
                    "height": image.height,
                    "projection": image.projection,
                    "cellSize": image.cell_size,
                    "unit": image.unit,
                }
            )
    except Exception as exc:  # a bad configuration or an unexpected renderer error fails only this step
        log.warning("map images of file %s failed: %s", file.pk, exc, exc_info=not isinstance(exc, ValueError))
        storage.delete_tree(images_prefix(file.pk))
        return [], _step("failed", f"Map images could not be drawn: {exc}")
    if not images:
        return [], _step("skipped", "No point has usable coordinates to draw.")
    return images, _step("processed")
