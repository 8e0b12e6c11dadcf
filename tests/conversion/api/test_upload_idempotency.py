"""POST /batch with an `Idempotency-Key`: a retry of an upload answers the batch the first one made and stores
nothing; a key reused for another upload is a 422; keys are per API owner and honoured for a day."""

import io
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from conversion import tasks
from conversion.models import Batch, UploadKey
from conversion.services import batch_receive
from conversion.uploads import upload_temp_dir
from tests.concurrency import needs_postgresql, run_meanwhile
from tests.factories import CoreUserFactory
from tests.tenancy import assert_problem

from .conftest import BATCH_URL, zip_entries

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

SMALL_ZIP = zip_entries({"readme.txt": b"nothing to convert"})
OTHER_ZIP = zip_entries({"readme.txt": b"something else, of another size"})
KEY = "4f1c2a8e-8d1e-4b8e-9a57-2f0f0c6f1b11"


@pytest.fixture(autouse=True)
def opening_not_sent(monkeypatch):
    """The batches stay RECEIVED: what is asserted is what the upload made, not its conversion."""
    sent = []
    monkeypatch.setattr(tasks.batch_open, "delay", lambda *args: sent.append(args))
    return sent


def keyed_upload(client, core_user_id, data=SMALL_ZIP, *, key=KEY, provider="Other", name="card.zip", in_query=True):
    file = io.BytesIO(data)
    file.name = name
    headers = {} if key is None else {"Idempotency-Key": key}
    if in_query:
        url = f"{BATCH_URL}?coreUserId={core_user_id}&provider={provider}"
        return client.post(url, {"file": file}, headers=headers)
    form = {"file": file, "coreUserId": str(core_user_id), "provider": provider}
    return client.post(BATCH_URL, form, headers=headers)


def _stored() -> set[str]:
    return set(default_storage.listdir("batches")[1]) if default_storage.exists("batches") else set()


@pytest.fixture
def stored_uploads():
    """The upload zips stored since the test began (the media folder is the session's)."""
    before = _stored()
    return lambda: sorted(_stored() - before)


def leftovers() -> list:
    folder = upload_temp_dir()
    return list(folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize("in_query", [True, False], ids=["query", "form"])
def test_a_retry_answers_the_first_uploads_batch_and_stores_nothing(
    api_client, core_user, opening_not_sent, in_query, django_capture_on_commit_callbacks, stored_uploads
):
    with django_capture_on_commit_callbacks(execute=True):
        first = keyed_upload(api_client, core_user.pk, in_query=in_query)
    assert first.status_code == 201, first.content
    assert "Idempotent-Replayed" not in first

    with django_capture_on_commit_callbacks(execute=True):
        again = keyed_upload(api_client, core_user.pk, in_query=in_query)
    assert again.status_code == 201, again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert again["Location"] == first["Location"]
    assert Batch.objects.count() == 1 and len(opening_not_sent) == 1
    assert stored_uploads() == [f"{first.json()['id']}.zip"] and leftovers() == []
    listed = api_client.get(BATCH_URL).json()
    assert [b["id"] for b in listed] == [first.json()["id"]]


def test_a_retry_with_its_parameters_in_the_query_is_answered_before_its_body_is_read(api_client, core_user):
    """The zip is not read again: the answer comes before the body is read (curl stops sending at it; both servers
    send `100 Continue` at once, as gunicorn does). Its bytes are not compared, only what the query says."""
    first = keyed_upload(api_client, core_user.pk).json()
    again = keyed_upload(api_client, core_user.pk, b"not a zip, and never read")
    assert again.status_code == 201 and again.json()["id"] == first["id"]


def test_the_answer_of_a_retry_is_the_batch_as_it_is_now(api_client, core_user):
    first = keyed_upload(api_client, core_user.pk).json()
    Batch.objects.filter(pk=first["id"]).update(status="PROCESSED")
    again = keyed_upload(api_client, core_user.pk).json()
    assert again == {**first, "status": "PROCESSED"}


def test_uploads_without_a_key_or_with_different_keys_are_each_a_batch(api_client, core_user):
    ids = {
        keyed_upload(api_client, core_user.pk, key=None).json()["id"],
        keyed_upload(api_client, core_user.pk, key=None).json()["id"],
        keyed_upload(api_client, core_user.pk, key="one").json()["id"],
        keyed_upload(api_client, core_user.pk, key="two").json()["id"],
    }
    assert len(ids) == 4 and Batch.objects.count() == 4


def test_the_quoted_form_of_the_draft_is_the_same_key(api_client, core_user):
    first = keyed_upload(api_client, core_user.pk, key=KEY).json()
    again = keyed_upload(api_client, core_user.pk, key=f'"{KEY}"')
    assert again["Idempotent-Replayed"] == "true" and again.json()["id"] == first["id"]


@pytest.mark.parametrize(
    "key",
    ["", "   ", "a" * 256, "two words", 'a"b', '"unclosed', "tab\there", "back\\slash", "caf\u00e9"],
    ids=["empty", "blank", "too-long", "space", "quote", "unclosed", "tab", "backslash", "non-ascii"],
)
def test_a_header_that_is_no_key_is_400_and_nothing_is_kept(api_client, core_user, key):
    problem = assert_problem(keyed_upload(api_client, core_user.pk, key=key), 400, "validation")
    assert [e["field"] for e in problem["fieldErrors"]] == ["Idempotency-Key"]
    assert Batch.objects.count() == 0 and UploadKey.objects.count() == 0 and leftovers() == []


def test_the_longest_key_is_taken(api_client, core_user):
    assert keyed_upload(api_client, core_user.pk, key="k" * 255).status_code == 201
    assert UploadKey.objects.get().key == "k" * 255


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"provider": "ProviderA"}, ["provider"]),
        ({"core_user": True}, ["coreUserId"]),
        ({"in_query": False, "data": OTHER_ZIP}, ["file"]),
        ({"in_query": False, "name": "other.zip"}, ["file"]),
        ({"in_query": False, "provider": "ProviderB", "data": OTHER_ZIP}, ["provider", "file"]),
    ],
    ids=["provider", "core-user", "file-size", "file-name", "provider-and-file"],
)
def test_a_key_sent_with_another_upload_is_422_and_nothing_is_kept(
    api_client, owner, core_user, change, fields, stored_uploads
):
    first = keyed_upload(api_client, core_user.pk).json()
    change = dict(change)
    target = CoreUserFactory(owner=owner).pk if change.pop("core_user", False) else core_user.pk
    problem = assert_problem(keyed_upload(api_client, target, **change), 422, "idempotencyKeyReused")
    assert [e["field"] for e in problem["fieldErrors"]] == fields
    assert first["id"] in problem["detail"]
    assert [str(pk) for pk in Batch.objects.values_list("pk", flat=True)] == [first["id"]]
    assert stored_uploads() == [f"{first['id']}.zip"] and leftovers() == []


