"""The point properties of the supplement and the constants the steps share.

Units of the values we derive, the output order of point properties, which properties are rates (averaged
weighted by area) and the primary rate of each operation type (what cleaning checks); the Earth's radius and the
hectare.
"""

from __future__ import annotations

import numpy as np

from conversion.readers.base import HARVEST_COLUMNS

EARTH_RADIUS_M = 6_371_008.8
HA_M2 = 10_000.0

DERIVED_UNITS: dict[str, str] = {
    "area": "m2",
    "distance": "m",
    "heading": "arcdeg",
    "speed": "m/s",
    "wetMass": "kg",
    "dryMass": "kg",
    "wetVolume": "L",
    "dryVolume": "L",
    "wetMassPerArea": "kg/ha",  # from the flow (`derived.yield_from_flow`)
    "dryMassPerArea": "kg/ha",
    "wetVolumePerArea": "L/ha",
    "dryVolumePerArea": "L/ha",
}
# Output order of point properties (supplement names).
PROPERTY_ORDER: tuple[str, ...] = (
    "area",
    "distance",
    "heading",
    "speed",
    "elevation",
    "equipmentWidth",
    "sectionId",
    "seedRate",
    "seedRateTarget",
    "seedDepth",
    "appliedRate",
    "appliedRateTarget",
    "wetMass",
    "wetMassPerArea",
    "dryMass",
    "dryMassPerArea",
    "wetVolume",
    "wetVolumePerArea",
    "dryVolume",
    "dryVolumePerArea",
    "harvestMoisture",
    "cropFlow",
)
RATE_PROPERTIES = frozenset(
    {
        "seedRate",
        "seedRateTarget",
        "appliedRate",
        "appliedRateTarget",
        "wetMassPerArea",
        "dryMassPerArea",
        "wetVolumePerArea",
        "dryVolumePerArea",
        "harvestMoisture",
    }
)
PRIMARY_RATES: dict[str, tuple[str, ...]] = {
    # the columns only a harvest has, yields per area first: cleaning goes by the first a file has
    "harvested": HARVEST_COLUMNS,
    "planted": ("seedRate", "appliedRate"),
    "applied": ("appliedRate",),
}


# Internal column of a merged table (`conversion.merge`): per row, the index of the source file it came from. Not a
# property: outputs never write it (they pick their columns by name), it only keeps files apart where rows are
# grouped (a time step never spans two files).
SOURCE_COLUMN = "_source"


def in_derived_unit(units: dict[str, str], name: str) -> bool:
    """Whether column `name` is in the unit its derived values take (a column without a unit stated in `units` is:
    the table's derived columns); a value of another or unknown unit converts to nothing."""
    return (units.get(name) or DERIVED_UNITS[name]) == DERIVED_UNITS[name]


def section_steps(columns: dict[str, np.ndarray]) -> np.ndarray | None:
    """For rows written per section (a `sectionId` column), the time step of each row as an integer index, so that
    what a step repeats on each of its rows (distance travelled) counts once and what it splits (width) adds up.

    Rows of one source file (`SOURCE_COLUMN` of a merged table; one file otherwise) and one timestamp are one step:
    two files logging the same seconds (two machines, one log uploaded twice) are two steps, never one. Rows without
    a time are never merged on their missing time: they follow the table's order, a new step starting where the
    section id stops increasing (1, 2, 1, 2 is two steps) or the source file changes. None when the rows are not
    per section.
    """
    if "sectionId" not in columns:
        return None
    sections = np.asarray(columns["sectionId"])
    n = len(sections)
    steps = np.zeros(n, dtype=np.int64)
    source = columns.get(SOURCE_COLUMN)
    sources = np.zeros(n, dtype=np.int64) if source is None else np.asarray(source, dtype=np.int64)
    ts = columns.get("timestamp")
    timed = ~np.isnat(np.asarray(ts)) if ts is not None else np.zeros(n, dtype=bool)
    first_untimed = 0
    if timed.any():
        keys = np.column_stack((sources[timed], np.asarray(ts)[timed].view(np.int64)))
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        steps[timed] = inverse.reshape(-1)
        first_untimed = int(steps[timed].max()) + 1
    untimed = ~timed
    if untimed.any():
        try:
            ids = np.asarray(sections[untimed], dtype=float)
        except (TypeError, ValueError):
            ids = np.full(int(untimed.sum()), np.nan)  # ids that are not numbers: each row a step of its own
        own = sources[untimed]
        new_step = np.ones(len(ids), dtype=bool)
        new_step[1:] = ~(ids[1:] > ids[:-1]) | (own[1:] != own[:-1])
        steps[untimed] = first_untimed + np.cumsum(new_step) - 1
    return steps
