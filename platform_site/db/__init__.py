"""Database helpers every app may use."""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import psycopg
from django.db import Error, connection

# PostgreSQL's SQLSTATE for a deadlock it broke by making this transaction give way.
DEADLOCK = "40P01"


def sqlstate(exc: Error) -> str | None:
    """PostgreSQL's SQLSTATE of a database error Django raised (that of psycopg's error it wraps); None for
    another database's error."""
    return getattr(exc.__cause__, "sqlstate", None)


# PostgreSQL refusing connections for now: too many clients, shutting down, crashed or starting up.
UNAVAILABLE_STATES = frozenset({"53300", "57P01", "57P02", "57P03"})


def database_unavailable(exc: Error) -> bool:
    """Whether `exc` says PostgreSQL cannot be reached now (stopped, restarting, unreachable, out of connections),
    not that the request or the code is at fault: a connection exception (SQLSTATE class 08), one of
    `UNAVAILABLE_STATES`, or psycopg's own connection failure, which carries no SQLSTATE ("connection refused",
    "server closed the connection unexpectedly")."""
    cause = exc.__cause__
    if not isinstance(cause, psycopg.OperationalError):
        return False
    state = cause.sqlstate
    return state is None or state in UNAVAILABLE_STATES or state.startswith("08")


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


def transaction_lock(*key: int, shared: bool = False) -> None:
    """A PostgreSQL transaction-level advisory lock on `key` (one bigint, or two int4: separate key spaces), waited
    for and held until the transaction ends (or the savepoint it was taken after is rolled back to). Only code that
    takes it waits for it: no row is locked. `shared`: holders of the shared lock do not wait for each other, only
    for (and the exclusive one for them) the exclusive holder; a shared request arriving while the exclusive one
    waits queues behind it (PostgreSQL's lock queue, where a row's shared lockers went ahead of a waiting FOR
    UPDATE). Other databases (SQLite serialises writers): nothing."""
    if connection.vendor != "postgresql":
        return
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}({', '.join(['%s'] * len(key))})", list(key))


def uuid_lock_key(value) -> int:
    """An int4 advisory lock key for a UUID (its first four bytes): two ids sharing one only wait for each other."""
    return int.from_bytes(uuid.UUID(str(value)).bytes[:4], "big", signed=True)


def row_locked(model, pk, *, no_key: bool = False, skip_locked: bool = False) -> bool:
    """Lock `model`'s row `pk` until the transaction ends (FOR UPDATE; FOR NO KEY UPDATE with `no_key`, which lets
    rows that reference it be written meanwhile) and say whether it is there. With `skip_locked`, False also when
    another transaction holds a lock it would wait for. Other databases (SQLite serialises writers): whether it is
    there."""
    rows = model.objects.select_for_update(no_key=no_key, skip_locked=skip_locked).filter(pk=pk).values_list("pk")
    return bool(list(rows))


def rows_kept(model, pks) -> set:
    """Those of `pks` whose `model` rows exist, kept from deletion until the transaction ends: `FOR KEY SHARE`, the
    lock PostgreSQL's foreign key check takes, taken before writing rows that reference them. Django's foreign keys
    are checked at commit, so a row deleted meanwhile failed the commit of the write that referenced it (or the
    deletion's, had the write committed first): a 500 on one side. Kept, a deletion that locks its row first waits
    for us, or we for it and then find the row gone. Writes that merely reference a row do not wait for each other.
    Must be called inside a transaction. Other databases (SQLite serialises writers): the rows that exist."""
    pks = list(pks)
    if not pks:
        return set()
    if connection.vendor != "postgresql":
        return set(model.objects.filter(pk__in=pks).values_list("pk", flat=True))
    if not connection.in_atomic_block:
        raise RuntimeError("rows_kept needs a transaction: the lock ends with it")
    meta = model._meta
    table, column = connection.ops.quote_name(meta.db_table), connection.ops.quote_name(meta.pk.column)
    values = [meta.pk.get_db_prep_value(pk, connection) for pk in pks]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} WHERE {column} = ANY(%s) ORDER BY 1 FOR KEY SHARE", [values])
        return {meta.pk.to_python(row[0]) for row in cursor.fetchall()}
