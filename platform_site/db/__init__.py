"""Database helpers every app may use."""

from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.db import Error, connection


@contextmanager
def session_lock(*key: int, wait_seconds: float | None = None) -> Iterator[bool]:
    """A PostgreSQL session-level advisory lock on `key` (one bigint, or two int4: separate key spaces), held while
    the block runs. It belongs to the connection, not to a transaction: a worker that dies lets go of it at once,
    while a run that is alive keeps it across its transactions.

    Without `wait_seconds` it is taken only if free, and the block is told whether it was (another holder: False).
    With `wait_seconds` it is waited for up to that long (longer: `OperationalError`, lock_timeout) and the block
    always gets True. Other databases (SQLite serialises writers) hold nothing: True."""
    if connection.vendor != "postgresql":
        yield True
        return
    placeholders = ", ".join(["%s"] * len(key))
    with connection.cursor() as cursor:
        if wait_seconds is None:
            cursor.execute(f"SELECT pg_try_advisory_lock({placeholders})", list(key))
            held = cursor.fetchone()[0]
        else:
            try:
                cursor.execute(f"SET lock_timeout = '{int(wait_seconds * 1000)}ms'")
                cursor.execute(f"SELECT pg_advisory_lock({placeholders})", list(key))
            finally:
                with suppress(Error):
                    cursor.execute("RESET lock_timeout")
            held = True
    try:
        yield held
    finally:
        if held:
            with suppress(Error), connection.cursor() as cursor:  # a broken connection took the lock with it
                cursor.execute(f"SELECT pg_advisory_unlock({placeholders})", list(key))
