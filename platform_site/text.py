"""Text that must fit a column, and text from outside (files, remote servers) made storable."""

import hashlib
import re

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` without what a database cannot store: NUL (PostgreSQL refuses it in text and JSON) and lone
    surrogates (no UTF-8 for them; JSON lets a remote server send `\\ud800`)."""
    return _UNSTORABLE.sub("", text)


def fit(text: str, length: int) -> str:
    """`text`, or when longer than `length`, its start and a digest of the whole: two long texts that differ only
    past the cut stay two texts (a plain cut would make them one key, one name)."""
    if len(text) <= length:
        return text
    return f"{text[: length - 17]}~{hashlib.sha256(text.encode()).hexdigest()[:16]}"
