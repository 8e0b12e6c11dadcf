"""POST /batch: streamed upload, the size cap, the zip check, parameters, tenancy. Nothing is stored on a refusal."""

import io

import pytest
from django.core.files.storage import default_storage

from conversion import tasks
from conversion.models import Batch
from conversion.uploads import MULTIPART_OVERHEAD, upload_temp_dir
from tests.tenancy import assert_problem

from .conftest import BATCH_URL, upload, zip_entries

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

SMALL_ZIP = zip_entries({"readme.txt": b"nothing to convert"})


def _leftovers() -> list:
    folder = upload_temp_dir()
    return list(folder.iterdir()) if folder.exists() else []


def test_upload_returns_the_received_batch_at_once(api_client, core_user, monkeypatch):
    monkeypatch.setattr(tasks.batch_open, "delay", lambda *a: None)  # not opened: what the client sees at once
    response = upload(api_client, core_user.pk, SMALL_ZIP, provider="ProviderA", name="card.zip")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "RECEIVED"
    assert body["coreUserId"] == str(core_user.pk)
    assert body["provider"] == "ProviderA"
    assert body["fileName"] == "card.zip"
    assert body["size"] == len(SMALL_ZIP)
    assert body["uploadTimestamp"].endswith("Z")
    batch = Batch.objects.get(pk=body["id"])
    with default_storage.open(batch.upload.name, "rb") as fh:
        assert fh.read() == SMALL_ZIP
    assert _leftovers() == []


def test_parameters_may_travel_as_form_fields(api_client, core_user):
    response = upload(api_client, core_user.pk, SMALL_ZIP, in_query=False)
    assert response.status_code == 201, response.content
    assert response.json()["coreUserId"] == str(core_user.pk)


def test_parameters_that_query_and_form_give_differently_are_400_and_nothing_is_kept(
    api_client, core_user, monkeypatch
):
    """The query string's counted, silently, over the form's: a client meaning ProviderA got Other."""
    monkeypatch.setattr(tasks.batch_open, "delay", lambda *a: None)
    file = io.BytesIO(SMALL_ZIP)
    file.name = "card.zip"
    url = f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other"
    problem = assert_problem(api_client.post(url, {"file": file, "provider": "ProviderA"}), 400, "validation")
    assert [e["field"] for e in problem["fieldErrors"]] == ["provider"]
    assert Batch.objects.count() == 0 and _leftovers() == []
    # Both alike: taken
    file.seek(0)
    assert api_client.post(url, {"file": file, "provider": "Other", "coreUserId": str(core_user.pk)}).status_code == 201


