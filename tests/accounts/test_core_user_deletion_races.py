"""A core user (or an API owner) deleted while something is written under it (PostgreSQL, exact interleavings).
Django checks foreign keys at commit: the write of a row of a user deleted meanwhile failed there (500), or,
committed first, failed the deletion (500, and the user stayed). Now every write keeps the user: a write that comes
after the deletion waits and finds the user gone (a 404); a deletion that comes during a write is made again once
the write committed, collecting its rows."""

import threading
import time

import pytest
from django.db import transaction

from assets.models import Machine
from configs.models import Configuration
from conversion.models import File, FileOrigin
from fields.models import Farm, Field, Grower
from magiclinks.models import MagicLink
from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_delete, core_user_keep, owner_delete
from tests.concurrency import needs_postgresql, request_later, run_meanwhile
from tests.factories import CoreUserFactory
from tests.fields.helpers import BASE, square
from tests.tenancy import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)

USERS = "/services/usermanagement/api/users"

# What a client writes under a core user: the request, and the rows it would leave
WRITES = {
    "field": (lambda u: ("post", f"{BASE}/users/{u.id}/fields", {"geometry": square(10, 50)}), Field),
    "farm": (lambda u: ("post", f"{BASE}/users/{u.id}/farms", {"name": "Farm"}), Farm),
    "grower": (lambda u: ("post", f"{BASE}/users/{u.id}/growers", {"name": "Grower"}), Grower),
    "machine": (
        lambda u: ("post", f"/services/beta/api/users/{u.id}/machines", {"name": "Combine", "serialNumber": "S1"}),
        Machine,
    ),
    "configuration": (
        lambda u: ("post", f"/services/config/api/configs/{u.id}", {"geoimagesShape": "HEXAGON"}),
        Configuration,
    ),
    "magic link": (
        lambda u: ("post", f"/services/widgets/api/magic-link/users/{u.id}/file-upload", {}),
        MagicLink,
    ),
}


@pytest.mark.parametrize("kind", list(WRITES))
def test_a_write_arriving_while_its_core_user_is_being_deleted_is_a_404(owner, make_client, kind):
    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    request, model = WRITES[kind]
    method, url, body = request(core_user)
    # The deletion has run, not committed, when the write comes (it found the user, still there for it)
    with transaction.atomic():
        core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk))
        write = run_meanwhile(request_later(make_client, owner, method, url, body))
    assert_problem(write(), 404, "notFound")
    assert not CoreUser.objects.filter(pk=core_user.pk).exists()
    assert not model.objects.exists()


@pytest.mark.parametrize("kind", list(WRITES))
def test_a_deletion_arriving_while_a_write_under_its_core_user_is_under_way_takes_the_write_along(
    owner, make_client, kind
):
    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    request, model = WRITES[kind]
    method, url, body = request(core_user)
    writer = make_client(owner)
    # The write has run, not committed, when the deletion comes (the request's own transaction, held open)
    with transaction.atomic():
        assert getattr(writer, method)(url, body, format="json").status_code in (200, 201)
        deletion = run_meanwhile(request_later(make_client, owner, "delete", f"{USERS}/{core_user.id}"))
    assert deletion().status_code == 204
    assert not CoreUser.objects.filter(pk=core_user.pk).exists()
    assert not model.objects.exists()


def test_a_merge_arriving_while_its_core_user_is_being_deleted_is_a_404(owner, make_client, monkeypatch):
    from conversion import tasks
    from tests.operations.helpers import grid_table, processed_file

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=2))
    monkeypatch.setattr(tasks.file_merge_process, "delay", lambda *args: None)
    body = {"ids": [str(first.pk), str(second.pk)]}
    with transaction.atomic():
        core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk))
        merge = run_meanwhile(request_later(make_client, owner, "post", "/services/operations/api/files/merge", body))
    assert_problem(merge(), 404, "notFound")
    assert not File.objects.filter(origin=FileOrigin.MERGED).exists()


@pytest.mark.parametrize("kind", ["farms", "growers"])
def test_a_farm_or_grower_replaced_while_its_core_user_is_being_deleted_is_a_404(owner, make_client, kind):
    """They go only with their core user; the PUT updated no row: a 500."""
    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    created = make_client(owner).post(f"{BASE}/users/{core_user.id}/{kind}", {"name": "A"}, format="json").json()
    url = f"{BASE}/users/{core_user.id}/{kind}/{created['id']}"
    with transaction.atomic():
        core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk))
        replace = run_meanwhile(request_later(make_client, owner, "put", url, {"name": "B"}))
    assert_problem(replace(), 404, "notFound")
    assert not Farm.objects.exists() and not Grower.objects.exists()