def test_a_failed_upload_keeps_no_key_so_its_retry_is_received(api_client, core_user):
    assert_problem(keyed_upload(api_client, core_user.pk, b"%PDF not a zip" * 100), 400, "invalidArchive")
    retry = keyed_upload(api_client, core_user.pk)
    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry
    assert Batch.objects.count() == 1


def test_a_key_is_honoured_for_a_day_then_names_a_new_upload(api_client, core_user):
    first = keyed_upload(api_client, core_user.pk).json()
    UploadKey.objects.update(created_time=UploadKey.objects.get().created_time - timedelta(hours=24, minutes=-1))
    assert keyed_upload(api_client, core_user.pk).json()["id"] == first["id"]

    UploadKey.objects.update(created_time=UploadKey.objects.get().created_time - timedelta(minutes=2))
    later = keyed_upload(api_client, core_user.pk, provider="ProviderA")  # past the day: not compared either
    assert later.status_code == 201 and "Idempotent-Replayed" not in later
    assert later.json()["id"] != first["id"] and Batch.objects.count() == 2
    # The key now names the new upload; the first batch is kept, without it.
    assert keyed_upload(api_client, core_user.pk, provider="ProviderA").json()["id"] == later.json()["id"]
    assert str(UploadKey.objects.get().batch_id) == later.json()["id"]


def test_keys_are_per_api_owner(api_client, other_client, core_user, other_owner):
    """Another owner sending the same key makes its own batch and never learns of the first owner's."""
    mine = keyed_upload(api_client, core_user.pk).json()
    theirs = keyed_upload(other_client, CoreUserFactory(owner=other_owner).pk)
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert theirs.json()["id"] != mine["id"]
    # The first owner's user is still a 404 to the other owner, key or no key.
    assert_problem(keyed_upload(other_client, core_user.pk), 404, "notFound")
    assert Batch.objects.count() == 2


def test_a_core_users_deletion_takes_its_keys(api_client, owner, core_user):
    keyed_upload(api_client, core_user.pk)
    assert api_client.delete(f"/services/usermanagement/api/users/{core_user.pk}").status_code == 204
    assert UploadKey.objects.count() == 0
    fresh = CoreUserFactory(owner=owner)
    again = keyed_upload(api_client, fresh.pk)
    assert again.status_code == 201 and "Idempotent-Replayed" not in again


@pytest.mark.django_db(transaction=True)
def test_two_uploads_of_one_key_at_once_make_one_batch(owner, core_user, make_client, stored_uploads):
    """The second upload looked the key up while the first was not committed, streamed its zip, and met the first's
    key as it stored its own: it answers the first's batch, and its zip is not kept (it was a 500)."""
    needs_postgresql()
    client = make_client(owner)
    client.raise_request_exception = False
    with transaction.atomic():
        first = batch_receive(
            core_user=core_user, provider="Other", upload=SimpleUploadedFile("card.zip", SMALL_ZIP), key=KEY
        )
        second = run_meanwhile(lambda: keyed_upload(client, core_user.pk, name="card.zip"))
    response = second()
    assert response.status_code == 201, response.content
    assert response.json()["id"] == str(first.pk) and response["Idempotent-Replayed"] == "true"
    assert Batch.objects.count() == 1
    assert stored_uploads() == [f"{first.pk}.zip"] and leftovers() == []
