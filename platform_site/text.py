"""Text that must fit a column, and text from outside (files, remote servers) made storable."""

import hashlib
import re

# A number written in plain ASCII decimals (`12.5`, `-3`, `1e3`; not `1_000`, `nan`, other scripts' digits, which
# Python's own `float()` also reads): query parameters, and numbers that files write as text.
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

# NUL and the other C0 controls but tab, LF and CR; the surrogate code points (in a Python str always lone: a valid
# pair is one character).
_UNSTORABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` without what no database column should store: NUL (PostgreSQL refuses it in text and JSONB), the
    other C0 controls but tab, LF and CR, and lone surrogates (no encoder writes them; JSON lets a remote server
    send `\\ud800`). The one rule for text from outside: machine files, webhook receivers, OAuth providers."""
    return _UNSTORABLE.sub("", text) if _UNSTORABLE.search(text) else text


def needs_storable(text: str) -> bool:
    """Whether `storable` would change `text`."""
    return _UNSTORABLE.search(text) is not None


def fit(text: str, length: int) -> str:
    """`text`, or when longer than `length`, its start and a digest of the whole: two long texts that differ only
    past the cut stay two texts (a plain cut would make them one key, one name)."""
    if len(text) <= length:
        return text
    return f"{text[: length - 17]}~{hashlib.sha256(text.encode()).hexdigest()[:16]}"