def test_a_deletion_arriving_while_an_operation_is_cropped_waits_and_deletes(
    owner, core_user, make_client, monkeypatch
):
    """A write that locks a row of the user (the operation) before it inserts rows of theirs: the deletion locked
    the user first, then waited for the operation, while the crop's foreign key check waited for the user: a
    deadlock, the DELETE a 500. Now the deletion is made again once the crop committed."""
    from fields.services import field_create
    from operations import tasks
    from operations.models import Operation
    from operations.services import operation_crop
    from tests.operations.helpers import grid_box, grid_table, processed_file

    needs_postgresql()
    field_create(core_user=core_user, id="whole", geometry=grid_box())
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=2))
    operation = Operation.objects.get()
    monkeypatch.setattr(tasks.operation_crop_process, "delay", lambda *args: None)
    with transaction.atomic():
        operation_crop(operation=Operation.objects.get(pk=operation.pk))
        deletion = run_meanwhile(request_later(make_client, owner, "delete", f"{USERS}/{core_user.id}"))
    assert deletion().status_code == 204
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not File.objects.exists()


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_a_field_change_after_its_core_user_was_deleted_is_a_404_or_done(owner, make_client, monkeypatch, method):
    """The user deleted between the view's read of the field and the service: reading the user then was a 500. Now a
    404 either way: the field is gone with its user (a deletion that finds it gone answers as one after it would)."""
    from fields import views

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    url = (
        f"{BASE}/users/{core_user.id}/fields/"
        + make_client(owner)
        .post(f"{BASE}/users/{core_user.id}/fields", {"geometry": square(10, 50)}, format="json")
        .json()["id"]
    )
    name = {"patch": "field_update", "delete": "field_delete"}[method]
    service = getattr(views.services, name)

    def after_the_user_went(**kwargs):
        core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk))
        return service(**kwargs)

    monkeypatch.setattr(views.services, name, after_the_user_went)
    response = request_later(make_client, owner, method, url, {"name": "x"} if method == "patch" else None)()
    assert_problem(response, 404, "notFound")


def test_a_link_for_the_external_id_of_a_user_being_deleted_makes_a_new_user(owner, make_client):
    """The endpoint makes the user of an externalId unless there is one: the one found was going, a 404."""
    needs_postgresql()
    user = CoreUserFactory(owner=owner, external_id="ext-1")
    body = {"externalId": "ext-1"}
    with transaction.atomic():
        core_user_delete(core_user=CoreUser.objects.get(pk=user.pk))
        link = run_meanwhile(
            request_later(make_client, owner, "post", "/services/widgets/api/magic-link/file-upload", body)
        )
    response = link()
    assert response.status_code == 201
    [made] = CoreUser.objects.all()
    assert made.external_id == "ext-1" and made.pk != user.pk and response.json()["coreUserId"] == str(made.pk)


def test_an_owner_deleted_while_a_change_is_announced_goes_with_the_announcement(owner, subscribe, webhook_receiver):
    """The announcement keeps the owner's webhooks until it commits; its deliveries were not among the rows the
    deletion had collected, and the deletion failed at commit (a 500 in the admin, the owner kept)."""
    from webhooks.models import Delivery, Webhook
    from webhooks.services import event_emit

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    with transaction.atomic():
        assert event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f1"}) == 1
        deletion = run_meanwhile(lambda: owner_delete(owner=type(owner).objects.get(pk=owner.pk)))
    deletion()
    assert not type(owner).objects.filter(pk=owner.pk).exists()
    assert not CoreUser.objects.exists() and not Webhook.objects.exists() and not Delivery.objects.exists()


def _field_of(owner, make_client, core_user) -> tuple[str, Field]:
    url = f"{BASE}/users/{core_user.id}/fields/north"
    created = make_client(owner).post(
        f"{BASE}/users/{core_user.id}/fields", {"id": "north", "geometry": square(10, 50)}, format="json"
    )
    assert created.status_code == 201
    return url, Field.objects.get(core_user=core_user)


