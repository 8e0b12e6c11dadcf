"""Name normalisation of catalog entries: "Roundup PowerMAX® " and "roundup  powermax" are one product."""

import re
import unicodedata


def normalize_name(name: str | None) -> str:
    """Lower-case (casefold), accents and punctuation dropped, whitespace collapsed: the key under
    which a core user's products and varieties are one record, and what `normalizedName` shows."""
    text = unicodedata.normalize("NFKD", name or "")
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())
