"""The broker (Redis) down while clients write: what committed is answered as committed (not a 500 the client
would retry into a 409), nothing committed is undone (an upload's zip was deleted under its recorded batch), the
sends the broker refused are kept in the outbox and sent by its task (every minute) once the broker is back, as the
same sends (no attempt counted), and the sweeps send again what even the outbox could not keep."""

import io
import os
import socket
import threading
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.db import OperationalError, connections
from django.utils import timezone
from rest_framework.test import APIClient

from conversion.models import Batch, BatchStatus, DatasetStatus, File
from conversion.services import batch_open, conversion_sweep
from platform_site.celery import app
from platform_site.outbox.models import OutboxTask
from platform_site.outbox.tasks import outbox_send
from tests.conftest import set_eager
from tests.fields.helpers import square
from tests.operations.helpers import grid_table, processed_file
from webhooks.models import Delivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

UNREACHABLE = "redis://127.0.0.1:9/0"  # the discard port: nothing listens
BROKER_VARIABLE = "CELERY_BROKER_URL"


def _broker(url: str | None) -> None:
    """Point Celery at `url` (None: back at the configured broker). Through the environment, which Celery reads
    before any setting (`app.conf.broker_url = url` was read back as the configured broker: the tasks went to the
    working one, and these tests never met a broker down). Its connection and producer pools are found again by
    address on first use."""
    if url is None:
        os.environ.pop(BROKER_VARIABLE, None)
    else:
        os.environ[BROKER_VARIABLE] = url
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down(settings):
    """A real broker address where nothing answers; tasks are sent to it, not run in the test. Calling what it
    yields brings the broker back (the one the suite runs on; tasks run in the test again)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # the receiver is on loopback
    before = os.environ.get(BROKER_VARIABLE)

    def back() -> None:
        set_eager(True)
        _broker(before)

    _broker(UNREACHABLE)
    assert app.conf.broker_url == UNREACHABLE
    set_eager(False)
    yield back
    back()


def _upload(api_client, core_user, samples_dir) -> Batch:
    upload = io.BytesIO(
        (samples_dir / "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip").read_bytes()
    )
    upload.name = "harvest.zip"
    answer = api_client.post(
        f"/services/operations/api/batch?coreUserId={core_user.pk}&provider=Other", {"file": upload}
    )
    assert answer.status_code == 201, answer.content
    return Batch.objects.get(pk=answer.json()["id"])


def _webhook_and_field(api_client, core_user, webhook_receiver) -> None:
    """A webhook on `fieldCreated`, then a field: one delivery recorded while the broker is down."""
    hook = api_client.post(
        "/services/alerts/api/alerts/webhooks",
        {"name": "hook", "secret": "a-secret-of-some-length", "url": webhook_receiver.url, "events": ["fieldCreated"]},
        format="json",
    )
    assert hook.status_code == 201, hook.content
    field = api_client.post(
        f"/services/fields/api/users/{core_user.pk}/fields",
        {"id": "north", "geometry": square(-1.0, 47.0)},
        format="json",
    )
    assert field.status_code == 201, field.content


def _kept() -> list[tuple[str, list]]:
    return list(OutboxTask.objects.order_by("pk").values_list("task_name", "args"))


def test_writes_that_commit_while_the_broker_is_down_answer_as_committed(
    broker_down, api_client, core_user, webhook_receiver, samples_dir
):
    _webhook_and_field(api_client, core_user, webhook_receiver)
    assert Delivery.objects.count() == 1  # recorded: the webhook sweep sends it once the broker is back

    batch = _upload(api_client, core_user, samples_dir)
    assert batch.status == BatchStatus.RECEIVED and default_storage.exists(batch.upload.name)

    # Back up: what the sweep sends again converts from the kept zip.
    set_eager(True)
    batch_open(str(batch.pk))
    batch = Batch.objects.get(pk=batch.pk)
    assert batch.status == BatchStatus.PROCESSED, (
        batch.status,
        batch.status_details,
        list(batch.datasets.values_list("id", "status", "attempts", "message")),
    )


def test_a_merge_accepted_while_the_broker_is_down_is_completed_by_the_sweep_once_it_is_back(
    broker_down, api_client, core_user, settings
):
    """The sweep failed such a merge ("processing did not finish in time"): the client had to merge again."""
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-01T14:00:00", seed=2))
    answer = api_client.post(
        "/services/operations/api/files/merge", {"ids": [str(first.pk), str(second.pk)]}, format="json"
    )
    assert answer.status_code == 201, answer.content
    merged_id = answer.json()["id"]

    # Back up: once the merge has waited longer than the stuck limit, the sweep sends it again.
    set_eager(True)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    File.objects.filter(pk=merged_id).update(updated_time=long_ago)
    assert conversion_sweep() == {"resent": 1, "failed": 0}
    body = api_client.get(f"/services/operations/api/files/{merged_id}").json()
    assert body["status"] == "processed", body
    assert body["pointCount"] == 2 * len(grid_table())


def test_an_upload_accepted_while_the_broker_is_down_is_converted_by_the_outbox_once_it_is_back(
    broker_down, api_client, core_user, webhook_receiver, samples_dir
):
    """It sat RECEIVED until the conversion sweep took it, an hour later, counting the re-send as an attempt."""
    # Given a webhook, whose delivery row is its own outbox (the deliveries sweep sends it)
    _webhook_and_field(api_client, core_user, webhook_receiver)
    # When an upload is accepted while the broker is down
    batch = _upload(api_client, core_user, samples_dir)
    assert _kept() == [("conversion.tasks.batch_open", [str(batch.pk)])]
    assert (batch.status, batch.attempts) == (BatchStatus.RECEIVED, 1)

    # Then one run of the outbox's task once the broker is back converts it, the send counted once
    broker_down()
    assert outbox_send() == {"sent": 1, "kept": 0, "dropped": 0}
    batch = Batch.objects.get(pk=batch.pk)
    assert (batch.status, batch.attempts) == (BatchStatus.PROCESSED, 1), batch.status_details
    assert set(batch.datasets.values_list("status", "attempts")) == {(DatasetStatus.DONE, 1)}
    assert _kept() == []


def test_a_send_the_broker_refuses_again_keeps_its_row(broker_down, api_client, core_user, samples_dir):
    batch = _upload(api_client, core_user, samples_dir)

    # Still down: the run sends nothing and keeps the row, free for the next run
    assert outbox_send() == {"sent": 0, "kept": 1, "dropped": 0}
    assert list(OutboxTask.objects.values_list("task_name", "lease_until")) == [("conversion.tasks.batch_open", None)]
    assert (Batch.objects.get(pk=batch.pk).status, Batch.objects.get(pk=batch.pk).attempts) == (BatchStatus.RECEIVED, 1)

    broker_down()
    assert outbox_send() == {"sent": 1, "kept": 0, "dropped": 0}
    batch = Batch.objects.get(pk=batch.pk)
    assert (batch.status, batch.attempts) == (BatchStatus.PROCESSED, 1), batch.status_details


def test_a_merge_accepted_while_the_broker_is_down_is_completed_by_the_outbox_once_it_is_back(
    broker_down, api_client, core_user
):
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-01T14:00:00", seed=2))
    answer = api_client.post(
        "/services/operations/api/files/merge", {"ids": [str(first.pk), str(second.pk)]}, format="json"
    )
    assert answer.status_code == 201, answer.content
    merged_id = answer.json()["id"]
    grouping = "operations.tasks.operation_file_group"  # (the two files' grouping, sent as they were processed)
    assert _kept() == [
        (grouping, [str(first.pk)]),
        (grouping, [str(second.pk)]),
        ("conversion.tasks.file_merge_process", [merged_id]),
    ]

    broker_down()
    assert outbox_send() == {"sent": 3, "kept": 0, "dropped": 0}
    body = api_client.get(f"/services/operations/api/files/{merged_id}").json()
    assert (body["status"], body["pointCount"]) == ("processed", 2 * len(grid_table())), body
    assert File.objects.get(pk=merged_id).sweep_attempts == 0  # the sweep's re-sends: none


def test_kept_sends_of_work_deleted_meanwhile_are_harmless(broker_down, api_client, core_user, samples_dir):
    # Given an upload and a merge accepted while the broker is down, and a send of a task an upgrade removed
    _upload(api_client, core_user, samples_dir)
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-01T14:00:00", seed=2))
    merge = api_client.post(
        "/services/operations/api/files/merge", {"ids": [str(first.pk), str(second.pk)]}, format="json"
    )
    assert merge.status_code == 201, merge.content
    OutboxTask.objects.create(task_name="conversion.tasks.no_longer_there", args=["x"])
    # When their core user is deleted before the broker is back
    assert api_client.delete(f"/services/usermanagement/api/users/{core_user.pk}").status_code == 204
    assert not Batch.objects.exists() and not File.objects.exists()

    # Then the outbox sends them (the upload, the merge and its files' grouping), they find nothing to do, and
    # nothing is kept
    broker_down()
    assert outbox_send() == {"sent": 4, "kept": 0, "dropped": 1}
    assert _kept() == []
    assert not Batch.objects.exists() and not File.objects.exists()


def test_a_send_the_outbox_cannot_keep_is_left_to_the_sweeps(
    broker_down, api_client, core_user, samples_dir, monkeypatch, caplog
):
    """The database failing too (here: its write of the outbox row) changes nothing of the answer: logged as before."""

    def refused(*args, **kwargs):
        raise OperationalError("the database is away")

    monkeypatch.setattr(OutboxTask.objects, "create", refused)
    batch = _upload(api_client, core_user, samples_dir)
    assert batch.status == BatchStatus.RECEIVED
    assert "not queued (broker unavailable); the sweeps will see to it" in caplog.text


def test_the_outbox_task_runs_every_minute_in_beat():
    entry = app.conf.beat_schedule["outbox-send"]
    assert (app.tasks[entry["task"]], entry["schedule"]) == (outbox_send, 60.0)


def test_health_says_degraded_while_the_broker_is_down_and_sends_wait(broker_down, api_client, core_user, samples_dir):
    """A monitor's check, without a login: the API still serves (200: a load balancer keeps it), and says what
    waits."""
    anonymous = APIClient()
    answer = anonymous.get("/health")
    assert (answer.status_code, answer["Cache-Control"]) == (200, "no-store")
    assert answer.json() == {"status": "degraded", "database": "ok", "broker": "unavailable", "outbox": "empty"}

    _upload(api_client, core_user, samples_dir)  # its conversion's send is kept in the outbox
    assert anonymous.get("/health").json()["outbox"] == "waiting"

    broker_down()  # back up (the suite's broker, its tasks run in the test), and the outbox sent
    outbox_send()
    assert anonymous.get("/health").json() == {
        "status": "ok",
        "database": "ok",
        "broker": "embedded",
        "outbox": "empty",
    }


def test_health_finds_the_broker_workers_use(settings):
    if not app.conf.broker_url.startswith("redis://"):
        pytest.skip("the suite's broker is Redis on PostgreSQL's run only")
    set_eager(False)
    try:
        answer = APIClient().get("/health")
    finally:
        set_eager(True)
    assert answer.json() == {"status": "ok", "database": "ok", "broker": "ok", "outbox": "empty"}


@pytest.fixture
def broker_silent(broker_down):
    """A broker address that takes connections and never answers (a hung Redis, or a proxy in front of one that is
    gone): the connections are held open, unread, until the test ends."""
    held: list[socket.socket] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def hold() -> None:
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    _broker(f"redis://127.0.0.1:{listener.getsockname()[1]}/0")
    yield held
    done.set()
    holder.join()
    for connection in [*held, listener]:
        connection.close()


def test_an_upload_accepted_while_the_broker_takes_connections_and_never_answers_is_answered_and_kept(
    broker_silent, api_client, core_user, samples_dir
):
    """The send waited for Redis's answer without a limit: the upload (committed) was never answered, and the
    requests that followed held every server thread until the whole API stopped answering (found by the crash
    review). Each exchange with the broker now gives up after CELERY_BROKER_TIMEOUT_SECONDS, and the send is kept."""
    answers: list[Batch] = []

    def send() -> None:
        try:
            answers.append(_upload(api_client, core_user, samples_dir))
        finally:
            connections.close_all()  # (this thread's own: left open, it held the test database)

    upload = threading.Thread(target=send, daemon=True)
    upload.start()
    upload.join(timeout=300)  # (a limit only so that a hang fails the test instead of holding the suite)
    assert not upload.is_alive(), "the upload is still waiting for the broker"
    assert broker_silent, "the broker's address was never asked"
    [batch] = answers
    assert (batch.status, batch.attempts) == (BatchStatus.RECEIVED, 1)
    assert _kept() == [("conversion.tasks.batch_open", [str(batch.pk)])]


def test_once_the_broker_refused_a_send_the_next_ones_are_kept_without_trying_for_a_moment(
    broker_silent, api_client, core_user, monkeypatch
):
    """A write queuing several tasks paid the broker's wait once for each: CELERY_BROKER_TIMEOUT_SECONDS apiece when
    Redis takes connections and never answers (a merge of two fresh files: three sends, three waits)."""
    from platform_site import celery

    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))  # its grouping: tried, refused
    asked = len(broker_silent)
    assert asked >= 1
    second = processed_file(core_user, grid_table(start="2024-09-01T14:00:00", seed=2))
    merge = api_client.post(
        "/services/operations/api/files/merge", {"ids": [str(first.pk), str(second.pk)]}, format="json"
    )
    assert merge.status_code == 201, merge.content
    # Not asked again, and every send kept
    assert len(broker_silent) == asked
    grouping = "operations.tasks.operation_file_group"
    assert _kept() == [
        (grouping, [str(first.pk)]),
        (grouping, [str(second.pk)]),
        ("conversion.tasks.file_merge_process", [merge.json()["id"]]),
    ]

    # Once the pause is over, the broker is asked again
    monkeypatch.setattr(celery._BrokerRefused, "until", 0.0)
    processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=3))
    assert len(broker_silent) > asked
    assert len(_kept()) == 4


def test_the_pause_after_a_refusal_lasts_its_10_seconds_from_the_refusal_and_no_longer(broker_silent, monkeypatch):
    """A send kept during the pause must not make it longer, and the pause ends 10 s after the refusal: a pause
    pushed on by each kept send, or measured on another clock, never tried the broker again once it was back."""
    from types import SimpleNamespace

    from platform_site import celery
    from platform_site.celery import send_on_commit
    from platform_site.outbox.tasks import outbox_send as task

    now = [1000.0]
    monkeypatch.setattr(celery, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(celery._BrokerRefused, "until", 0.0)
    send_on_commit(task, outbox=False)  # tried: refused at t=1000
    asked = len(broker_silent)
    assert asked >= 1
    now[0] = 1009.0
    send_on_commit(task, outbox=False)  # within the pause: not tried
    assert len(broker_silent) == asked
    now[0] = 1010.5  # 10.5 s after the refusal (1.5 s after the kept send)
    send_on_commit(task, outbox=False)
    assert len(broker_silent) > asked
