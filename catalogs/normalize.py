"""Name normalisation of catalog entries: "Roundup PowerMAX® " and "roundup  powermax" are one product."""

import re
import unicodedata


def normalize_name(name: str | None) -> str:
    """Lower-case (casefold), accents and punctuation dropped, whitespace collapsed: the key under
    which a core user's products and varieties are one record, and what `normalizedName` shows."""
    text = unicodedata.normalize("NFKD", name or "")
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


CROP_MAX = 100  # the length of VarietyFile.crop


def crop_name(crop: str | None) -> str:
    """A variety's crop as stored and as the `crops` filter compares it: lower-case, spacing collapsed, cut to
    CROP_MAX characters (so a longer name still finds what it was stored as)."""
    return " ".join((crop or "").split()).lower()[:CROP_MAX].rstrip()  # a cut may end on a space
