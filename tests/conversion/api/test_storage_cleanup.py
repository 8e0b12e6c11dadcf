"""A batch's and a file's stored bytes go with their records: deleting a core user (which cascades to all of
theirs) leaves nothing of theirs in storage, and nobody else's bytes are touched."""

from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversion.models import Batch, File
from platform_site.accounts.models import CoreUser
from tests.factories import CoreUserFactory

from .conftest import FILES_URL, upload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]
USERS_URL = "/services/usermanagement/api/users"


def _stored(batch_ids, file_ids) -> list[Path]:
    """Every stored path of these batches and files: uploads, data set zips, outputs, images, work folders."""
    media = Path(settings.MEDIA_ROOT)
    found = []
    for path in media.rglob("*"):
        if any(str(i) in path.as_posix() for i in [*batch_ids, *file_ids]):
            found.append(path)
    return found


def test_deleting_a_core_user_removes_their_stored_files(api_client, owner, core_user, jd_shapefiles):
    other = CoreUserFactory(owner=owner)
    data = (jd_shapefiles / "Export From MyJohnDeere - Application.zip").read_bytes()
    for user in (core_user, other):
        assert upload(api_client, user.pk, data).status_code == 201
    uploaded = [str(pk) for pk in File.objects.filter(core_user=core_user).values_list("pk", flat=True)]
    assert api_client.post(f"{FILES_URL}/merge", {"ids": uploaded[:2]}, format="json").status_code == 201
    mine = File.objects.filter(core_user=core_user)
    batch_ids = list(Batch.objects.filter(core_user=core_user).values_list("pk", flat=True))
    file_ids = list(mine.values_list("pk", flat=True))
    theirs_batches = list(Batch.objects.filter(core_user=other).values_list("pk", flat=True))
    theirs_files = list(File.objects.filter(core_user=other).values_list("pk", flat=True))
    assert len(file_ids) == len(uploaded) + 1 and all(f.status == "processed" for f in mine)
    before = _stored(batch_ids, file_ids)
    assert any(p.name.endswith(".zip") for p in before) and any(p.name == "points.npz" for p in before)
    assert any(p.suffix == ".png" for p in before), "images are stored too"
    theirs_before = sorted(_stored(theirs_batches, theirs_files))

    assert api_client.delete(f"{USERS_URL}/{core_user.pk}").status_code == 204

    assert _stored(batch_ids, file_ids) == []
    assert sorted(_stored(theirs_batches, theirs_files)) == theirs_before


def test_an_upload_whose_user_was_deleted_while_it_streamed_is_404_and_leaves_nothing(core_user):
    """The user was found before the body streamed in: deleted meanwhile, the upload answers 404 and its stored zip
    is removed (it was a foreign-key violation at commit: a 500 and a stranded zip)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from conversion.services import batch_receive
    from platform_site.api.errors import NotFoundError

    gone = CoreUser.objects.get(pk=core_user.pk)
    CoreUser.objects.filter(pk=core_user.pk).delete()
    stored = Path(settings.MEDIA_ROOT) / "batches"
    before = set(stored.glob("*")) if stored.exists() else set()
    upload = SimpleUploadedFile("late.zip", b"PK\x05\x06" + bytes(18))
    with pytest.raises(NotFoundError):
        batch_receive(core_user=gone, provider="Other", upload=upload)
    assert not Batch.objects.exists()
    assert (set(stored.glob("*")) if stored.exists() else set()) == before


def test_deleting_a_core_user_reads_their_files_by_id_only(api_client, owner, core_user, jd_shapefiles):
    """The cascade read every column of every file (kilobytes of summary and image JSON each), twice: 36 s for a
    user with 10,000 files. The files now go first, read by id, and each once."""
    data = (jd_shapefiles / "Export From MyJohnDeere - Application.zip").read_bytes()
    assert upload(api_client, core_user.pk, data).status_code == 201
    files = File.objects.filter(core_user=core_user)
    assert files.count() >= 2 and all(f.summary for f in files)
    table = connection.ops.quote_name(File._meta.db_table)
    output = connection.ops.quote_name(File._meta.get_field("summary").column)

    with CaptureQueriesContext(connection) as queries:
        assert api_client.delete(f"{USERS_URL}/{core_user.pk}").status_code == 204

    statements = [q["sql"] for q in queries.captured_queries]
    deleted = max(i for i, sql in enumerate(statements) if sql.startswith(f"DELETE FROM {table}"))
    # (the cascade from the user still asks for whole rows, once the files are gone: it finds none)
    whole_rows = [i for i, sql in enumerate(statements) if sql.startswith("SELECT") and f"{table}.{output}" in sql]
    assert all(i > deleted for i in whole_rows), statements[: deleted + 1]
    assert not File.objects.filter(core_user_id=core_user.pk).exists()
    assert not CoreUser.objects.filter(pk=core_user.pk).exists()
