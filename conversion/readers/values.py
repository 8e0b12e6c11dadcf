"""Values as files hand them over: the one rule for text and numbers that leave a reader.

Text: NUL and the other C0 control characters (tab, line feed and carriage return excepted) and lone surrogates
("\\ud800", which no UTF-8 encoder writes) are removed. PostgreSQL's text and JSONB refuse NUL, and a surrogate
fails any encoding, so a name holding one would fail the whole data set. Numbers: values that are not finite
(NaN, infinities, `1e999`) are missing values; JSON, and so every summary, has no such numbers.

The text rule is `platform_site.text.storable`, the one rule for text from outside. `Reader.read` applies
`table_values_clean` to every table a reader returns, and the conversion services clean every failure message with
`storable` before storing it (a reason may quote a file). Readers use `text_value` where a file gives a value that
should be text (a name in JSON metadata may be a number, an object...).
"""

from __future__ import annotations

import math

from platform_site.text import storable


def text_value(value) -> str | None:
    """A value a file gives where text is expected, as text: a string cleaned and stripped; a finite number as its
    digits (`5`, `7.0` -> "7", `2.5`); None for an empty string and for anything else (booleans, objects, lists,
    NaN): such a value names nothing."""
    if isinstance(value, str):
        return storable(value).strip() or None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer():
            value = int(value)
    return str(value)