def test_a_body_that_is_not_a_zip_is_refused_and_nothing_is_kept(api_client, core_user):
    body = assert_problem(upload(api_client, core_user.pk, b"%PDF-1.7 not a zip" * 1000), 400, "invalidArchive")
    assert "not a zip" in body["detail"]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_a_malformed_part_after_the_zip_leaves_no_temporary_file(api_client, core_user, monkeypatch):
    """Django closes no file on a malformed part after the file: the whole streamed zip stayed on disk until a
    garbage collection, or for ever if the process died first."""
    monkeypatch.setattr(tasks.batch_open, "delay", lambda *a: None)
    body = (
        b'--BB\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\n' + SMALL_ZIP + b"\r\n"
        b'--BB\r\nContent-Disposition: form-data; name="x"; ' + b"a" * 100_000 + b"\r\n\r\n1\r\n--BB--\r\n"
    )
    response = api_client.generic(
        "POST", f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", body,
        content_type="multipart/form-data; boundary=BB",
    )  # fmt: skip
    assert response.status_code == 400
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_a_file_part_other_than_file_is_refused_by_its_name_and_nothing_is_kept(api_client, core_user):
    """It was streamed as the zip and refused as "not a zip" in the name of `file` (a client sending metadata
    beside the zip could not tell why)."""
    metadata = io.BytesIO(b'{"note": "harvest"}')
    metadata.name = "meta.json"
    archive = io.BytesIO(SMALL_ZIP)
    archive.name = "card.zip"
    response = api_client.post(
        f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", {"file": archive, "metadata": metadata}
    )
    body = assert_problem(response, 400, "validation")
    assert "metadata" in body["detail"] and body["fieldErrors"] == [{"field": "metadata", "message": "Unknown field."}]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_a_form_field_past_the_memory_limit_is_413_and_nothing_is_kept(api_client, core_user, settings):
    """It was a 400 `malformedRequest` ("could not be understood"), where a JSON body that long is a 413."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    archive = io.BytesIO(SMALL_ZIP)
    archive.name = "card.zip"
    url = f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other"
    body = assert_problem(api_client.post(url, {"file": archive, "note": "x" * 2000}), 413, "requestTooLarge")
    assert "1000 bytes" in body["detail"]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_two_zips_in_one_upload_are_refused(api_client, core_user):
    """The last one became the batch, silently."""
    first, second = io.BytesIO(SMALL_ZIP), io.BytesIO(zip_entries({"other.txt": b"x"}))
    first.name, second.name = "a.zip", "b.zip"
    response = api_client.post(f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", {"file": [first, second]})
    body = assert_problem(response, 400, "validation")
    assert body["fieldErrors"] == [{"field": "file", "message": "Given more than once."}]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


@pytest.mark.parametrize("data", [b"", b"P", b"PK", b"PK\x03"], ids=["empty", "1", "2", "3"])
def test_an_empty_file_or_a_few_bytes_of_a_zip_signature_are_not_a_zip(api_client, core_user, data):
    assert_problem(upload(api_client, core_user.pk, data), 400, "invalidArchive")
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_a_zip_of_exactly_the_cap_is_taken_and_one_byte_more_is_not(api_client, core_user, settings):
    """The cap is the zip's own size: its multipart envelope does not count against it."""
    settings.CONVERSION_UPLOAD_MAX_BYTES = len(SMALL_ZIP)
    assert upload(api_client, core_user.pk, SMALL_ZIP).status_code == 201
    settings.CONVERSION_UPLOAD_MAX_BYTES = len(SMALL_ZIP) - 1
    assert_problem(upload(api_client, core_user.pk, SMALL_ZIP), 413, "fileTooLarge")
    assert Batch.objects.count() == 1


@pytest.mark.parametrize(
    "query, field",
    [
        ("provider=Other", "coreUserId"),
        ("coreUserId=not-a-uuid&provider=Other", "coreUserId"),
        ("coreUserId={user}&provider=Nobody", "provider"),
        ("coreUserId={user}", "provider"),
    ],
)
def test_bad_parameters_are_400_with_the_field(api_client, core_user, query, field):
    file = io.BytesIO(SMALL_ZIP)
    file.name = "x.zip"
    response = api_client.post(f"{BATCH_URL}?{query.format(user=core_user.pk)}", {"file": file})
    body = assert_problem(response, 400, "validation")
    assert field in {e["field"] for e in body["fieldErrors"]}
    assert Batch.objects.count() == 0


