"""Beat's schedule, as the configured scheduler keeps it in its file: every sweep runs when beat first starts (and
after a crash left the file unreadable); one that has run waits its interval across a restart."""

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
