"""Helpers for the batch/file API tests: zips made at test time from the samples, uploads through the API."""

import io
import zipfile
from pathlib import Path

import pytest

from tests.conftest import sample_path

DOTNET_TESTDATA = "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata"

BATCH_URL = "/services/operations/api/batch"
FILES_URL = "/services/operations/api/files"


def zip_folder(folder: Path, *, prefix: str = "") -> bytes:
    """A zip of every file under `folder` (names relative to it, under `prefix`); none is an error (an empty zip made
    from a missing folder let tests pass on nothing)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, prefix + path.relative_to(folder).as_posix())
        if not zf.namelist():
            raise FileNotFoundError(f"no file under {folder} to zip")
    return buffer.getvalue()


def zip_entries(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def upload(client, core_user_id, data: bytes, *, provider="Other", name="upload.zip", in_query=True):
    """POST /batch with the zip as multipart field `file`."""
    file = io.BytesIO(data)
    file.name = name
    if in_query:
        return client.post(f"{BATCH_URL}?coreUserId={core_user_id}&provider={provider}", {"file": file})
    return client.post(BATCH_URL, {"file": file, "coreUserId": str(core_user_id), "provider": provider})


def uploaded_batch(client, core_user, data: bytes, name: str = "upload.zip") -> dict:
    """`data` uploaded for `core_user` as `name` (201), and its batch as `GET /batch/{id}` answers it."""
    response = upload(client, core_user.pk, data, name=name)
    assert response.status_code == 201, response.content
    assert response["Location"] == f"http://testserver{BATCH_URL}/{response.json()['id']}"
    response = client.get(f"{BATCH_URL}/{response.json()['id']}")
    assert response.status_code == 200
    return response.json()


def file_record(client, file_id) -> dict:
    """The file `file_id` as `GET /files/{id}` answers it."""
    response = client.get(f"{FILES_URL}/{file_id}")
    assert response.status_code == 200
    return response.json()


def upload_lost(api_client, core_user, folder: Path, monkeypatch) -> str:
    """The id of an upload of `folder` (as TASKDATA/) whose opening task was lost (no message is sent anywhere)."""
    from conversion import tasks

    with monkeypatch.context() as patch:
        patch.setattr(tasks.batch_open, "delay", lambda *a: None)
        return upload(api_client, core_user.pk, zip_folder(folder, prefix="TASKDATA/")).json()["id"]


def opened_batch(api_client, core_user, folder: Path, monkeypatch) -> tuple[str, int]:
    """(batch id, data set id) of an uploaded and opened batch whose one data set's conversion task has not run."""
    from conversion import tasks
    from conversion.models import BatchDataset
    from conversion.services import batch_open

    batch_id = upload_lost(api_client, core_user, folder, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(tasks.dataset_convert, "delay", lambda *a: None)
        batch_open(batch_id)
    (dataset_id,) = BatchDataset.objects.filter(batch_id=batch_id).values_list("pk", flat=True)
    return batch_id, dataset_id


@pytest.fixture
def valid_timelogs(samples_dir) -> Path:
    return sample_path(
        samples_dir, "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
    )


@pytest.fixture
def load_from_stream(samples_dir) -> Path:
    return sample_path(samples_dir, f"{DOTNET_TESTDATA}/LoadFromStream")


@pytest.fixture
def jd_shapefiles(samples_dir) -> Path:
    return sample_path(samples_dir, "johndeere-sampledata/Shapefiles")
