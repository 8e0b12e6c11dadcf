"""GeoJSON FeatureCollections of points with the standard property names (or recognisable SMS/JD ones).

- `reader`: `GeojsonReader`, one point table per FeatureCollection of points (registered on import).
- `columns`: which property carries which standard property in which unit (our own names in canonical units, the
  exporters' as the shapefile reader's column rules say), the operation, and the points' times.
- `stream`: the file read as a stream, the top-level object member by member and `features` one feature at a time.
- `points`: the Point features kept as columns: positions and numeric properties as doubles, others as values.
"""

from .columns import STANDARD_UNITS
from .points import KEY_SAMPLE
from .reader import GeojsonReader

__all__ = ["KEY_SAMPLE", "STANDARD_UNITS", "GeojsonReader"]
