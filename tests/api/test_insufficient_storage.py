"""A full disk or database answers 507 Insufficient Storage with a problem body and `Retry-After`, and keeps nothing
of the request: it was a 500 (under DEBUG an HTML debug page; the magic link page a raw JSON 500)."""

import errno
import io
import math

import pytest
from django.db import OperationalError, connection
from drf_spectacular.generators import SchemaGenerator

from conversion.models import Batch
from conversion.uploads import TemporaryZip, upload_temp_dir
from fields.models import Field
from magiclinks import services
from magiclinks.models import MagicLink
from platform_site.api.errors import storage_full
from tests.api.test_openapi_responses import assert_documented
from tests.fields.helpers import fields_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

BATCH_URL = "/services/operations/api/batch"
ZIP = b"PK\x03\x04" + bytes(4 * 1024 * 1024)


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture
def full_disk(monkeypatch):
    """The disk the uploads stream to is full: the upload file's write fails as the kernel's does."""

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TemporaryZip, "write", write, raising=False)


@pytest.fixture
def full_database():
    """The embedded database cannot grow (SQLite's own "database or disk is full": no page past those it has).
    PostgreSQL has no such limit to set: its disk_full (53100) is read by `storage_full` alike."""
    if connection.vendor != "sqlite":
        pytest.skip("a database that cannot grow is set up on SQLite (max_page_count)")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_count")
        (pages,) = cursor.fetchone()
        cursor.execute(f"PRAGMA max_page_count = {pages}")
    yield
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA max_page_count = 1073741823")


def _zip(data: bytes = ZIP):
    file = io.BytesIO(data)
    file.name = "card.zip"
    return file


def _insufficient(response) -> dict:
    assert response.status_code == 507, response.content[:300]
    assert response["Retry-After"] == "60"
    body = response.json()
    assert body["errorKey"] == "insufficientStorage" and body["status"] == 507
    return body


def test_an_upload_on_a_full_disk_is_507_and_keeps_nothing(api_client, core_user, schema, full_disk, settings):
    settings.DEBUG = True  # it was Django's HTML debug page
    response = api_client.post(f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", {"file": _zip()})
    _insufficient(response)
    assert_documented(schema, "post", BATCH_URL, response)
    assert not Batch.objects.exists()
    assert not any(upload_temp_dir().glob("*"))  # the partial upload removed


def test_a_write_when_the_database_cannot_grow_is_507_and_keeps_nothing(api_client, core_user, schema, full_database):
    # A field whose outline is far larger than any room left in the database's pages
    ring = [[10 + 0.01 * math.cos(2 * math.pi * i / 20000), 50 + 0.01 * math.sin(2 * math.pi * i / 20000)]
            for i in range(20000)]  # fmt: skip
    ring.append(ring[0])
    geometry = {"type": "MultiPolygon", "coordinates": [[ring]]}
    response = api_client.post(fields_url(core_user), {"geometry": geometry}, format="json")
    assert "database or disk is full" not in response.content.decode()
    _insufficient(response)
    assert_documented(schema, "post", "/services/fields/api/users/{coreUserId}/fields", response)
    assert not Field.objects.exists()


def test_the_magic_link_upload_page_on_a_full_disk_says_so_in_html(client, core_user, full_disk):
    _link, token = services.magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD)
    response = client.post(f"/links/{token}/upload", {"file": _zip()})
    assert response.status_code == 507 and response["Retry-After"] == "60"
    assert response["Content-Type"].startswith("text/html")
    assert "no room left" in response.content.decode()
    assert not Batch.objects.exists() and not any(upload_temp_dir().glob("*"))


def test_postgresqls_disk_full_is_a_full_storage():
    """SQLSTATE 53100 (disk_full), as Django raises it: an OperationalError wrapping psycopg's."""

    class DiskFull(Exception):
        sqlstate = "53100"

    error = OperationalError("could not extend file: No space left on device")
    error.__cause__ = DiskFull()
    assert storage_full(error)
    assert not storage_full(OperationalError("disk I/O error"))  # a failing disk too: not told apart
    assert not storage_full(OSError(errno.EIO, "Input/output error"))
