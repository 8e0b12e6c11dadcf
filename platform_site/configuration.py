"""Settings read from the environment, each checked as it is read (README "Configuration").

A value the platform cannot work with stops the process as it starts (gunicorn, a Celery worker, beat, any
`manage.py` command) with ImproperlyConfigured naming the variable, what it holds and what it takes. Unchecked, such
values started cleanly and failed later, some without a word: `WEBHOOK_MAX_IN_FLIGHT_PER_OWNER=-1` held every
delivery back for ever, `CELERY_WORKER_PREFETCH_MULTIPLIER=-1` made a worker that answered pings and took no task,
`WEBHOOK_TIMEOUT_SECONDS=-1` failed each delivery outside its failed-calls record, `AUTH_CACHE_SECONDS=30s` was read
as 30 and `abc` as "could not convert string to float: ''".

A variable set to the empty string counts as unset (its default), as `SECRET_KEY=` and `CELERY_BROKER_URL=`
always did; a list set so is empty (`wholes`: `WEBHOOK_RETRY_SCHEDULE=`, no retries, as it always was). Numbers are
written in ASCII decimal (`1e3` and `2.5` are numbers of seconds; a whole number has digits only); flags are
true/false, yes/no, on/off or 1/0, in any case.
"""

from __future__ import annotations

import math
import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from platform_site.text import PLAIN_INTEGER, PLAIN_NUMBER

# The most digits of a whole number taken (int() refuses more than 4,300 with a ValueError of its own).
WHOLE_DIGITS_MAX = 30
FLAGS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# The longest duration a setting takes (seconds, and days): longer ones overflowed the dates they were added to.
TEN_YEARS_SECONDS = 3650 * 86400
TEN_YEARS_DAYS = 3650
# HS256 tokens are signed with SECRET_KEY: RFC 7518 3.2 asks for a key of at least 256 bits.
SECRET_KEY_MIN_LENGTH = 32


