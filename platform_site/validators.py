"""Rules on text that the API's serializers and the admin's forms both apply, as Django validators (DRF runs those
too): one piece of code, so that the admin cannot store what the API refuses to take, nor the reverse."""

import json
import re

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator, RegexValidator

from platform_site.api import wording
from platform_site.text import CONTROL_CHARACTER_RANGES

# C0 controls but tab, LF and CR (NUL has its own message, DRF's and Django's forms' "Null characters are not
# allowed."), DEL and the C1 controls: no name, address or label holds one, and a BEL or an escape stored in a name
# reached every client and terminal.
CONTROL_CHARACTERS = re.compile(f"[{CONTROL_CHARACTER_RANGES}]")
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


HTTP_URL_MESSAGE = "Only http and https URLs are allowed."


def validate_http_url(value: str) -> None:
    """Refuses a URL of another scheme than http and https (ftp:, javascript:): the URLs a browser is sent to (a
    provider's authorization page, a logo) and those we call."""
    if not value.lower().startswith(("http://", "https://")):
        raise ValidationError(HTTP_URL_MESSAGE, code="http_url")


# A scope token (RFC 6749 section 3.3): printable ASCII but space, `"` and `\\`. "files offline_access" was taken as one
# scope, asked for as two, and reported as not granted at every connection.
SCOPE_TOKEN = re.compile(r"\A[\x21\x23-\x5B\x5D-\x7E]+\Z")
SCOPE_MAX_LENGTH = 255
validate_scope_token = RegexValidator(SCOPE_TOKEN, "A scope is one token: printable ASCII, no spaces or quotes.")


def validate_scopes(value) -> None:
    """Refuses anything but a list of scope tokens: a provider application's scopes are joined with spaces into the
    authorization request, and listed as they are by the API (the API takes them through a list of `StrictCharField`s
    of `SCOPE_MAX_LENGTH` with `validate_scope_token`; the admin's form through this)."""
    if not isinstance(value, list):
        raise ValidationError('A list of scopes is required, e.g. ["files", "offline_access"].', code="not_a_list")
    for scope in value:
        if not isinstance(scope, str):
            raise ValidationError(f"A scope is a string: {json.dumps(scope)} is not.", code="not_a_string")
        if len(scope) > SCOPE_MAX_LENGTH:
            raise ValidationError(f"A scope has at most {SCOPE_MAX_LENGTH} characters.", code="max_length")
        validate_scope_token(scope)


EMAIL_MAX = 254  # (RFC 5321's longest path)


def validate_email_address(value: str) -> None:
    """Refuses what is not an email address of at most `EMAIL_MAX` characters (a core user's `email`)."""
    if len(value) > EMAIL_MAX:
        raise ValidationError(wording.length("at most", EMAIL_MAX, "character"), code="max_length")
    EmailValidator()(value)
