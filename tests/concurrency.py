"""Run requests at the same moment, each on its own thread and database connection (PostgreSQL races)."""

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection


def needs_postgresql() -> None:
    """Skip on SQLite: it serialises writers, so there is no race to test."""
    if connection.vendor == "sqlite":
        pytest.skip("SQLite serialises writers; the race needs PostgreSQL")


def request_later(make_client, owner, method: str, url: str, body: dict | None = None) -> Callable[[], object]:
    """A JSON request of `owner` (the `make_client` fixture makes its client), to send from `run_together` or
    `run_meanwhile`. A server error is answered as the 500 it is: Django's test client re-raises the exception of
    any request in the process (it listens to a global signal), so with requests on two threads it would be raised
    by the one that did not fail as well."""

    def request():
        client = make_client(owner)
        client.raise_request_exception = False
        return getattr(client, method)(url, body, format="json")

    return request


def run_together(*calls: Callable[[], object]) -> list:
    """Call each of `calls` on its own thread, all released at once, and return their results in order. Each
    thread closes its database connection when done; the first exception raised by a call is raised here."""
    results: list = [None] * len(calls)
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(calls))

    def run(index: int, call: Callable[[], object]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except BaseException as error:  # noqa: BLE001 (handed to the test's thread below)
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _lock_waiters() -> int:
    """How many other sessions of this database wait for a lock (read afresh: inside a transaction PostgreSQL
    answers its first reading of the statistics again)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def run_meanwhile(call: Callable[[], object], *, grace: float = 10.0) -> Callable[[], object]:
    """Start `call` on its own thread (and database connection) from inside a transaction of the caller, and wait
    until it has finished or is waiting for a lock (PostgreSQL: seen in `pg_stat_activity`), at most `grace`
    seconds. Returns a function that waits for the call and returns its result (or raises its exception): an exact
    interleaving, where `run_together` leaves the order to chance. (A fixed pause let a slow machine commit the
    caller's transaction before the call had reached the database: the race did not happen, and a test of it
    passed on code without the fix.)"""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as error:  # noqa: BLE001 (handed to the caller's thread below)
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + grace
    while thread.is_alive() and time.monotonic() < deadline:
        if connection.vendor == "postgresql" and _lock_waiters():
            break
        thread.join(timeout=0.02)

    def result() -> object:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]

    return result
