"""A conversion that is still running when its core user is deleted: the task ends quietly and nothing it wrote
stays in storage once the storage sweep has passed; the sweep never touches the bytes of records that exist, nor
stray bytes younger than CONVERSION_STUCK_AFTER_SECONDS (their record may not be committed yet)."""

import os
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from conversion import outputs, tasks
from conversion.cleanup import stray_storage_sweep
from conversion.models import Batch, BatchDataset, File
from conversion.services import batch_open, dataset_convert
from platform_site.accounts.models import CoreUser

from .conftest import upload, zip_folder

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def _stored(*ids) -> list[Path]:
    media = Path(django_settings.MEDIA_ROOT)
    return [path for path in media.rglob("*") if path.is_file() and any(str(i) in path.as_posix() for i in ids)]


def _age(paths, seconds: float) -> None:
    then = time.time() - seconds
    for path in paths:
        os.utime(path, (then, then))


def _opened_batch(api_client, core_user, folder, monkeypatch) -> tuple[str, int]:
    """An uploaded and opened batch whose one data set has not been converted yet."""
    with monkeypatch.context() as patch:
        patch.setattr(tasks.batch_open, "delay", lambda *a: None)
        batch_id = upload(api_client, core_user.pk, zip_folder(folder, prefix="TASKDATA/")).json()["id"]
        patch.setattr(tasks.dataset_convert, "delay", lambda *a: None)
        batch_open(batch_id)
    (dataset_id,) = BatchDataset.objects.filter(batch_id=batch_id).values_list("pk", flat=True)
    return batch_id, dataset_id


def test_a_conversion_whose_user_is_deleted_midway_leaves_nothing_behind(
    api_client, core_user, valid_timelogs, settings, monkeypatch, caplog
):
    batch_id, dataset_id = _opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    produce, made = outputs.produce, []

    def produce_then_user_deleted(file, *args, **kwargs):
        made.append(file.pk)
        if len(made) == 2:  # the user goes (its cleanup runs at once), then the second file's outputs are written
            CoreUser.objects.filter(pk=core_user.pk).delete()
        return produce(file, *args, **kwargs)

    monkeypatch.setattr(outputs, "produce", produce_then_user_deleted)
    dataset_convert(dataset_id)  # ends without an error: there is nothing left to convert for

    assert not Batch.objects.filter(pk=batch_id).exists() and not File.objects.exists()
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelname == "ERROR"]
    stray = _stored(batch_id, *made)
    assert stray, "the second file's outputs were written after the deletion's own cleanup"
    assert stray_storage_sweep()["removed"] == 0, "too recent: left for now"
    _age(stray, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    assert stray_storage_sweep()["removed"] > 0
    assert _stored(batch_id, *made) == []


def test_the_storage_sweep_keeps_the_bytes_of_existing_records(api_client, core_user, jd_shapefiles, settings):
    data = (jd_shapefiles / "Export From MyJohnDeere - Application.zip").read_bytes()
    assert upload(api_client, core_user.pk, data).status_code == 201
    ids = [*Batch.objects.values_list("pk", flat=True), *File.objects.values_list("pk", flat=True)]
    kept = sorted(_stored(*ids))
    assert any(p.name == "points.npz" for p in kept) and any(p.parent.name == "batches" for p in kept)
    _age(kept, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    # A stray upload zip of a batch never recorded (its process died between storing and recording it).
    orphan = Path(django_settings.MEDIA_ROOT) / "batches" / "00000000-0000-4000-8000-000000000000.zip"
    orphan.write_bytes(b"PK\x05\x06" + bytes(18))
    _age([orphan], settings.CONVERSION_STUCK_AFTER_SECONDS + 60)

    assert stray_storage_sweep()["removed"] == 1
    assert sorted(_stored(*ids)) == kept and not orphan.exists()
    file_id = File.objects.values_list("pk", flat=True)[0]
    assert api_client.get(f"/services/operations/api/files/{file_id}/standardGeojson").status_code == 200


def test_beat_runs_the_storage_sweep_and_every_scheduled_task_exists():
    from platform_site.celery import app

    app.loader.import_default_modules()
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    assert schedule["conversion-storage-sweep"]["task"] == tasks.conversion_storage_sweep.name
    assert [entry["task"] for entry in schedule.values() if entry["task"] not in app.tasks] == []