def test_a_deletion_that_gives_way_in_a_deadlock_with_a_write_is_made_again(owner, make_client):
    """The deletion took the field (deleting it) and waits for the user a write keeps; the write, keeping the user,
    then waits for the field: a deadlock, the deletion waiting first, so the one PostgreSQL made give way, a 500.
    Now it is made again once the write had the field."""
    from platform_site.accounts.services import core_user_keep
    from platform_site.db import row_locked

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    _url, field = _field_of(owner, make_client, core_user)
    with transaction.atomic():
        core_user_keep(core_user.pk)  # a write under way (a field change keeps its user first)
        deletion = run_meanwhile(request_later(make_client, owner, "delete", f"{USERS}/{core_user.id}"))
        row_locked(Field, field.pk)  # the write now locks the field the deletion took
    assert deletion().status_code == 204
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not Field.objects.exists()


def test_a_write_that_gives_way_in_a_deadlock_with_a_deletion_is_a_503_to_send_again(owner, make_client):
    """The deletion took the field and then waits for the user; the write kept the user and waited for the field
    first, so it is the one PostgreSQL makes give way: a 503 `databaseBusy` with `Retry-After`, not a 500."""
    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    url, field = _field_of(owner, make_client, core_user)
    with transaction.atomic():
        Field.objects.select_for_update().filter(pk=field.pk).exists()  # the deletion took the field
        rename = run_meanwhile(request_later(make_client, owner, "patch", url, {"name": "Renamed"}))
        CoreUser.objects.select_for_update().filter(pk=core_user.pk).exists()  # and now waits for the user
    response = rename()
    assert_problem(response, 503, "databaseBusy")
    assert response["Retry-After"] == "1"
    assert Field.objects.get(pk=field.pk).name != "Renamed"


def test_a_deletion_goes_through_while_clients_keep_writing_under_the_user(owner, make_client):
    """Three clients renaming a field and replacing a farm back to back while the user is deleted: each write kept
    the user the deletion waited to delete, then waited for a row the deletion had taken, a deadlock a second. The
    deletion stalled for minutes and mostly failed (503 `databaseBusy` or 409, the user kept). Now the writes under
    way end first, those that come wait for the deletion, then find the user gone."""

    from django.db import connection

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    field_url, _field = _field_of(owner, make_client, core_user)
    farm = make_client(owner).post(f"{BASE}/users/{core_user.id}/farms", {"name": "Home"}, format="json").json()
    farm_url = f"{BASE}/users/{core_user.id}/farms/{farm['id']}"
    writes = [("patch", field_url), ("patch", field_url), ("put", farm_url)]
    stop, answers = threading.Event(), []

    def write(method: str, url: str) -> None:
        client = make_client(owner)
        client.raise_request_exception = False
        try:
            for n in range(100_000):
                if stop.is_set():
                    break
                answers.append(getattr(client, method)(url, {"name": f"name {n}"}, format="json").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=w) for w in writes]
    for thread in threads:
        thread.start()
    try:
        started = time.monotonic()
        while len(answers) < 30:  # every client is writing
            assert time.monotonic() - started < 120, f"the writers stopped: {answers}"
            threading.Event().wait(0.01)
        deletion = make_client(owner).delete(f"{USERS}/{core_user.id}")
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert deletion.status_code == 204, deletion.content[:300]
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not Farm.objects.exists()
    assert set(answers) <= {200, 404} and 404 in answers


def _behind_a_waiting_deletion(make_client, owner, core_user, write) -> tuple[object, dict]:
    """The deletion of `core_user` waits at its gate for a write under way; `write()` comes meanwhile (its own thread
    and connection). Returns the deletion's answer and `write`'s outcome: {"result": ...} or {"error": ...}."""
    import time

    from django.db import connection

    from tests.concurrency import _lock_waiters

    outcome = {}

    def run() -> None:
        try:
            outcome["result"] = write()
        except BaseException as error:  # noqa: BLE001 (the caller asserts it)
            outcome["error"] = error
        finally:
            connection.close()

    with transaction.atomic():
        core_user_keep(core_user.pk)  # a write under way: the deletion waits for it at the gate
        deletion = run_meanwhile(request_later(make_client, owner, "delete", f"{USERS}/{core_user.id}"))
        writing = threading.Thread(target=run)
        writing.start()
        deadline = time.monotonic() + 10
        while _lock_waiters() < 2 and writing.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)  # until the write waits too
    writing.join()
    return deletion(), outcome


