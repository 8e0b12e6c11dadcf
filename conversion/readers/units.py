"""Unit spellings and conversions between source units and the canonical metric units of the supplement.

Canonical units (supplement spellings): m, m2, m/s, arcdeg, percentage, kg, kg/ha, kg/s, L, L/ha, seeds, seeds/ha.
Source units arrive as ADAPT UOM codes (John Deere metadata: `ft`, `bu1ac-1`, `lb1ac-1`, `seeds1ac-1`, `gal1ac-1`,
`prcnt`) or as the suffixes of SMS column names; both are normalised to the plain spellings below first.
"""

from __future__ import annotations

ACRE_M2 = 4046.8564224
HECTARE_M2 = 10000.0
FOOT_M = 0.3048
POUND_KG = 0.45359237
US_GALLON_L = 3.785411784
US_BUSHEL_L = 35.23907016688
MPH_MS = 0.44704
FLUID_OUNCE_L = 0.0295735295625
OUNCE_KG = 0.028349523125

# Source unit -> (canonical unit, factor): canonical = source x factor.
CONVERSIONS: dict[str, tuple[str, float]] = {
    "m": ("m", 1.0),
    "ft": ("m", FOOT_M),
    "in": ("m", 0.0254),
    "cm": ("m", 0.01),
    "mm": ("m", 0.001),
    "km": ("m", 1000.0),
    "mi": ("m", 1609.344),
    "m2": ("m2", 1.0),
    "ac": ("m2", ACRE_M2),
    "ha": ("m2", HECTARE_M2),
    "ft2": ("m2", FOOT_M**2),
    "m/s": ("m/s", 1.0),
    "km/h": ("m/s", 1 / 3.6),
    "mph": ("m/s", MPH_MS),
    "ft/s": ("m/s", FOOT_M),
    "arcdeg": ("arcdeg", 1.0),
    "percentage": ("percentage", 1.0),
    "kg": ("kg", 1.0),
    "lb": ("kg", POUND_KG),
    "oz": ("kg", OUNCE_KG),
    "t": ("kg", 1000.0),
    "kg/ha": ("kg/ha", 1.0),
    "lb/ac": ("kg/ha", POUND_KG / ACRE_M2 * HECTARE_M2),
    "oz/ac": ("kg/ha", OUNCE_KG / ACRE_M2 * HECTARE_M2),
    "t/ha": ("kg/ha", 1000.0),
    "kg/s": ("kg/s", 1.0),
    "lb/s": ("kg/s", POUND_KG),
    "t/h": ("kg/s", 1000.0 / 3600.0),
    "L": ("L", 1.0),
    "gal": ("L", US_GALLON_L),
    "bu": ("L", US_BUSHEL_L),
    "L/ha": ("L/ha", 1.0),
    "gal/ac": ("L/ha", US_GALLON_L / ACRE_M2 * HECTARE_M2),
    "floz/ac": ("L/ha", FLUID_OUNCE_L / ACRE_M2 * HECTARE_M2),
    "bu/ac": ("L/ha", US_BUSHEL_L / ACRE_M2 * HECTARE_M2),
    "seeds": ("seeds", 1.0),
    "seeds/ha": ("seeds/ha", 1.0),
    "seeds/ac": ("seeds/ha", HECTARE_M2 / ACRE_M2),
    "kseeds/ac": ("seeds/ha", 1000.0 * HECTARE_M2 / ACRE_M2),
    "seeds/m2": ("seeds/ha", HECTARE_M2),
}

# ADAPT UOM codes (as used in John Deere `-Deere-Metadata.json`) and other spellings -> the keys above.
ALIASES: dict[str, str] = {
    "ft": "ft",
    "m": "m",
    "prcnt": "percentage",
    "%": "percentage",
    "percent": "percentage",
    "arcdeg": "arcdeg",
    "deg": "arcdeg",
    "bu1ac-1": "bu/ac",
    "lb1ac-1": "lb/ac",
    "kg1ha-1": "kg/ha",
    "t1ha-1": "t/ha",
    "seeds1ac-1": "seeds/ac",
    "seeds1ha-1": "seeds/ha",
    "ksds1ac-1": "kseeds/ac",
    "gal1ac-1": "gal/ac",
    "l1ha-1": "L/ha",
    "ozm1ac-1": "oz/ac",  # ADAPT's ounce of mass (its fluid ounce is floz)
    "floz1ac-1": "floz/ac",
    "lb1sec-1": "lb/s",
    "kg1sec-1": "kg/s",
    "mi1hr-1": "mph",
    "km1hr-1": "km/h",
    "m1sec-1": "m/s",
    "ft1sec-1": "ft/s",
}

# How many source units make one imperial display unit, for reporting imperial units on request.
IMPERIAL_OF: dict[str, str] = {
    "m": "ft",
    "m2": "ac",
    "m/s": "mph",
    "kg": "lb",
    "kg/ha": "lb/ac",
    "kg/s": "lb/s",
    "L": "gal",
    "L/ha": "gal/ac",
    "seeds/ha": "seeds/ac",
}


def normalize_unit(unit: str | None) -> str | None:
    """The plain spelling of a source unit (ADAPT code or plain), or None when unknown."""
    if not unit:
        return None
    if unit in CONVERSIONS:
        return unit
    key = unit.strip()
    if key in ALIASES:
        return ALIASES[key]
    lowered = key.lower()
    for spelling in (lowered, lowered.replace(" ", "")):
        if spelling in ALIASES:
            return ALIASES[spelling]
        for canonical in CONVERSIONS:
            if canonical.lower() == spelling:
                return canonical
    return None


def to_canonical(unit: str | None) -> tuple[str, float] | None:
    """(canonical unit, factor) for a source unit, or None when the unit is unknown."""
    plain = normalize_unit(unit)
    if plain is None:
        return None
    return CONVERSIONS.get(plain)


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value between two units of the same kind (e.g. `convert(x, "L", "bu")`)."""
    src = to_canonical(from_unit)
    dst = to_canonical(to_unit)
    if src is None or dst is None or src[0] != dst[0]:
        raise ValueError(f"cannot convert {from_unit!r} to {to_unit!r}")
    return value * src[1] / dst[1]
