"""Pure functions on point tables: derived values, default cleaning, summary, units and GeoJSON output.

One module per step; import them from here.
- `properties`: the supplement's point properties (units of derived values, output order, rates) and the
  constants the steps share.
- `derived`: distance, heading, speed, area, dry yields, volumes and per-point totals a source lacks.
- `cleaning`: default cleaning, and `standardize` (derive, then clean).
- `summaries`: units, totals and the summary Feature.
- `covered_area`: the covered area as a MultiPolygon (the summary's geometry).
- `geojson`: the standard and raw GeoJSON writers.
"""

from .cleaning import CleanResult, clean, primary_rate, standardize
from .covered_area import DEFAULT_CELL_M, coverage
from .derived import (
    PASS_BREAK_METRES,
    PASS_BREAK_SECONDS,
    derive,
    dry_from_wet,
    point_bushel_weight_kg,
    point_standard_moisture,
    track_distance_heading,
)
from .geojson import write_raw_geojson, write_standard_geojson
from .properties import DERIVED_UNITS, EARTH_RADIUS_M, HA_M2, PRIMARY_RATES, PROPERTY_ORDER, RATE_PROPERTIES
from .summaries import imperial_units, summary, summary_in_units, totals, totals_disagreements, units

__all__ = [
    "DEFAULT_CELL_M",
    "DERIVED_UNITS",
    "EARTH_RADIUS_M",
    "HA_M2",
    "PASS_BREAK_METRES",
    "PASS_BREAK_SECONDS",
    "PRIMARY_RATES",
    "PROPERTY_ORDER",
    "RATE_PROPERTIES",
    "CleanResult",
    "clean",
    "coverage",
    "derive",
    "dry_from_wet",
    "imperial_units",
    "point_bushel_weight_kg",
    "point_standard_moisture",
    "primary_rate",
    "standardize",
    "summary",
    "summary_in_units",
    "totals",
    "totals_disagreements",
    "track_distance_heading",
    "units",
    "write_raw_geojson",
    "write_standard_geojson",
]
