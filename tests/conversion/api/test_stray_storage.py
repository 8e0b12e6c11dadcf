"""A conversion that is still running when its core user is deleted: the task ends quietly and nothing it wrote
stays in storage once the storage sweep has passed; the sweep never touches the bytes of records that exist, nor
stray bytes younger than CONVERSION_STUCK_AFTER_SECONDS (their record may not be committed yet). Work folders that
nothing else removes (a partial extraction, the folder of a batch that ended) go too once that old, never the
folder of a batch in progress."""

import os
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from conversion import outputs, storage, tasks
from conversion.cleanup import stray_storage_sweep
from conversion.models import Batch, BatchDataset, BatchStatus, File
from conversion.services import dataset_convert, ensure_extracted
from platform_site.accounts.models import CoreUser

from .conftest import BATCH_URL, opened_batch, upload, zip_folder

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


@pytest.fixture(autouse=True)
def _own_media(settings, tmp_path):
    """Each test's own storage: the sweep's counts are of what the test left, not of what earlier tests of the
    session left there (their records flushed, their bytes aged by these tests)."""
    settings.MEDIA_ROOT = str(tmp_path / "media")


def _stored(*ids) -> list[Path]:
    media = Path(django_settings.MEDIA_ROOT)
    return [path for path in media.rglob("*") if path.is_file() and any(str(i) in path.as_posix() for i in ids)]


def _age(paths, seconds: float) -> None:
    then = time.time() - seconds
    for path in paths:
        os.utime(path, (then, then))


def test_a_conversion_whose_user_is_deleted_midway_leaves_nothing_behind(
    api_client, core_user, valid_timelogs, settings, monkeypatch, caplog
):
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
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
    media = Path(django_settings.MEDIA_ROOT)
    # (one removal for each record's folder or upload zip: `files/<id>/`, `datasets/<batch>/`, `batches/<batch>.zip`)
    assert stray_storage_sweep()["removed"] == len({path.relative_to(media).parts[:2] for path in stray})
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


