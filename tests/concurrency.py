"""Run requests at the same moment, each on its own thread and database connection (PostgreSQL races)."""

import threading
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


def run_meanwhile(call: Callable[[], object], *, grace: float = 1.0) -> Callable[[], object]:
    """Start `call` on its own thread (and database connection) from inside a transaction of the caller, and give
    it `grace` seconds to finish or to block on a lock the caller holds. Returns a function that waits for the
    call and returns its result (or raises its exception): an exact interleaving, where `run_together` leaves
    the order to chance."""
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
    thread.join(timeout=grace)

    def result() -> object:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]

    return result