def test_missing_file_is_400(api_client, core_user):
    response = api_client.post(f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", {"other": "x"})
    body = assert_problem(response, 400, "validation")
    assert body["fieldErrors"] == [{"field": "file", "message": "This field is required."}]


def test_a_file_part_sent_as_text_is_named_as_such(api_client, core_user):
    """`curl -F file=upload.zip` (no `@`) sends the name as text: the answer said the body had no part `file`."""
    response = api_client.post(f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", {"file": "upload.zip"})
    body = assert_problem(response, 400, "validation")
    assert body["fieldErrors"] == [{"field": "file", "message": "A file is required, not text."}]
    assert "is a text field" in body["detail"] and Batch.objects.count() == 0


@pytest.mark.parametrize("end", [b"", b"\r\n--BB"], ids=["cut-short", "no-closing-boundary"])
def test_a_body_whose_file_part_never_ends_says_so_and_nothing_is_kept(api_client, core_user, end):
    body = b'--BB\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\n' + SMALL_ZIP[:100] + end
    response = api_client.generic(
        "POST", f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", body,
        content_type="multipart/form-data; boundary=BB",
    )  # fmt: skip
    problem = assert_problem(response, 400, "validation")
    assert "no complete part" in problem["detail"] and "cut short" in problem["detail"]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_a_file_name_that_is_not_utf8_is_named_as_a_cause_of_the_missing_part(api_client, core_user):
    """Django's parser drops the part whose headers are not UTF-8 (`curl -F "file=@Ma\xefs.zip"` in Latin-1), so
    there is no `file`; the 400 blamed a body cut short only."""
    body = (
        b'--BB\r\nContent-Disposition: form-data; name="file"; filename="Ma\xefs.zip"\r\n'
        b"Content-Type: application/zip\r\n\r\n" + SMALL_ZIP + b"\r\n--BB--\r\n"
    )
    response = api_client.generic(
        "POST", f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", body,
        content_type="multipart/form-data; boundary=BB",
    )  # fmt: skip
    problem = assert_problem(response, 400, "validation")
    assert "a part whose headers are not UTF-8, such as a file name in another encoding" in problem["detail"]
    assert problem["fieldErrors"] == [{"field": "file", "message": "This field is required."}]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_a_larger_file_whose_name_is_not_utf8_is_a_400_saying_what_to_do(api_client, core_user):
    """Past a few KiB Django read the dropped part's bytes as the next part's headers: a bare "Multipart form parse
    error - Request max total header size exceeded.", no word on the file name."""
    import os

    body = (
        b'--BB\r\nContent-Disposition: form-data; name="file"; filename="Ma\xefs.zip"\r\n'
        b"Content-Type: application/zip\r\n\r\n" + SMALL_ZIP + os.urandom(200_000) + b"\r\n--BB--\r\n"
    )
    response = api_client.generic(
        "POST", f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", body,
        content_type="multipart/form-data; boundary=BB",
    )  # fmt: skip
    problem = assert_problem(response, 400, "malformedRequest")
    assert problem["detail"].startswith("The multipart body cannot be read: Request max total header size exceeded.")
    assert "a file name in another encoding makes its part unreadable" in problem["detail"]
    assert Batch.objects.count() == 0
    assert _leftovers() == []


def test_json_body_is_415(api_client, core_user):
    response = api_client.post(
        f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other", {"file": "x"}, content_type="application/json"
    )
    assert_problem(response, 415)


def test_another_owners_core_user_is_404_in_query_and_form(api_client, other_client, core_user):
    assert_problem(upload(other_client, core_user.pk, SMALL_ZIP), 404, "notFound")
    assert_problem(upload(other_client, core_user.pk, SMALL_ZIP, in_query=False), 404, "notFound")
    assert Batch.objects.count() == 0


def test_cap_is_enforced_while_streaming(api_client, core_user, settings):
    """A declared length within the envelope allowance, but a file past the cap: stopped mid-stream."""
    settings.CONVERSION_UPLOAD_MAX_BYTES = 256 * 1024
    data = b"PK\x03\x04" + b"\0" * (300 * 1024)
    body = assert_problem(upload(api_client, core_user.pk, data), 413, "fileTooLarge")
    assert body["detail"] == "The upload is larger than the limit of 256 KiB (262144 bytes)."
    assert Batch.objects.count() == 0
    assert _leftovers() == []


class GeneratedBody(io.RawIOBase):
    """A multipart body of `size` bytes made on the fly (never stored); counts what the server read."""

    def __init__(self, size: int, boundary: bytes):
        self.head = (
            b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="huge.zip"\r\n'
            b"Content-Type: application/zip\r\n\r\nPK\x03\x04"
        )
        self.size = size
        self.read_bytes = 0

    def readable(self):
        return True

    def read(self, n=-1):
        n = self.size - self.read_bytes if n is None or n < 0 else min(n, self.size - self.read_bytes)
        start = self.read_bytes
        self.read_bytes += n
        head = self.head[start : start + n]
        return head + b"\0" * (n - len(head))


def test_a_three_gigabyte_stream_is_refused_without_reading_it(api_client, core_user, settings):
    size = settings.CONVERSION_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD + 1
    assert size > 3 * 1024**3
    stream = GeneratedBody(size, b"BoUnDaRy")
    response = api_client.post(
        f"{BATCH_URL}?coreUserId={core_user.pk}&provider=Other",
        data=b"",
        content_type="multipart/form-data; boundary=BoUnDaRy",
        CONTENT_LENGTH=str(size),
        **{"wsgi.input": stream},
    )
    assert_problem(response, 413, "fileTooLarge")
    assert stream.read_bytes < 1024 * 1024
    assert Batch.objects.count() == 0
