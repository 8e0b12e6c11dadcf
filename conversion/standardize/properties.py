"""The point properties of the supplement and the constants the steps share.

Units of the values we derive, the output order of point properties, which properties are rates (averaged
weighted by area) and the primary rate of each operation type (what cleaning checks); the Earth's radius and the
hectare.
"""

from __future__ import annotations

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
