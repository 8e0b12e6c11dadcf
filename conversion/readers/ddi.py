"""Our own small table of ISO 11783-11 data dictionary identifiers (DDIs) that matter for conversion.

ISO's export file may not be redistributed, so only the DDIs we use are listed, with the unit and resolution
published in FORMATS.md section 2.5. `value x resolution` gives the value in the DDI unit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DDIInfo:
    """Name, unit and resolution of one DDI; `bitfield` DDIs are read as uint32, `total` ones are counters."""

    name: str
    unit: str
    resolution: float = 1.0
    bitfield: bool = False
    total: bool = False


DDIS: dict[int, DDIInfo] = {
    0x0001: DDIInfo("Setpoint Volume Per Area Application Rate", "mm3/m2", 0.01),
    0x0002: DDIInfo("Actual Volume Per Area Application Rate", "mm3/m2", 0.01),
    0x0006: DDIInfo("Setpoint Mass Per Area Application Rate", "mg/m2"),
    0x0007: DDIInfo("Actual Mass Per Area Application Rate", "mg/m2"),
    0x000B: DDIInfo("Setpoint Count Per Area Application Rate", "/m2", 0.001),
    0x000C: DDIInfo("Actual Count Per Area Application Rate", "/m2", 0.001),
    0x0010: DDIInfo("Setpoint Spacing Application Rate", "mm"),
    0x0011: DDIInfo("Actual Spacing Application Rate", "mm"),
    0x0024: DDIInfo("Setpoint Volume Per Time Application Rate", "mm3/s"),
    0x0025: DDIInfo("Actual Volume Per Time Application Rate", "mm3/s"),
    0x0029: DDIInfo("Setpoint Mass Per Time Application Rate", "mg/s"),
    0x002A: DDIInfo("Actual Mass Per Time Application Rate", "mg/s"),
    0x0033: DDIInfo("Setpoint Working Depth", "mm"),
    0x0034: DDIInfo("Actual Working Depth", "mm"),
    0x0043: DDIInfo("Actual Working Width", "mm"),
    0x0046: DDIInfo("Maximum Working Width", "mm"),
    0x0048: DDIInfo("Actual Volume Content", "ml"),
    0x004B: DDIInfo("Actual Mass Content", "g"),
    0x0050: DDIInfo("Total Volume", "L", total=True),
    0x0051: DDIInfo("Total Mass", "kg", total=True),
    0x0052: DDIInfo("Total Count", "count", total=True),
    0x0053: DDIInfo("Volume Per Area Yield", "ml/m2"),
    0x0054: DDIInfo("Mass Per Area Yield", "mg/m2"),
    0x0056: DDIInfo("Volume Per Time Yield", "ml/s"),
    0x0057: DDIInfo("Mass Per Time Yield", "mg/s"),
    0x0059: DDIInfo("Yield Total Volume", "L", total=True),
    0x005A: DDIInfo("Yield Total Mass", "kg", total=True),
    0x0063: DDIInfo("Crop Moisture", "ppm"),
    0x0074: DDIInfo("Total Area", "m2", total=True),
    0x0075: DDIInfo("Effective Total Distance", "mm", total=True),
    0x0076: DDIInfo("Ineffective Total Distance", "mm", total=True),
    0x0077: DDIInfo("Effective Total Time", "s", total=True),
    0x0078: DDIInfo("Ineffective Total Time", "s", total=True),
    0x0079: DDIInfo("Product Density Mass Per Volume", "mg/L"),
    0x0086: DDIInfo("Device Element Offset X", "mm"),
    0x0087: DDIInfo("Device Element Offset Y", "mm"),
    0x0088: DDIInfo("Device Element Offset Z", "mm"),
    0x008D: DDIInfo("Actual Work State", "enum"),
    0x0090: DDIInfo("Actual Yaw Angle", "arcdeg", 0.001),
    0x0091: DDIInfo("Actual Roll Angle", "arcdeg", 0.001),
    0x0092: DDIInfo("Actual Pitch Angle", "arcdeg", 0.001),
    0x0094: DDIInfo("Total Fuel Consumption", "ml", total=True),
    0x0095: DDIInfo("Instantaneous Fuel Consumption per Time", "mm3/s"),
    0x009E: DDIInfo("Prescription Control State", "enum"),
    0x00A0: DDIInfo("Section Control State", "enum"),
    0x00B5: DDIInfo("Dry Mass Per Area Yield", "mg/m2"),
    0x00B6: DDIInfo("Dry Mass Per Time Yield", "mg/s"),
    0x00B7: DDIInfo("Yield Total Dry Mass", "kg", total=True),
    0x00B8: DDIInfo("Reference Moisture For Dry Mass", "ppm"),
    0x00EF: DDIInfo("Yield Hold Status", "enum"),
    0x0106: DDIInfo("Average Crop Moisture", "ppm"),
    0x0107: DDIInfo("Average Yield Mass Per Area", "mg/m2"),
    0x018C: DDIInfo("Setpoint Speed", "mm/s"),
    0x018D: DDIInfo("Actual Speed", "mm/s"),
}

# Condensed work states (sections 1-16 ... 241-256) and setpoint condensed work states, and section control
# override states: 2-bit fields packed into 32 bits. A signed read gives nonsense (SingleDPD logs -2731).
_BITFIELD_RANGES = ((0x00A1, 0x00B0), (0x0122, 0x0131), (0x016F, 0x017E))
for _first, _last in _BITFIELD_RANGES:
    for _ddi in range(_first, _last + 1):
        DDIS.setdefault(_ddi, DDIInfo(f"Condensed Work State {_ddi:04X}", "bits", bitfield=True))
        DDIS[_ddi] = DDIInfo(DDIS[_ddi].name, "bits", bitfield=True)

PROPRIETARY_FIRST = 0xE000
PGN_BASED = 0xDFFE
REQUEST_DEFAULT = 0xDFFF


def is_bitfield(ddi: int) -> bool:
    """True for DDIs whose 32 bits are a bit field (read as uint32)."""
    info = DDIS.get(ddi)
    return bool(info and info.bitfield)


def resolution(ddi: int) -> float:
    """Resolution of a DDI (1 for unknown and proprietary DDIs)."""
    info = DDIS.get(ddi)
    return info.resolution if info else 1.0


def unit(ddi: int) -> str:
    """Unit of a DDI ("" when unknown)."""
    info = DDIS.get(ddi)
    return info.unit if info else ""


def is_standard(ddi: int) -> bool:
    """False for proprietary (0xE000-0xFFFE), PGN-based and 'request default' DDIs, which we cannot decode."""
    return ddi < PGN_BASED


@dataclass(frozen=True)
class StandardMapping:
    """How one DDI becomes a standard point property: canonical = raw x factor (factor includes the resolution)."""

    prop: str
    unit: str
    factor: float


# Order matters where two DDIs feed one property: the first present wins (actual before setpoint).
STANDARD_PROPERTIES: dict[int, StandardMapping] = {
    0x0043: StandardMapping("equipmentWidth", "m", 0.001),
    0x0054: StandardMapping("wetMassPerArea", "kg/ha", 0.01),
    0x00B5: StandardMapping("dryMassPerArea", "kg/ha", 0.01),
    0x0053: StandardMapping("wetVolumePerArea", "L/ha", 10.0),
    0x0057: StandardMapping("cropFlow", "kg/s", 1e-6),
    0x0063: StandardMapping("harvestMoisture", "percentage", 1e-4),
    0x000C: StandardMapping("seedRate", "seeds/ha", 10.0),
    0x000B: StandardMapping("seedRateTarget", "seeds/ha", 10.0),
    0x0002: StandardMapping("appliedRate", "L/ha", 1e-4),
    0x0007: StandardMapping("appliedRate", "kg/ha", 0.01),
    0x0001: StandardMapping("appliedRateTarget", "L/ha", 1e-4),
    0x0006: StandardMapping("appliedRateTarget", "kg/ha", 0.01),
    0x018D: StandardMapping("speed", "m/s", 0.001),
    0x0034: StandardMapping("seedDepth", "m", 0.001),
}

# Task totals (TIM DLVs in TASKDATA.XML, or last - first of a logged counter) -> summary total names.
TOTALS: dict[int, StandardMapping] = {
    0x005A: StandardMapping("totalWetMass", "kg", 1.0),
    0x00B7: StandardMapping("totalDryMass", "kg", 1.0),
    0x0059: StandardMapping("totalWetVolume", "L", 1.0),
    0x0074: StandardMapping("totalArea", "m2", 1.0),
    0x0075: StandardMapping("totalDistance", "m", 0.001),
    0x0050: StandardMapping("totalApplied", "L", 1.0),
    0x0051: StandardMapping("totalApplied", "kg", 1.0),
    0x0052: StandardMapping("totalPlanted", "seeds", 1.0),
    0x0094: StandardMapping("totalFuelConsumption", "L", 0.001),
}

# Fallback for the operation type when no implement's device class says it (FORMATS.md 2.3).
OPERATION_DDIS: tuple[tuple[str, frozenset[int]], ...] = (
    ("harvested", frozenset({0x0054, 0x0057, 0x0053, 0x0056, 0x005A, 0x00B5})),
    ("planted", frozenset({0x000B, 0x000C})),
    ("applied", frozenset({0x0001, 0x0002, 0x0006, 0x0007})),
    ("tillage", frozenset({0x0033, 0x0034})),
)
