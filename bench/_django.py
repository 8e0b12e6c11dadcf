"""Shared set-up for benchmarks: Django configured, and a scratch database created and dropped."""

import contextlib
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")


def setup() -> None:
    import django

    django.setup()


@contextlib.contextmanager
def scratch_database():
    """A fresh, migrated database (`test_<name>`) for the benchmark, dropped afterwards."""
    setup()
    from django.db import connection

    name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        yield name
    finally:
        from platform_site.api.owner_cache import owner_cache_stop

        owner_cache_stop()  # (its listening connection would keep the database from being dropped)
        connection.creation.destroy_test_db(name, verbosity=0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
