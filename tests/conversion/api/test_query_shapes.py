"""The file, batch and operation endpoints read what they answer, so their cost does not grow with what they do
not: a file's outputs (kilobytes of summary and image JSON each) are read only by their own endpoints, a merged
file's sources and a batch page's files by id, and a field's files through a subquery, not a list of every id."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversion.models import Batch, File
from fields.services import field_create
from operations.models import Operation
from tests.operations.helpers import grid_box, grid_table, processed_file

from .conftest import BATCH_URL, FILES_URL

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

OPS_URL = "/services/operations/api/operations"
FIELD_FILES = "/services/fields/api/users/{user}/fields/{field}/operations"


def _get(client, url):
    """The answer's JSON and the SQL it ran."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return response.json(), [q["sql"] for q in queries.captured_queries]


def _reads_outputs(statements: list[str]) -> list[str]:
    table = connection.ops.quote_name(File._meta.db_table)
    column = connection.ops.quote_name(File._meta.get_field("summary").column)
    return [sql for sql in statements if sql.startswith("SELECT") and f"{table}.{column}" in sql]


@pytest.fixture
def field(core_user):
    return field_create(core_user=core_user, geometry=grid_box(), name="North")


@pytest.fixture
def files(core_user, field) -> list[File]:
    return [processed_file(core_user, grid_table(start=f"2024-09-0{1 + day}T10:00:00", seed=day)) for day in range(3)]


def test_file_records_read_no_outputs(api_client, core_user, field, files):
    merge = api_client.post(f"{FILES_URL}/merge", {"ids": [str(f.pk) for f in files]}, format="json")
    assert merge.status_code == 201
    merged = merge.json()["id"]
    field_files = FIELD_FILES.format(user=core_user.pk, field=field.pk)
    for url in (
        f"{FILES_URL}?size=100",
        f"{FILES_URL}/{merged}",
        f"{FILES_URL}/{files[0].pk}",
        f"{field_files}?size=100",
        f"{field_files}/{files[0].pk}",
        f"{OPS_URL}?size=100",
        f"{OPS_URL}/{Operation.objects.first().pk}",
    ):
        body, statements = _get(api_client, url)
        assert body and not _reads_outputs(statements), url
    # What they answer is whole: the merged file's sources, a file's fields.
    assert sorted(_get(api_client, f"{FILES_URL}/{merged}")[0]["sources"]) == sorted(str(f.pk) for f in files)
    assert _get(api_client, f"{FILES_URL}/{files[0].pk}")[0]["fields"] == [field.pk]
    # The outputs' own endpoints still answer them.
    assert _get(api_client, f"{FILES_URL}/{files[0].pk}/summary")[0] == File.objects.get(pk=files[0].pk).summary


def test_a_page_of_a_fields_files_names_no_other_file(api_client, core_user, field, files):
    """The field's file ids were read into Python and sent back as an IN list (422 KB of SQL for 10,000 files)."""
    url = FIELD_FILES.format(user=core_user.pk, field=field.pk)
    every = [f["id"] for f in _get(api_client, f"{url}?size=100&sort=id")[0]]
    assert len(every) > len(files) - 1 and set(every) >= {str(f.pk) for f in files}
    body, statements = _get(api_client, f"{url}?size=1&sort=id")
    assert [f["id"] for f in body] == every[:1]
    others = [uuid.UUID(pk) for pk in every[1:]]
    assert not [sql for sql in statements for pk in others if str(pk) in sql or pk.hex in sql]


def test_a_batch_page_reads_its_files_at_once_and_the_status_no_outputs(api_client, core_user, files):
    batches = []
    for index, file in enumerate(files):
        batch = Batch.objects.create(
            core_user=core_user, provider="Other", file_name=f"{index}.zip", size=1, upload=f"batches/{index}.zip"
        )
        File.objects.filter(pk=file.pk).update(batch=batch)
        batches.append(batch)
    one, one_statements = _get(api_client, f"{BATCH_URL}?size=1&sort=fileName")
    every, every_statements = _get(api_client, f"{BATCH_URL}?size=100&sort=fileName")
    assert len(one_statements) == len(every_statements)  # not one query per batch
    assert [b["files"] for b in every] == [[str(f.pk)] for f in files] and one == every[:1]

    status, statements = _get(api_client, f"{BATCH_URL}/{batches[0].pk}/status")
    assert status["converted"] == [str(files[0].pk)] and not _reads_outputs(statements)
