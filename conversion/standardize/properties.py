"""The point properties of the supplement and the constants the steps share.

Units of the values we derive, the output order of point properties, which properties are rates (averaged
weighted by area) and the primary rate of each operation type (what cleaning checks); the Earth's radius and the
hectare.
"""

from __future__ import annotations

import numpy as np

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
    "harvested": ("wetMassPerArea", "dryMassPerArea", "wetVolumePerArea", "dryVolumePerArea", "wetMass"),
    "planted": ("seedRate", "appliedRate"),
    "applied": ("appliedRate",),
}


def section_steps(columns: dict[str, np.ndarray]) -> np.ndarray | None:
    """For rows written per section (a `sectionId` column), the time step of each row as an integer index, so that
    what a step repeats on each of its rows (distance travelled) counts once and what it splits (width) adds up.

    Rows of one timestamp are one step. Rows without a time are never merged on their missing time: they follow the
    file's order, a new step starting where the section id stops increasing (1, 2, 1, 2 is two steps). None when the
    rows are not per section.
    """
    if "sectionId" not in columns:
        return None
    sections = np.asarray(columns["sectionId"])
    steps = np.zeros(len(sections), dtype=np.int64)
    ts = columns.get("timestamp")
    timed = ~np.isnat(np.asarray(ts)) if ts is not None else np.zeros(len(sections), dtype=bool)
    first_untimed = 0
    if timed.any():
        _, steps[timed] = np.unique(np.asarray(ts)[timed], return_inverse=True)
        first_untimed = int(steps[timed].max()) + 1
    untimed = ~timed
    if untimed.any():
        try:
            ids = np.asarray(sections[untimed], dtype=float)
        except (TypeError, ValueError):
            ids = np.full(int(untimed.sum()), np.nan)  # ids that are not numbers: each row a step of its own
        new_step = np.ones(len(ids), dtype=bool)
        new_step[1:] = ~(ids[1:] > ids[:-1])
        steps[untimed] = first_untimed + np.cumsum(new_step) - 1
    return steps
