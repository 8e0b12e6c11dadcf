"""Format readers (plugins behind `readers.base`): importing this package registers ISOXML, shapefile and GeoJSON."""

from conversion.readers import geojson, isoxml, shapefile  # noqa: F401  (importing registers the readers)
from conversion.readers.base import (
    Dataset,
    MachineIdentity,
    PointTable,
    Reader,
    UnreadableDataset,
    get_reader,
    registered_formats,
)

__all__ = [
    "Dataset",
    "MachineIdentity",
    "PointTable",
    "Reader",
    "UnreadableDataset",
    "get_reader",
    "registered_formats",
]
