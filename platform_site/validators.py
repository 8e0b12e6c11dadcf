"""Rules on text that the API's serializers and the admin's forms both apply, as Django validators (DRF runs those
too): one piece of code, so that the admin cannot store what the API refuses to take, nor the reverse."""

import re

from django.core.exceptions import ValidationError

# C0 controls but tab, LF and CR (NUL has its own message, DRF's and Django's forms' "Null characters are not
# allowed."), DEL and the C1 controls: no name, address or label holds one, and a BEL or an escape stored in a name
# reached every client and terminal.
CONTROL_CHARACTERS = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
CONTROL_CHARACTERS_MESSAGE = "Control characters are not allowed (tab and line breaks are)."


def holds_control_characters(value) -> bool:
    """Whether `value`, a text or a list of texts, holds a control character but tab and line breaks."""
    if isinstance(value, str):
        return CONTROL_CHARACTERS.search(value) is not None
    return isinstance(value, list) and any(isinstance(item, str) and CONTROL_CHARACTERS.search(item) for item in value)


def validate_no_control_characters(value) -> None:
    """Refuses text holding control characters but tab and line breaks (docs/decisions.md)."""
    if holds_control_characters(value):
        raise ValidationError(CONTROL_CHARACTERS_MESSAGE, code="control_characters")