def raw(name: str) -> str | None:
    """The variable's value without surrounding whitespace; None when it is unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def without_credentials(value: str) -> str:
    """`value` with whatever comes before its last `@` hidden but a scheme (`redis:***@host:6379/0`): a URL's user
    and password, however the URL is mistyped (one slash, a password holding `/` or `@`), are never in a message."""
    at = value.rfind("@")
    if at < 0:
        return value
    colon = value.find(":")
    return f"{value[: colon + 1] if 0 <= colon < at else ''}***{value[at:]}"


def refused(name: str, value: str, takes: str) -> ImproperlyConfigured:
    shown = without_credentials(value)
    shown = shown if len(shown) <= 100 else shown[:100] + "..."
    return ImproperlyConfigured(f'{name}={shown!r} is refused: {name} takes {takes} (README "Configuration").')


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _bounds(minimum: float, maximum: float | None, above: bool) -> str:
    low = f"above {_shown(minimum)}" if above else f"{_shown(minimum)} or more"
    return low if maximum is None else f"{low}, at most {_shown(maximum)}"


def _is_whole(text: str) -> bool:
    """Whether `text` is a whole number in ASCII digits (`PLAIN_INTEGER`) of at most WHOLE_DIGITS_MAX digits."""
    return PLAIN_INTEGER.fullmatch(text) is not None and len(text.lstrip("+-")) <= WHOLE_DIGITS_MAX


def whole(name: str, default: int, *, minimum: int, maximum: int | None = None) -> int:
    """A whole number from `minimum` (to `maximum`)."""
    value = raw(name)
    if value is None:
        return default
    takes = f"a whole number, {_bounds(minimum, maximum, False)}"
    if not _is_whole(value):
        raise refused(name, value, takes)
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        raise refused(name, value, takes)
    return number


def number(name: str, default: float, *, minimum: float, above: bool = False, maximum: float | None = None) -> float:
    """A finite number from `minimum` (over it, with `above`), up to `maximum`."""
    value = raw(name)
    if value is None:
        return default
    takes = f"a number, {_bounds(minimum, maximum, above)}"
    if not PLAIN_NUMBER.fullmatch(value):  # (Python's float() also reads `1_0`, `nan`, and other scripts' digits)
        raise refused(name, value, takes)
    result = float(value)
    if (
        not math.isfinite(result)
        or result < minimum
        or (above and result == minimum)
        or (maximum is not None and result > maximum)
    ):
        raise refused(name, value, takes)
    return result


def wholes(name: str, default: list[int], *, minimum: int, maximum: int) -> list[int]:
    """Comma-separated whole numbers, each from `minimum` to `maximum`; empty items are none (`60,1800,`). Set to
    the empty string, none at all (`WEBHOOK_RETRY_SCHEDULE=`: no retries), as it always was; unset, `default`."""
    if name not in os.environ:
        return default
    value = os.environ[name].strip()
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not all(_is_whole(part) and minimum <= int(part) <= maximum for part in parts):
        raise refused(name, value, f"comma-separated whole numbers, each {minimum} or more, at most {maximum}")
    return [int(part) for part in parts]


def names(name: str, default: list[str]) -> list[str]:
    """Comma-separated names (hosts, origins); empty items are none; unset or empty, `default`."""
    value = raw(name)
    if value is None:
        return default
    return [part.strip() for part in value.split(",") if part.strip()] or default


def flag(name: str, default: bool) -> bool:
    value = raw(name)
    if value is None:
        return default
    if value.lower() not in FLAGS:
        raise refused(name, value, "true or false (yes/no, on/off, 1/0)")
    return FLAGS[value.lower()]


def log_level(name: str, default: str) -> str:
    value = raw(name)
    if value is None:
        return default
    if value.upper() not in LOG_LEVELS:
        raise refused(name, value, f"one of {', '.join(LOG_LEVELS)}")
    return value.upper()


CREDENTIALS_ENCODED = ", its user and password percent-encoded where they hold `/`, `?` or `#` (`%2F`, `%3F`, `%23`)"


def url(name: str, default: str, *, schemes: tuple[str, ...], host: bool = True) -> str:
    """An absolute URL of one of `schemes` (with a host unless `host` is false)."""
    value = raw(name)
    if value is None:
        return default
    takes = f"a URL of {' or '.join(f'{scheme}://' for scheme in schemes)}" + (" with a host" if host else "")
    credentials = "@" in value.partition("://")[2]
    if credentials:
        # A user or password is read up to the first `/`, `?` or `#`: one holding such a character (`ab/c`) made the
        # rest of the URL its path, and the refusal said only what the variable takes.
        takes += CREDENTIALS_ENCODED
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (a port that is no number raises)
    except ValueError:
        raise refused(name, value, takes) from None
    if "://" not in value or parts.scheme.lower() not in schemes or (host and not parts.hostname):
        raise refused(name, value, takes)
    if credentials and parts.netloc and "@" not in parts.netloc:
        # `postgis://user:12/ab@db/platform` read as host `user`, port 12, database `ab@db/platform`
        raise refused(name, value, takes)
    return value


def secret_key(name: str) -> str | None:
    """A SECRET_KEY set in the environment, of at least SECRET_KEY_MIN_LENGTH characters; None when unset."""
    value = os.environ.get(name) or None  # (a key is taken as it is, whitespace and all)
    if value is not None and len(value) < SECRET_KEY_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"{name} is refused: it has {len(value)} character{'' if len(value) == 1 else 's'}, and tokens are signed "
            f"with it: set one of at least {SECRET_KEY_MIN_LENGTH} random characters (for example "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(50))'`), or leave it unset to have one made "
            "and kept in VAR_DIR/secret-key "
            '(README "Configuration").'
        )
    return value


def fernet_keys(name: str) -> list[str]:
    """Comma-separated Fernet keys (32 bytes in URL-safe base64 each)."""
    value = raw(name)
    if value is None:
        return []
    from cryptography.fernet import Fernet

    keys = [key.strip() for key in value.split(",") if key.strip()]  # (a comma left at the end is no key)
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} is refused: its key {position} is no Fernet key (32 bytes in URL-safe base64; make one with "
                "`python3 -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`) "
                '(README "Configuration").'
            ) from None
    return keys


def importable(name: str, dotted: str) -> None:
    """Check that the class a setting names (`name`, holding `dotted`) can be imported; at the apps' start."""
    from django.utils.module_loading import import_string

    try:
        import_string(dotted)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"{name}={dotted!r} is refused: no class of that dotted path can be imported ({exc}) "
            '(README "Configuration").'
        ) from None