def test_a_link_upload_arriving_while_the_user_is_deleted_is_the_links_410(owner, make_client):
    """The deletion waits at its gate for a write under way; an upload through a link comes. It locked its link,
    then queued at the gate behind the deletion, which then waited for that link: a deadlock, the upload's 503 page.
    It passes the gate before it locks the link now: the deletion goes first, and the link is found gone (410)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from conversion.models import Batch
    from magiclinks import services as links

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    link, _token = links.magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD)
    seen = MagicLink.objects.select_related("core_user").get(pk=link.pk)  # what the page resolved first
    upload = SimpleUploadedFile("f.zip", b"PK\x05\x06" + bytes(18))
    deletion, outcome = _behind_a_waiting_deletion(
        make_client, owner, core_user, lambda: links.link_upload(link=seen, provider="Other", upload=upload)
    )
    assert deletion.status_code == 204
    assert isinstance(outcome.get("error"), links.LinkUnavailable), outcome
    assert outcome["error"].status == 410
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not Batch.objects.exists()


def test_a_file_completed_while_its_user_is_deleted_waits_at_the_gate_and_finds_it_gone(owner, make_client):
    """The deletion waits at its gate for a write under way; a file of the user's finishes its conversion. It locked
    the file, then queued at the gate behind the deletion, which then waited for that file: a deadlock, which
    PostgreSQL broke by failing the completion (the deletion waited a second for it). It passes the gate before it
    locks the file now: the deletion goes first, and the completion finds the file gone."""
    from django.db import OperationalError

    from conversion import outputs
    from conversion import services as conversion
    from tests.operations.helpers import grid_table

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    file = File.objects.create(
        core_user=core_user, file_name="upload.zip", file_format="TEST", provider="Other", origin=FileOrigin.UPLOADED
    )
    produced = outputs.produce(file, grid_table(), clean=False)
    deletion, outcome = _behind_a_waiting_deletion(
        make_client, owner, core_user, lambda: conversion.file_complete(file, produced)
    )
    assert deletion.status_code == 204
    assert not isinstance(outcome.get("error"), OperationalError), outcome  # (a deadlock before)
    assert isinstance(outcome.get("error"), File.DoesNotExist), outcome
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not File.objects.exists()


def test_writes_of_one_user_pass_the_gate_together(owner, make_client):
    """The gate is taken shared by writes: a write under way keeps none of the user's other writes waiting (only a
    deletion waits for it)."""
    from tests.concurrency import _lock_waiters

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    with transaction.atomic():
        core_user_keep(core_user.pk)  # a write under way
        write = run_meanwhile(
            request_later(make_client, owner, "post", f"{BASE}/users/{core_user.id}/farms", {"name": "Farm"})
        )
        assert _lock_waiters() == 0
    assert write().status_code == 201


def test_a_field_deletion_arriving_while_the_users_rows_are_being_deleted_is_a_404(owner, make_client):
    """A write that locks its user (a field's deletion) passes the gate too: it waits for the deletion and finds
    the field gone. Past the gate it would lock the user the deletion is to delete last, then wait for the field the
    deletion had taken: a deadlock, a 503."""
    from platform_site.accounts.signals import core_user_deleting

    needs_postgresql()
    core_user = CoreUserFactory(owner=owner)
    url = f"{BASE}/users/{core_user.id}/fields/north"
    created = make_client(owner).post(url.rsplit("/", 1)[0], {"id": "north", "geometry": square(10, 50)}, format="json")
    assert created.status_code == 201, created.content[:300]
    field = Field.objects.get(core_user=core_user)
    seen = {}

    def meanwhile(sender, core_user, **kwargs):
        Field.objects.select_for_update().filter(pk=field.pk).exists()  # the deletion holds the field
        if "answer" not in seen:
            seen["answer"] = run_meanwhile(request_later(make_client, owner, "delete", url))

    core_user_deleting.connect(meanwhile, dispatch_uid="test-field-deletion-meanwhile")
    try:
        assert core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk)) is True
    finally:
        core_user_deleting.disconnect(dispatch_uid="test-field-deletion-meanwhile")
    assert_problem(seen["answer"](), 404, "notFound")
    assert not CoreUser.objects.filter(pk=core_user.pk).exists()
