"""A storage with no local paths (`FILE_STORAGE_BACKEND`: an object store, as S3 through django-storages;
`tests.object_store` stands for one). Uploads, conversions, outputs, images, merges and deletions go through it as
they go through the local disk."""

import io
import json
import zipfile

import pytest
from django.core.files.storage import default_storage

from conversion.models import Batch, File

from .conftest import BATCH_URL, FILES_URL, upload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]
USERS_URL = "/services/usermanagement/api/users"


@pytest.fixture
def object_storage(settings):
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "tests.object_store.ObjectStore"}}
    with pytest.raises(NotImplementedError):
        default_storage.path("x")  # (no local path: every read and write goes through the storage)
    return default_storage


def test_an_upload_converts_and_its_outputs_download_from_an_object_store(
    object_storage, api_client, core_user, jd_shapefiles
):
    data = (jd_shapefiles / "Export From MyJohnDeere - Application.zip").read_bytes()
    batch_id = upload(api_client, core_user.pk, data).json()["id"]
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED", batch
    file_id = batch["files"][0]
    assert api_client.get(f"{FILES_URL}/{file_id}").json()["status"] == "processed"
    standard = json.loads(b"".join(api_client.get(f"{FILES_URL}/{file_id}/standardGeojson").streaming_content))
    assert standard["type"] == "FeatureCollection" and standard["features"]
    original = b"".join(api_client.get(f"{FILES_URL}/{file_id}/originalFile").streaming_content)
    assert zipfile.ZipFile(io.BytesIO(original)).namelist()
    images = api_client.get(f"{FILES_URL}/{file_id}/images").json()
    assert images and all(object_storage.exists(name) for name in _stored(file_id) if name.endswith(".png"))
    # A merge of two files reads both from the store
    second = upload(api_client, core_user.pk, data).json()["id"]
    both = [file_id, api_client.get(f"{BATCH_URL}/{second}").json()["files"][0]]
    merged = api_client.post(f"{FILES_URL}/merge", {"ids": both}, format="json")
    assert merged.status_code == 201, merged.content
    assert api_client.get(f"{FILES_URL}/{merged.json()['id']}").json()["status"] == "processed"
    # Deleting the user removes every stored byte of theirs
    assert _stored(file_id)
    assert api_client.delete(f"{USERS_URL}/{core_user.pk}").status_code == 204
    assert not Batch.objects.exists() and not File.objects.exists()
    assert _stored(file_id) == [] and _stored(batch_id) == []


def _stored(record_id) -> list[str]:
    """Every name in the object store that holds `record_id`."""
    names, folders = [], [""]
    while folders:
        folder = folders.pop()
        directories, files = default_storage.listdir(folder)
        folders += [f"{folder}/{d}".lstrip("/") for d in directories]
        names += [f"{folder}/{f}".lstrip("/") for f in files if str(record_id) in f"{folder}/{f}"]
    return names


def test_a_zip_of_a_feature_zipfile_lacks_fails_as_unreadable_from_an_object_store(
    object_storage, api_client, core_user
):
    """The zip's directory asks for version 22.8: zipfile raises NotImplementedError, which was taken for the
    storage's "no local path" and the batch failed as ours ("Leaf internal error", and a RuntimeError logged)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("points.geojson", '{"type": "FeatureCollection", "features": []}')
    data = bytearray(buffer.getvalue())
    data[data.find(b"PK\x01\x02") + 6] = 228  # "version needed to extract": 22.8
    batch = api_client.get(f"{BATCH_URL}/{upload(api_client, core_user.pk, bytes(data)).json()['id']}").json()
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"].startswith("Files found but unable to read")
    assert batch["failureReason"] == (
        "upload.zip uses a zip feature that cannot be read (zip file version 22.8); zip the files again"
    )
