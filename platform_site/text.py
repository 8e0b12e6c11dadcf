"""Text that must fit a column."""

import hashlib


def fit(text: str, length: int) -> str:
    """`text`, or when longer than `length`, its start and a digest of the whole: two long texts that differ only
    past the cut stay two texts (a plain cut would make them one key, one name)."""
    if len(text) <= length:
        return text
    return f"{text[: length - 17]}~{hashlib.sha256(text.encode()).hexdigest()[:16]}"
