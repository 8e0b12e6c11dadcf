"""Quick tasks per second through `make run`'s in-process Celery worker (the in-memory broker, the conversions queue
of 2 threads): data set conversions of data sets that no longer exist (what a deleted user's upload leaves queued),
each a no-op of about a millisecond, so the figure is the worker's own pace. Embedded SpatiaLite in a scratch folder,
whatever DATABASE_URL says."""

import os
import sys
import tempfile
import threading
import time

TASKS = int(os.environ.get("BENCH_TASKS", 400))


def main() -> None:
    os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix="bench-embedded-")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, os.getcwd())
    import django

    django.setup()
    from celery import signals
    from django.core.management import call_command

    from conversion.tasks import dataset_convert
    from platform_site.accounts.management.commands.serve import _worker_start
    from platform_site.celery import app

    call_command("migrate", verbosity=0)
    finished = threading.Semaphore(0)
    signals.task_postrun.connect(lambda **kwargs: finished.release(), weak=False)
    worker = _worker_start(app, "celery", 2)
    started = time.perf_counter()
    for n in range(TASKS):
        dataset_convert.delay(10_000_000 + n)
    for _ in range(TASKS):
        if not finished.acquire(timeout=600):
            sys.exit("the embedded worker stopped taking tasks")
    elapsed = time.perf_counter() - started
    print(f"{TASKS} quick tasks through the embedded worker (2 threads, prefetch multiplier "
          f"{worker.prefetch_multiplier}): {elapsed:.2f} s, {TASKS / elapsed:.0f} tasks/s")  # fmt: skip
    os._exit(0)  # (the worker threads are daemons of a loop that does not stop on its own)


if __name__ == "__main__":
    main()
