"""Password guessing at login (`POST /api/authenticate`, the admin's login): failed attempts are counted per user
name and client address, and per client address alone, in windows of `LOGIN_FAILURE_WINDOW_SECONDS`. Past
`LOGIN_FAILURES_PER_USER_AND_ADDRESS` (or `LOGIN_FAILURES_PER_ADDRESS`) failures, every attempt from there is
refused until the window ends, a right password too: otherwise guessing would go on, only slower. The owner can
still log in from another address, and a guesser cannot lock it out everywhere. A successful login clears its user
name's count at its address. 0 turns a limit off.

An attempt is counted as failed before its password is checked, and taken back when the password was right:
checked first and counted after the (slow) password check, attempts sent at the same moment all passed the check,
and 60 guesses at once had 25 answered instead of 10.

The address is the connection's (`REMOTE_ADDR`): behind a proxy, every client has the proxy's, so there keep the
per-address limit off or high."""

import hashlib
import math
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .models import LoginFailure


def _user_key(username: str, address: str) -> str:
    name = " ".join(username.split()).casefold()  # the login trims; a guesser may vary the case
    return hashlib.sha256(f"user\x00{name}\x00{address}".encode()).hexdigest()


def _address_key(address: str) -> str:
    return hashlib.sha256(f"address\x00{address}".encode()).hexdigest()


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    """(digest, limit) of each count a login attempt adds to: its user name at its address, its address."""
    counted = [
        (_user_key(username, address), settings.LOGIN_FAILURES_PER_USER_AND_ADDRESS),
        (_address_key(address), settings.LOGIN_FAILURES_PER_ADDRESS),
    ]
    return [(key, limit) for key, limit in counted if limit > 0]


def _window() -> timedelta:
    return timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_SECONDS)


def login_attempt(username: str, address: str) -> int | None:
    """Count a login attempt of `username` from `address` as failed, before its password is checked; the seconds
    until one is taken again when this one is refused (one of its counts is past its limit with it), else None.
    Windows that ended are forgotten."""
    now, window = timezone.now(), _window()
    waits = [
        math.ceil((failure.window_start + window - now).total_seconds())
        for key, limit in _keys(username, address)
        if (failure := _count(key, now, window)).count > limit
    ]
    LoginFailure.objects.filter(window_start__lte=now - window).delete()
    return max(waits, default=None)


def _count(key: str, now: datetime, window: timedelta) -> LoginFailure:
    """One more failure of `key` (a new window where the last one ended): its count now. Counted under the row's
    lock, so concurrent attempts each see the others'."""
    for attempt in range(2):
        try:
            with transaction.atomic():
                failure, created = LoginFailure.objects.select_for_update().get_or_create(
                    key=key, defaults={"window_start": now, "count": 1}
                )
                if created:
                    return failure
                if failure.window_start <= now - window:
                    failure.window_start, failure.count = now, 1
                else:
                    failure.count += 1
                failure.save(update_fields=["window_start", "count"])
                return failure
        except IntegrityError:  # another process counted the first failure at the same moment: count on it
            if attempt:
                raise


def login_succeeded(username: str, address: str) -> None:
    """The attempt (`login_attempt`) had the right password: its user name's failures at this address no longer
    count, and the address's count takes the attempt back (its earlier failures still count)."""
    LoginFailure.objects.filter(key=_user_key(username, address)).delete()
    LoginFailure.objects.filter(key=_address_key(address), count__gt=0).update(count=F("count") - 1)
