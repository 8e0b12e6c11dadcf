"""Text that must fit a column, and text from outside (files, remote servers) made storable."""

import hashlib
import re

# A number written in plain ASCII decimals (`12.5`, `-3`, `1e3`; not `1_000`, `nan`, other scripts' digits, which
# Python's own `float()` also reads): query parameters, and numbers that files write as text.
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# A whole number so written (`12`, `-3`; not `1.5`, `1e3`, `1_0`, `0x10`, other scripts' digits, which `int()` reads).
PLAIN_INTEGER = re.compile(r"[+-]?[0-9]+")

# The date of an ISO 8601 time: calendar, ordinal or week date, extended or basic (`2024-05-01`, `2024-122`,
# `2024-W18-3`, `20240501`), read up to what follows it.
_ISO_DATE_PART = re.compile(r"[0-9W-]+")


def iso_time_text(text: str) -> str | None:
    """`text` ready for an ISO 8601 parser (Python's `fromisoformat`, Django's `parse_datetime`), or None when it is
    not one: stripped, its `t` and `z` upper case (RFC 3339 allows either case); None when it holds other scripts'
    digits (`٢020`, which those parsers read as 2020) or anything else outside ASCII, or joins date and time with
    another character than `T` or a space (`fromisoformat` takes any)."""
    text = text.strip().upper()
    if not text.isascii():
        return None
    date = _ISO_DATE_PART.match(text)
    if date is not None and date.end() < len(text) and text[date.end()] not in "T ":
        return None
    return text


# The control characters no text holds, as a regular expression's ranges: the C0 controls but NUL, tab, LF and CR,
# DEL and the C1 controls. A client may send none (`validators.CONTROL_CHARACTERS`); text from outside loses them.
CONTROL_CHARACTER_RANGES = "\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# Those, NUL, and the surrogate code points (in a Python str always lone: a valid pair is one character).
_UNSTORABLE = re.compile(f"[\x00{CONTROL_CHARACTER_RANGES}\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` without what no database column should store: NUL (PostgreSQL refuses it in text and JSONB), the
    other C0 controls but tab, LF and CR, DEL and the C1 controls (the control characters a client may not send,
    `validators.CONTROL_CHARACTERS`: a name from a file held what no client could have written), and lone
    surrogates (no encoder writes them; JSON lets a remote server send `\\ud800`). The one rule for text from
    outside: machine files, webhook receivers, OAuth providers."""
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


# How much of a value a client sent an error message repeats (`clip`, or a format's precision): the start says
# which value it was; a value of megabytes was echoed whole.
ECHO_MAX = 80


def clip(text: str, length: int) -> str:
    """`text`, or when longer than `length`, its start and its end around an ellipsis: for a message that may echo
    what a client sent (its start says what, its end what is wrong with it)."""
    if len(text) <= length:
        return text
    head = (length - 1) * 2 // 3
    return f"{text[:head]}…{text[len(text) - (length - 1 - head) :]}"


BINARY_UNITS = ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB"))


def binary_size(size: int) -> str:
    """`size` bytes for people, in binary units to one decimal, rounded down so that a limit is never overstated:
    `3 GiB`, `1.9 MiB`, `10 bytes`."""
    for power, unit in BINARY_UNITS:
        if size >= 1024**power:
            whole, tenth = divmod(size * 10 // 1024**power, 10)
            return f"{whole} {unit}" if tenth == 0 else f"{whole}.{tenth} {unit}"
    return f"{size} byte" if size == 1 else f"{size} bytes"


def named_first(names: list[str], most: int) -> str:
    """The first `most` of `names`, joined with commas, and how many more there are: `a, b and 3 more`."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
