"""Run requests at the same moment, each on its own thread and database connection (PostgreSQL races)."""

import threading
from collections.abc import Callable

from django.db import connection


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
