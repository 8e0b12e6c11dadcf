"""Shared set-up for benchmarks: Django configured, a scratch database created and dropped, and a measure run on
both databases."""

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def on_both_databases(measure: Callable[[str], None]) -> None:
    """Run the calling script's `measure(label)` on PostGIS (when DATABASE_URL names it) and on the embedded
    SpatiaLite of `make run`, each in a process of its own (the database is chosen as Django starts): the script runs
    itself again with the label as its argument. On SpatiaLite the scratch database is a file, as `make run` has (the
    test database would be in memory)."""
    if len(sys.argv) > 1:
        setup()
        from django.db import connection

        if connection.vendor == "sqlite":
            connection.settings_dict["TEST"]["NAME"] = str(Path(os.environ["VAR_DIR"]) / "bench.sqlite3")
        measure(sys.argv[1])
        return
    script = str(Path(sys.argv[0]).resolve())
    if os.environ.get("DATABASE_URL", "").startswith("postgis"):
        subprocess.run([sys.executable, script, "PostGIS"], check=True)
    with tempfile.TemporaryDirectory() as var_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
        subprocess.run([sys.executable, script, "SpatiaLite"], check=True, env=env | {"VAR_DIR": var_dir})


def own_status_kib(key: str) -> int | None:
    """A figure of this process's /proc/self/status, in kB as Linux writes it (`VmRSS`, `VmHWM`: unlike ru_maxrss,
    the high-water mark is not the parent's inherited at fork); None where there is none."""
    status = Path("/proc/self/status")
    lines = status.read_text().splitlines() if status.exists() else []
    return next((int(line.split()[1]) for line in lines if line.startswith(f"{key}:")), None)


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    """The median wall time of `repeat` calls of `run`."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