def test_an_upload_cut_off_while_it_streamed_in_is_removed_once_nothing_wrote_it_for_that_long(settings):
    """A process killed mid-request leaves its upload (up to 3 GiB) in the upload folder: nothing removed it."""
    from conversion.uploads import upload_temp_dir

    upload_temp_dir().mkdir(parents=True, exist_ok=True)
    cut_off, streaming = upload_temp_dir() / "tmpcut.upload", upload_temp_dir() / "tmpnow.upload"
    foreign = upload_temp_dir() / "notes.txt"  # (not an upload of ours)
    for path in (cut_off, streaming, foreign):
        path.write_bytes(b"PK" + bytes(100))
    _age([cut_off, foreign], settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    assert stray_storage_sweep()["removed"] == 1
    assert not cut_off.exists() and streaming.exists() and foreign.exists()


def test_a_partial_write_left_beside_a_live_files_outputs_is_removed_once_old(
    api_client, core_user, jd_shapefiles, settings
):
    """A process killed while it wrote an output left its hidden `.part` beside the file's outputs for good (up to a
    whole output each): the sweep looked only at the folders of records that no longer exist."""
    data = (jd_shapefiles / "Export From MyJohnDeere - Application.zip").read_bytes()
    assert upload(api_client, core_user.pk, data).status_code == 201
    file_id = File.objects.values_list("pk", flat=True)[0]
    outputs_of = Path(django_settings.MEDIA_ROOT) / "files" / str(file_id)
    kept = sorted(_stored(file_id))
    killed = outputs_of / f".standard.geojson.{'a' * 32}.part"
    writing = outputs_of / f".raw.geojson.{'b' * 32}.part"
    foreign = outputs_of / ".notes.part"  # (not a partial write of ours)
    for path in (killed, writing, foreign):
        path.write_bytes(b'{"type": "FeatureCollection", "feat')
    _age([*kept, killed, foreign], settings.CONVERSION_STUCK_AFTER_SECONDS + 60)

    assert stray_storage_sweep()["removed"] == 1
    assert not killed.exists() and writing.exists() and foreign.exists()
    assert sorted(p for p in _stored(file_id) if p not in (writing, foreign)) == kept
    assert api_client.get(f"/services/operations/api/files/{file_id}/standardGeojson").status_code == 200


def test_beat_runs_the_storage_sweep_and_every_scheduled_task_exists():
    from platform_site.celery import app

    app.loader.import_default_modules()
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    assert schedule["conversion-storage-sweep"]["task"] == tasks.conversion_storage_sweep.name
    assert [entry["task"] for entry in schedule.values() if entry["task"] not in app.tasks] == []


def _age_tree(folder: Path, seconds: float) -> None:
    _age([folder, *folder.rglob("*")], seconds)


def test_a_partial_extraction_is_removed_once_old_whatever_its_batch(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    # Given a batch opened and not converted yet (its work folder in use), the partial extractions a killed worker
    # left (one of this batch, one of a batch since deleted) and a folder that is not ours
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    work = storage.batch_work_root()
    in_use = work / batch_id
    partials = [work / f"{batch_id}.4242.1700000000", work / "00000000-0000-4000-8000-000000000000.17.1700000001"]
    for partial in partials:
        (partial / "root" / "TASKDATA").mkdir(parents=True)
        (partial / "root" / "TASKDATA" / "TLG00001.BIN").write_bytes(bytes(4096))  # cut short
    not_ours = work / "notes.1.2"
    not_ours.mkdir()
    stray_storage_sweep()
    assert all(p.exists() for p in partials), "too recent: an extraction may be writing them"
    # When nothing wrote in any of them for longer than the limit
    for folder in (in_use, *partials, not_ours):
        _age_tree(folder, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    # Then the partial extractions go; the batch's own folder and the folder that is not ours stay
    assert stray_storage_sweep()["removed"] >= 2  # the media folder is the session's: other tests' strays too
    assert [p.exists() for p in partials] == [False, False]
    assert (in_use / ".complete").exists() and not_ours.exists()
    dataset_convert(dataset_id)
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED" and len(batch["files"]) == 19


def test_the_work_folder_of_an_ended_batch_is_removed_once_old_and_a_retry_extracts_it_again(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    # Given a batch that ended FAILED (every operation met an unexpected error) and whose work folder stayed (the
    # removal after its end did not run)
    produce = outputs.produce

    def produce_with_a_bug(*args, **kwargs):
        raise RuntimeError("a bug met by every operation")

    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", produce_with_a_bug)
        batch_id = upload(api_client, core_user.pk, zip_folder(valid_timelogs, prefix="TASKDATA/")).json()["id"]
    batch = Batch.objects.get(pk=batch_id)
    assert batch.status == BatchStatus.FAILED
    folder = ensure_extracted(batch).parent
    stray_storage_sweep()
    assert folder.exists(), "too recent"
    # When nothing wrote in it for longer than the limit, it goes
    _age_tree(folder, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    stray_storage_sweep()
    assert not folder.exists()
    # A retry makes the batch RECEIVED: its task extracts it again, and the sweep leaves that folder alone, however
    # old, while the batch is in progress
    assert outputs.produce is produce
    with monkeypatch.context() as patch:
        patch.setattr(tasks.dataset_convert, "delay", lambda *a: None)  # the retry's task still queued
        assert api_client.put(f"{BATCH_URL}/{batch_id}/retry").status_code == 200
    ensure_extracted(batch)
    _age_tree(folder, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    stray_storage_sweep()
    assert (folder / ".complete").exists()
    dataset_convert(BatchDataset.objects.get(batch_id=batch_id).pk)
    answer = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert answer["status"] == "PROCESSED" and len(answer["files"]) == 19
    assert not folder.exists()  # removed at the batch's end
    # A PROCESSED batch's folder left behind goes the same way
    ensure_extracted(Batch.objects.get(pk=batch_id))
    _age_tree(folder, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    stray_storage_sweep()
    assert not folder.exists()
    file_id = answer["files"][0]
    assert api_client.get(f"/services/operations/api/files/{file_id}/standardGeojson").status_code == 200


def test_the_storage_sweep_leaves_folders_not_named_as_ours(settings):
    """Only folders named by one of our ids (a UUID in its 36-character form) are ours to remove: a 32-digit name,
    however like an id it looks, was put there by someone else."""
    media = Path(django_settings.MEDIA_ROOT)
    foreign = [
        media / "files" / "0123456789abcdef0123456789abcdef" / "a.txt",
        media / "files" / "{01234567-89ab-cdef-0123-456789abcdef}" / "a.txt",
    ]
    for path in foreign:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not ours")
    _age(foreign, settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    stray_storage_sweep()
    assert all(path.exists() for path in foreign)
