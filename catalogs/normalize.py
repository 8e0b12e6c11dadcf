"""Name normalisation of catalog entries: "Roundup PowerMAX® " and "roundup  powermax" are one product."""

import unicodedata


def _is_latin_or_greek(char: str) -> bool:
    return unicodedata.name(char, "").startswith(("LATIN ", "GREEK "))


def _folded_marks(text: str) -> str:
    """`text` (NFKD) without the combining marks of Latin and Greek letters (accents: "é" is "e", "ά" is "α"), nor
    marks that follow no letter; the marks of other scripts' letters stay: they make another letter or syllable ("ガ"
    is not "カ", "कीट" is not "किट", "й" is not "и")."""
    kept, base = [], ""
    for char in text:
        if not unicodedata.category(char).startswith("M"):
            base = char
        elif not base.isalpha() or _is_latin_or_greek(base):
            continue
        kept.append(char)
    return "".join(kept)


def normalize_name(name: str | None) -> str:
    """Lower-case (casefold), accents of Latin and Greek letters and punctuation dropped, whitespace collapsed, other
    scripts' marks kept (composed again, NFC): the key under which a core user's products and varieties are one
    record, and what `normalizedName` shows."""
    text = unicodedata.normalize("NFC", _folded_marks(unicodedata.normalize("NFKD", name or "")).casefold())
    # A word is letters, digits and their marks (a Devanagari vowel sign is no `\w`: it split the word).
    return " ".join("".join(c if _in_word(c) else " " for c in text).split())


def _in_word(char: str) -> bool:
    return char.isalnum() or unicodedata.category(char).startswith("M")


CROP_MAX = 100  # the length of VarietyFile.crop


def crop_name(crop: str | None) -> str:
    """A variety's crop as stored and as the `crops` filter compares it: lower-case, spacing collapsed, cut to
    CROP_MAX characters (so a longer name still finds what it was stored as)."""
    return " ".join((crop or "").split()).lower()[:CROP_MAX].rstrip()  # a cut may end on a space
