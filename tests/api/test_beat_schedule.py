"""Beat's schedule, as the configured scheduler keeps it in its file: every sweep runs when beat first starts (and
after a crash left the file unreadable); one that has run waits its interval across a restart."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery.utils.imports import symbol_by_name
from django.conf import settings

from platform_site.celery import app

pytestmark = pytest.mark.embedded


def _beat_scheduler(schedule_file: Path):
    """The scheduler beat runs (CELERY_BEAT_SCHEDULER), on `schedule_file`, set up as beat sets it up."""
    return symbol_by_name(app.conf.beat_scheduler)(app=app, schedule_filename=str(schedule_file), lazy=False)


def _due(scheduler) -> set[str]:
    return {name for name, entry in scheduler.schedule.items() if entry.is_due().is_due}


def _run_every_entry(scheduler) -> None:
    """What beat does when it sends each due entry: its last run is now."""
    for name in list(scheduler.schedule):
        scheduler.schedule[name] = scheduler.reserve(scheduler.schedule[name])


def test_every_sweep_is_due_when_beat_first_starts(tmp_path):
    """The hourly ones too: they waited an hour of uptime."""
    scheduler = _beat_scheduler(tmp_path / "celerybeat-schedule")
    try:
        assert _due(scheduler) == set(settings.CELERY_BEAT_SCHEDULE)
        assert {"conversion-storage-sweep", "magiclinks-sweep"} <= _due(scheduler)
    finally:
        scheduler.close()


def test_a_sweep_that_has_run_waits_its_interval_across_a_restart(tmp_path):
    schedule_file = tmp_path / "celerybeat-schedule"
    scheduler = _beat_scheduler(schedule_file)
    _run_every_entry(scheduler)
    scheduler.close()  # (written to its file, as beat does when it stops)

    restarted = _beat_scheduler(schedule_file)
    try:
        assert _due(restarted) == set()
        assert restarted.schedule["conversion-storage-sweep"].total_run_count == 1
    finally:
        restarted.close()


def test_a_schedule_file_left_corrupted_by_a_crash_runs_every_sweep_at_once(tmp_path):
    """A `kill -9` while beat wrote its file: Celery removes the file and starts afresh, every entry's interval from
    then on."""
    schedule_file = tmp_path / "celerybeat-schedule"
    scheduler = _beat_scheduler(schedule_file)
    _run_every_entry(scheduler)
    scheduler.close()
    written = [path for path in tmp_path.iterdir() if path.name.startswith(schedule_file.name)]
    assert written
    for path in written:
        path.write_bytes(b"\x00garbage of a write cut short" * 100)

    restarted = _beat_scheduler(schedule_file)
    try:
        assert _due(restarted) == set(settings.CELERY_BEAT_SCHEDULE)
    finally:
        restarted.close()


# Beat sends every due sweep, as its tick does, and dies without closing its schedule (`kill -9`): nothing is sent
# to any broker (a send records the task's name only).
BEAT_KILLED = """
import os, sys, json
import django
django.setup()
from celery.app.task import Task
from celery.utils.imports import symbol_by_name
from platform_site.celery import app
sent = []
Task.apply_async = lambda self, *args, **kwargs: sent.append(self.name)
app.send_task = lambda name, *args, **kwargs: sent.append(name)
scheduler = symbol_by_name(app.conf.beat_scheduler)(app=app, schedule_filename=sys.argv[1], lazy=False)
for name in list(scheduler.schedule):
    entry = scheduler.schedule[name]
    if entry.is_due().is_due:
        scheduler.reserve(entry)
        scheduler.apply_entry(entry)
print(json.dumps(sent), flush=True)
os._exit(0)
"""


def test_a_beat_killed_after_sending_the_sweeps_keeps_their_rhythm(tmp_path):
    """Beat wrote its file every 3 minutes (Celery's `sync_every`) and after its first send: killed within them, it
    left the sweeps it had sent since as never run, and its next start sent them all again (a production try-out).
    Each send is written at once (`CELERY_BEAT_SYNC_EVERY`)."""
    schedule_file = tmp_path / "celerybeat-schedule"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "platform_site.settings"}
    done = subprocess.run(
        [sys.executable, "-c", BEAT_KILLED, str(schedule_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(settings.BASE_DIR),
    )
    assert len(json.loads(done.stdout.splitlines()[-1])) == len(settings.CELERY_BEAT_SCHEDULE)

    restarted = _beat_scheduler(schedule_file)
    try:
        assert _due(restarted) == set()
    finally:
        restarted.close()
