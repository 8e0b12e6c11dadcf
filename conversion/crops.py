"""Per-crop standard moisture and bushel weight, and crop name normalisation.

The table holds the supplement's values (a per-crop setting, not a fixed 15.5 %): dry values use
wet x (100 - M) / (100 - Ms) when M > Ms, and bushels are mass / standard bushel weight.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

POUND_KG = 0.45359237


@dataclass(frozen=True)
class CropStandard:
    """Standard moisture (% wet basis) and standard bushel weight (lb) of one crop."""

    name: str
    standard_moisture: float
    bushel_weight_lb: float

    @property
    def bushel_weight_kg(self) -> float:
        """Standard bushel weight in kg."""
        return self.bushel_weight_lb * POUND_KG


CROP_STANDARDS: dict[str, CropStandard] = {
    "corn": CropStandard("corn", 15.5, 56.0),
    "soybeans": CropStandard("soybeans", 13.0, 60.0),
    "wheat": CropStandard("wheat", 13.5, 60.0),
    "barley": CropStandard("barley", 14.5, 48.0),
    "sorghum": CropStandard("sorghum", 14.0, 56.0),
    "oats": CropStandard("oats", 14.0, 32.0),
    "canola": CropStandard("canola", 10.0, 50.0),
}

# John Deere Operations Center numeric crop ids seen in exports (FORMATS.md 5.1).
JD_CROP_IDS: dict[int, str] = {
    173: "corn",
    174: "soybeans",
    11: "oats",
    25: "wheat",
    26: "wheat",
}

# Lower-case, accent-free keywords -> canonical crop. A name matches when one of its words starts with a keyword
# (so "Winterweizen", "Wintergerste" and "CORN_WET" all match); the first match in this order wins.
_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("soybean", "soybeans"),
    ("soy", "soybeans"),
    ("soja", "soybeans"),
    ("corn", "corn"),
    ("maize", "corn"),
    ("mais", "corn"),
    ("wheat", "wheat"),
    ("weizen", "wheat"),
    ("durum", "wheat"),
    ("dinkel", "wheat"),
    ("barley", "barley"),
    ("gerste", "barley"),
    ("orge", "barley"),
    ("sorghum", "sorghum"),
    ("milo", "sorghum"),
    ("oat", "oats"),
    ("hafer", "oats"),
    ("avoine", "oats"),
    ("canola", "canola"),
    ("rapeseed", "canola"),
    ("raps", "canola"),
    ("colza", "canola"),
)
# A JD crop id: ASCII digits (`str.isdigit` is true for "²", which `int` refuses), few enough for `int` to take.
_CROP_ID = re.compile(r"[0-9]{1,9}")
# Qualifiers written in front of a crop in one word ("Winterweizen", German "Körnermais": grain maize). Silage maize
# ("Silomais") is not grain: the grain standards would give it wrong dry values, so it keeps its own name.
_SILAGE = re.compile(r"silage|^silo|ensil")
_PREFIXES = ("winter", "sommer", "summer", "spring", "fall", "hard", "soft", "red", "white", "korner", "koerner")


def normalize_crop_name(name: str | int | float | None) -> str | None:
    """Canonical crop name ("corn", "soybeans", ...) for a JD crop id, token or a free-text name.

    Unknown crops keep their own name (as `readers.values.text_value` takes it: cleaned, stripped, a number as its
    digits) so nothing is lost; None for empty input and for values that are no name (NaN, booleans, objects).
    """
    from conversion.readers.values import text_value  # the readers package imports this module

    text = text_value(name)
    if text is None:
        return None
    if _CROP_ID.fullmatch(text):
        return JD_CROP_IDS.get(int(text), text)
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = [w for w in re.split(r"[^a-z]+", folded) if w]
    if any(_SILAGE.search(w) for w in words):
        return text  # "Corn Silage", "Silo-Mais", "Maissilage": no grain (see _PREFIXES)
    for word in words:
        for prefix in _PREFIXES:
            if word.startswith(prefix) and len(word) > len(prefix):
                words.append(word[len(prefix) :])
    for keyword, crop in _KEYWORDS:
        if any(w.startswith(keyword) for w in words):
            return crop
    return text


def crop_standard(name: str | None) -> CropStandard | None:
    """The standard moisture / bushel weight of a crop name (normalised first), or None when not in the table."""
    crop = normalize_crop_name(name)
    return CROP_STANDARDS.get(crop) if crop else None
