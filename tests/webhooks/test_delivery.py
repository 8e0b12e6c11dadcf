"""Deliveries to a real HTTP receiver on loopback."""

import base64
import hashlib
import hmac
import json
import re
import socketserver
import threading
import time
import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tests.factories import CoreUserFactory
from tests.receiver import unused_port
from tests.tenancy import assert_problem
from webhooks.models import Delivery, DeliveryAttempt
from webhooks.services import deliveries_due, delivery_attempt, event_emit
from webhooks.tasks import webhooks_deliveries_sweep

URL = "/services/alerts/api/alerts/webhooks"
FAILED = f"{URL}/failed-calls"
# (all on the embedded SpatiaLite default too: `make run` delivers webhooks through its in-process worker)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def emit(core_user, event="fieldCreated", **payload):
    with transaction.atomic():
        return event_emit(type=event, core_user=core_user, payload=payload or {"fieldId": "f-1"})


def test_a_registered_webhook_receives_the_signed_event(owner, core_user, subscribe, webhook_receiver):
    subscribe(owner, webhook_receiver, ["fieldCreated"], secret="top-secret")
    emit(core_user, fieldId="f-42")
    [request] = webhook_receiver.wait_for(1)
    expected = base64.b64encode(hmac.new(b"top-secret", request.body, hashlib.sha256).digest()).decode()
    assert request.headers["X-Core-Signature"] == expected
    assert request.headers["Content-Type"] == "application/json"
    assert b" " not in request.body  # compact JSON
    event = json.loads(request.body)
    assert event["type"] == "fieldCreated" and event["coreUserId"] == str(core_user.id) and event["fieldId"] == "f-42"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["timestamp"])
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED
    # The delivery's id is in the signed body too (the header is not signed): a replayed body is a repeat
    assert event["deliveryId"] == request.headers["X-Core-Delivery"] == str(Delivery.objects.get().pk)


def test_each_body_names_its_own_delivery(owner, core_user, subscribe, webhook_receiver):
    # Given a webhook listening to two events, and a payload that brings a deliveryId of its own
    subscribe(owner, webhook_receiver, ["fieldCreated", "fieldUpdated"])
    with transaction.atomic():
        event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f-1", "deliveryId": "forged"})
        event_emit(type="fieldUpdated", core_user=core_user, payload={"fieldId": "f-1"})
    requests = webhook_receiver.wait_for(2)
    ids = [json.loads(r.body)["deliveryId"] for r in requests]
    # Then each body carries the id of its delivery, never one a payload brought
    assert sorted(ids) == sorted(r.headers["X-Core-Delivery"] for r in requests)
    assert len(set(ids)) == 2 and "forged" not in ids


def test_only_subscribed_events_are_sent(owner, core_user, subscribe, webhook_receiver):
    subscribe(owner, webhook_receiver, ["machineCreated"])
    assert emit(core_user, "fieldCreated") == 0
    emit(core_user, "machineCreated", machineId="m-1")
    webhook_receiver.wait_for(2, timeout=0.5)
    assert [e["type"] for e in webhook_receiver.events()] == ["machineCreated"]


def test_nothing_is_sent_for_a_rolled_back_change(owner, core_user, subscribe, webhook_receiver):
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    with pytest.raises(RuntimeError), transaction.atomic():
        event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f-1"})
        raise RuntimeError("the change failed")
    webhooks_deliveries_sweep.delay()
    assert webhook_receiver.wait_for(1, timeout=0.5) == []
    assert not Delivery.objects.exists()


def test_a_receiver_that_fails_then_succeeds_gets_the_event_on_a_retry(
    owner, core_user, subscribe, webhook_receiver, settings, api_client
):
    settings.WEBHOOK_RETRY_SCHEDULE = [0, 0]
    webhook_receiver.statuses = [500, 200]
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    assert len(webhook_receiver.wait_for(1)) == 1
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.PENDING, 1)

    assert webhooks_deliveries_sweep.delay() is not None
    requests = webhook_receiver.wait_for(2)
    assert len(requests) == 2 and requests[0].body == requests[1].body
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.SUCCEEDED, 2)

    [failed] = api_client.get(FAILED).json()
    assert failed["status"] == 500 and failed["willRetry"] is True and failed["attempt"] == 1
    assert failed["response"] == "answered 500" and failed["requestBody"] == requests[0].body.decode()
    assert failed["webhookId"] == str(delivery.webhook_id) and failed["url"] == webhook_receiver.url
    # Both attempts name the delivery, so the receiver can tell the retry of one it took from a new event
    assert [r.headers["X-Core-Delivery"] for r in requests] == [str(delivery.pk)] * 2 == [failed["deliveryId"]] * 2
    emit(core_user)
    [*_, another] = webhook_receiver.wait_for(3)
    assert another.headers["X-Core-Delivery"] not in ("", str(delivery.pk))


def test_a_receiver_that_never_answers_ends_in_failed_calls(
    owner, core_user, subscribe, webhook_receiver, settings, api_client
):
    settings.WEBHOOK_RETRY_SCHEDULE = [0]
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    webhook_receiver.hang = 1.5
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    webhooks_deliveries_sweep.delay()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.FAILED, 2)
    assert deliveries_due() == []
    calls = api_client.get(FAILED).json()
    assert [c["attempt"] for c in calls] == [2, 1]
    assert calls[0]["willRetry"] is False and calls[1]["willRetry"] is True
    # Said as decisions.md says it (it was "ReadTimeout: PinnedHTTPConnectionPool(host=...): Read timed out...")
    assert all(c["status"] is None and c["connectionError"] == "Timeout: no answer within 0.3 s" for c in calls)


class _Misbehaving(socketserver.ThreadingTCPServer):
    """A receiver that reads the post, then closes the connection without an answer or answers something not HTTP."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answer: bytes):
        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                self.rfile.read1(65536)
                self.wfile.write(answer)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"


@pytest.mark.parametrize(
    "receiver, said",
    [
        ("refusing", "Connection refused"),
        ("closing", "Connection closed without an answer"),
        ("not-http", "Not an HTTP answer"),
        ("plain-http-for-https", "TLS: handshake failed (WRONG_VERSION_NUMBER)"),
    ],
)
def test_a_failed_connection_is_said_plainly(owner, core_user, subscribe, settings, api_client, receiver, said):
    """The attempt's `connectionError` says what went wrong, not requests' wrappers (it was "ConnectionError:
    PinnedHTTPConnectionPool(host='127.0.0.1', port=...): Max retries exceeded with url: /hook (Caused by
    NewConnectionError(...: Failed to establish a new connection: [Errno 111] Connection refused))")."""
    settings.WEBHOOK_RETRY_SCHEDULE = [3600]
    server = _Misbehaving(b"" if receiver == "closing" else b"hello there\r\n\r\n")
    url = {
        "refusing": f"http://127.0.0.1:{unused_port()}/hook",
        "plain-http-for-https": server.url.replace("http:", "https:"),
    }.get(receiver, server.url)
    try:
        subscribe(owner, SimpleNamespace(url=url), ["fieldCreated"])
        emit(core_user)
        [call] = api_client.get(FAILED).json()
        assert (call["status"], call["connectionError"], call["willRetry"]) == (None, said, True)
    finally:
        server.shutdown()
        server.server_close()


def test_failed_calls_are_filtered_by_webhook_and_delivery(
    owner, core_user, subscribe, settings, api_client, other_owner, other_client
):
    """With several webhooks, the failed calls of one (`webhookId`) or of one delivery (`deliveryId`); another
    owner's ids match nothing of theirs, and a malformed id is a 400."""
    settings.WEBHOOK_RETRY_SCHEDULE = [3600]
    down = SimpleNamespace(url=f"http://127.0.0.1:{unused_port()}/hook")
    first = subscribe(owner, down, ["fieldCreated"])
    second = subscribe(owner, down, ["machineCreated"])
    theirs = subscribe(other_owner, down, ["fieldCreated"])
    emit(core_user)
    emit(core_user)
    emit(core_user, "machineCreated", machineId="m-1")
    emit(CoreUserFactory(owner=other_owner))
    assert len(api_client.get(FAILED).json()) == 3
    by_first = api_client.get(FAILED, {"webhookId": str(first.id)}).json()
    assert len(by_first) == 2 and {c["webhookId"] for c in by_first} == {str(first.id)}
    [by_second] = api_client.get(FAILED, {"webhookId": str(second.id)}).json()
    assert by_second["event"] == "machineCreated"
    [one] = api_client.get(FAILED, {"deliveryId": by_first[1]["deliveryId"]}).json()
    assert one == by_first[1]
    assert api_client.get(FAILED, {"webhookId": str(theirs.id)}).json() == []
    [their_call] = other_client.get(FAILED).json()
    assert api_client.get(FAILED, {"deliveryId": their_call["deliveryId"]}).json() == []
    assert_problem(api_client.get(FAILED, {"webhookId": "not-a-uuid"}), 400, "validation")


class _Trickle(socketserver.ThreadingTCPServer):
    """A receiver that reads the post, then sends an answer a byte at a time, each well within the read timeout."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, pause: float):
        self.pause, self.request_lines = pause, []
        server = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                server.request_lines.append(self.rfile.readline().decode("latin-1").strip())
                self.rfile.read1(65536)
                try:
                    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: ............\r\nContent-Length: 0\r\n\r\n":
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(server.pause)
                except OSError:  # the client gave up
                    pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"


@pytest.mark.parametrize(
    "proxy_scheme, url, request_line",
    [
        (None, None, "POST /hook"),
        ("http", "http://hooks.example.test/hook", "POST http://hooks.example.test/hook"),
        ("https", "https://hooks.example.test/hook", "CONNECT hooks.example.test:443"),
    ],
    ids=["direct", "http-proxy", "https-proxy"],
)
def test_a_receiver_that_answers_a_byte_at_a_time_gets_one_post_with_a_deadline(
    owner, core_user, subscribe, settings, api_client, monkeypatch, proxy_scheme, url, request_line
):
    """Each read stayed within the timeout, so the post lasted as long as the receiver liked: the delivery's lease
    ran out under it and it was posted again while the first post was still open. The same through a proxy from
    the environment (used while private URLs are allowed): its connection escaped the deadline, so a proxy
    answering a byte at a time (or opening its tunnel so) held the post as long as it liked."""
    settings.WEBHOOK_RETRY_SCHEDULE = [3600]
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.3
    trickle = _Trickle(pause=0.1)  # the whole answer (or the tunnel's): about 6 s
    for name in ("no", "all", "http", "https"):
        monkeypatch.delenv(f"{name}_proxy", raising=False)
        monkeypatch.delenv(f"{name.upper()}_PROXY", raising=False)
    if proxy_scheme is not None:
        monkeypatch.setenv(f"{proxy_scheme.upper()}_PROXY", trickle.url.removesuffix("/hook"))
    try:
        subscribe(owner, SimpleNamespace(url=url or trickle.url), ["fieldCreated"])
        emit(core_user)
        webhooks_deliveries_sweep.delay()
        delivery = Delivery.objects.get()
        assert (delivery.status, delivery.attempts) == (Delivery.Status.PENDING, 1)
        assert [line.rsplit(" ", 1)[0] for line in trickle.request_lines] == [request_line]  # one post, this way
        [call] = api_client.get(FAILED).json()
        assert call["connectionError"] == "Timeout: no complete answer within 0.6 s" and call["willRetry"] is True
        assert call["durationMs"] < 3000
    finally:
        trickle.shutdown()
        trickle.server_close()


def test_only_the_latest_failed_attempt_says_when_the_next_one_is(
    owner, core_user, subscribe, webhook_receiver, settings, api_client
):
    """The retry after attempt 1 was attempt 2: attempt 1 shows no `nextAttemptAt` (it showed attempt 3's time)."""
    settings.WEBHOOK_RETRY_SCHEDULE = [0, 3600]
    webhook_receiver.statuses = [500, 500]
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    webhooks_deliveries_sweep.delay()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.PENDING, 2)
    calls = api_client.get(FAILED).json()
    assert [(c["attempt"], c["willRetry"]) for c in calls] == [(2, True), (1, True)]
    assert "nextAttemptAt" in calls[0] and "nextAttemptAt" not in calls[1]
    assert calls[0]["nextAttemptAt"] > calls[0]["createdAt"]


def test_each_failed_call_names_the_url_its_attempt_was_posted_to(
    owner, core_user, subscribe, webhook_receiver, settings, api_client
):
    """A webhook's URL changed (in the admin) while a delivery waits for its retry: the retry goes to the new URL,
    and each failed call still names where its own attempt went (all named the webhook's current URL)."""
    from tests.receiver import Receiver, start_receiver

    settings.WEBHOOK_RETRY_SCHEDULE = [0, 0]
    webhook_receiver.statuses = [500]
    moved = Receiver()
    moved.statuses = [503, 200]
    server = start_receiver(moved)
    try:
        webhook = subscribe(owner, webhook_receiver, ["fieldCreated"])
        emit(core_user)
        assert len(webhook_receiver.wait_for(1)) == 1
        webhook.url = moved.url
        webhook.save(update_fields=["url"])
        webhooks_deliveries_sweep.delay()
        assert len(moved.wait_for(1)) == 1
        calls = api_client.get(FAILED).json()
        assert [(c["attempt"], c["status"], c["url"]) for c in calls] == [
            (2, 503, moved.url),
            (1, 500, webhook_receiver.url),
        ]
        assert moved.url != webhook_receiver.url
        # An attempt recorded before the URL was kept with it names the webhook's URL
        DeliveryAttempt.objects.filter(number=1).update(url="")
        assert [c["url"] for c in api_client.get(FAILED).json()] == [moved.url, moved.url]
    finally:
        server.shutdown()
        server.server_close()


def test_an_answer_with_nul_characters_is_recorded_without_them(
    owner, core_user, subscribe, webhook_receiver, settings, api_client
):
    """PostgreSQL stores no NUL in text: the attempt was lost (and the event sent again every lease, forever)."""
    settings.WEBHOOK_RETRY_SCHEDULE = []
    webhook_receiver.statuses = [500]
    webhook_receiver.answer = b'{"ok":\x00false}\x00'
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.FAILED, 1)
    [call] = api_client.get(FAILED).json()
    assert (call["status"], call["response"]) == (500, '{"ok":false}')


class _ChunkedError(socketserver.ThreadingTCPServer):
    """A receiver answering 500 with a chunked body sent in two pieces, as streaming servers do."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, parts: list[bytes]):
        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                self.rfile.readline()
                self.rfile.read1(65536)
                self.wfile.write(b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n")
                for part in parts:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.flush()
                    time.sleep(0.05)
                self.wfile.write(b"0\r\n\r\n")

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"


def test_a_chunked_answer_is_kept_whole_with_the_failed_call(owner, core_user, subscribe, settings, api_client):
    """Only its first chunk was kept: "error: " of "error: database is down"."""
    settings.WEBHOOK_RETRY_SCHEDULE = []
    receiver = _ChunkedError([b"error: ", b"database is down"])
    try:
        subscribe(owner, receiver, ["fieldCreated"])
        emit(core_user)
    finally:
        receiver.shutdown()
        receiver.server_close()
    [call] = api_client.get(FAILED).json()
    assert (call["status"], call["response"]) == (500, "error: database is down")


def test_redirects_are_not_followed(owner, core_user, subscribe, webhook_receiver, settings):
    from tests.receiver import Receiver, start_receiver

    elsewhere = Receiver()
    server = start_receiver(elsewhere)
    try:
        settings.WEBHOOK_RETRY_SCHEDULE = []
        webhook_receiver.statuses = [307]  # (a 307 would repeat the POST, body and signature, at the new place)
        webhook_receiver.headers = {"Location": elsewhere.url}
        subscribe(owner, webhook_receiver, ["fieldCreated"])
        emit(core_user)
        assert len(webhook_receiver.wait_for(1)) == 1
        assert elsewhere.wait_for(1, timeout=0.3) == []
    finally:
        server.shutdown()
        server.server_close()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED
    assert [a.status_code for a in delivery.attempt_log.all()] == [307]


def test_a_deleted_webhook_receives_nothing_more(owner, core_user, subscribe, webhook_receiver, settings, api_client):
    settings.WEBHOOK_RETRY_SCHEDULE = [0, 0]
    webhook_receiver.statuses = [500]
    webhook = subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    assert len(webhook_receiver.wait_for(1)) == 1
    assert api_client.delete(f"{URL}/{webhook.id}").status_code == 204
    emit(core_user)
    webhooks_deliveries_sweep.delay()
    assert len(webhook_receiver.wait_for(2, timeout=0.5)) == 1
    assert not Delivery.objects.exists()


def test_a_delivery_is_posted_once_even_if_its_task_runs_twice(owner, core_user, subscribe, webhook_receiver):
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    delivery = Delivery.objects.get()
    assert delivery_attempt(delivery.pk) is None
    assert len(webhook_receiver.wait_for(2, timeout=0.3)) == 1


def test_a_delivery_another_worker_is_posting_is_not_posted_again(
    owner, core_user, subscribe, webhook_receiver, monkeypatch
):
    """Two tasks of one delivery (a retry queued while the first still posts): the second finds it held."""
    from webhooks import tasks
    from webhooks.services import delivery_claim

    subscribe(owner, webhook_receiver, ["fieldCreated"])
    monkeypatch.setattr(tasks.webhooks_delivery_send, "delay", lambda *args: None)  # sent below, by hand
    emit(core_user)
    delivery = Delivery.objects.get()
    assert delivery_claim(delivery.pk) is not None  # a worker holds it, its post under way
    assert delivery_attempt(delivery.pk) is None
    assert webhook_receiver.wait_for(1, timeout=0.3) == []
    assert Delivery.objects.get().status == Delivery.Status.PENDING


def test_a_delivery_whose_webhook_is_deleted_between_its_claim_and_its_read_is_not_attempted(
    owner, core_user, subscribe, webhook_receiver, monkeypatch
):
    """The claim and the read are two statements: a webhook deleted between them (its deliveries with it) made the
    task fail with DoesNotExist."""
    from django.db import connection

    from webhooks import tasks
    from webhooks.models import Webhook

    webhook = subscribe(owner, webhook_receiver, ["fieldCreated"])
    monkeypatch.setattr(tasks.webhooks_delivery_send, "delay", lambda *args: None)  # sent below, by hand
    emit(core_user)
    delivery = Delivery.objects.get()
    deleted = []

    def delete_after_the_claim(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not deleted and sql.startswith("UPDATE") and "lease_until" in sql:
            deleted.append(Webhook.objects.filter(pk=webhook.pk).delete())  # (autocommit: as another request would)
        return result

    with connection.execute_wrapper(delete_after_the_claim):
        assert delivery_attempt(delivery.pk) is None
    assert deleted and not Delivery.objects.exists()
    assert webhook_receiver.wait_for(1, timeout=0.3) == []


def test_a_delivery_held_by_a_dead_worker_is_picked_up_by_the_sweep(owner, core_user, subscribe, webhook_receiver):
    from datetime import timedelta

    from django.utils import timezone

    subscribe(owner, webhook_receiver, ["fieldCreated"])
    with transaction.atomic():
        event_emit(type="fieldCreated", core_user=core_user, payload={})
        # The worker that claimed it died before posting: its lease ran out.
        Delivery.objects.update(lease_until=timezone.now() - timedelta(seconds=1))
    webhook_receiver.received.clear()
    Delivery.objects.update(status=Delivery.Status.PENDING, lease_until=timezone.now() - timedelta(seconds=1))
    assert webhooks_deliveries_sweep.delay() is not None
    assert len(webhook_receiver.wait_for(1)) == 1
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_another_owner_never_receives_or_sees_the_first_owners_events(
    owner, other_owner, core_user, subscribe, webhook_receiver, settings, make_client
):
    from tests.receiver import Receiver, start_receiver

    other_receiver = Receiver(statuses=[500])
    server = start_receiver(other_receiver)
    try:
        settings.WEBHOOK_RETRY_SCHEDULE = []
        webhook_receiver.statuses = [500]
        subscribe(owner, webhook_receiver, ["fieldCreated"])
        subscribe(other_owner, other_receiver, ["fieldCreated"])
        emit(core_user)
        assert len(webhook_receiver.wait_for(1)) == 1
        assert other_receiver.wait_for(1, timeout=0.3) == []
        emit(CoreUserFactory(owner=other_owner))
        assert len(other_receiver.wait_for(1)) == 1
        assert len(webhook_receiver.received) == 1
        mine = make_client(owner).get(FAILED).json()
        theirs = make_client(other_owner).get(FAILED).json()
        assert {c["url"] for c in mine} == {webhook_receiver.url}
        assert {c["url"] for c in theirs} == {other_receiver.url}
    finally:
        server.shutdown()
        server.server_close()


def test_failed_calls_are_paged_and_validated(api_client):
    response = api_client.get(FAILED, {"size": 5})
    assert response.status_code == 200 and response["X-Total-Count"] == "0"
    assert_problem(api_client.get(FAILED, {"sort": "secret"}), 400, "validation")


def test_unknown_webhook_id_is_404(api_client):
    assert_problem(api_client.get(f"{URL}/{uuid.uuid4()}"), 404, "notFound")
    assert_problem(api_client.delete(f"{URL}/not-a-uuid"), 404, "notFound")


def test_a_delivery_not_due_yet_is_not_posted_before_its_time(owner, core_user, subscribe, webhook_receiver, settings):
    """A task run early (sent twice, or its countdown lost) waits for the backoff instead of posting at once."""
    settings.WEBHOOK_RETRY_SCHEDULE = [3600]
    webhook_receiver.statuses = [500]
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    assert len(webhook_receiver.wait_for(1)) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.PENDING and delivery.attempts == 1
    assert delivery_attempt(delivery.pk) is None
    assert len(webhook_receiver.wait_for(2, timeout=0.3)) == 1
    assert Delivery.objects.get().attempts == 1


def test_a_long_answer_is_kept_to_its_first_2000_characters(
    owner, core_user, subscribe, webhook_receiver, settings, api_client
):
    settings.WEBHOOK_RETRY_SCHEDULE = []
    webhook_receiver.statuses = [500]
    webhook_receiver.answer = "".join(f"{i:04d}," for i in range(600)).encode()  # 3000 characters
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    emit(core_user)
    [call] = api_client.get(FAILED).json()
    assert call["response"] == webhook_receiver.answer.decode()[:2000]


def test_a_claim_lasts_longer_than_the_longest_call(
    owner, core_user, subscribe, webhook_receiver, settings, monkeypatch
):
    """With a long timeout the lease outlasts the call it covers, so no second worker posts the same attempt."""
    from datetime import timedelta

    from django.utils import timezone

    from platform_site.outbound import call_deadline
    from webhooks import tasks
    from webhooks.services import delivery_claim

    settings.WEBHOOK_TIMEOUT_SECONDS = 100
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    monkeypatch.setattr(tasks.webhooks_delivery_send, "delay", lambda *args: None)  # claimed below, by hand
    emit(core_user)
    before = timezone.now()
    claimed = delivery_claim(Delivery.objects.get().pk)
    assert claimed.lease_until >= before + timedelta(seconds=call_deadline(100) + 60)


def test_one_owner_takes_at_most_its_share_of_the_delivery_workers(
    owner, other_owner, core_user, subscribe, webhook_receiver, settings
):
    """Receivers that hang held every delivery worker, and every other owner's events waited behind them. Past
    WEBHOOK_MAX_IN_FLIGHT_PER_OWNER deliveries being posted, an owner's next one waits its turn (no attempt is
    counted), while another owner's goes out."""
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 4
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    for n in range(4):
        emit(core_user, fieldId=f"busy-{n}")
    webhook_receiver.wait_for(4)
    # Those four are being posted now (their receiver hangs): leased, pending
    future = timezone.now() + timedelta(minutes=1)
    Delivery.objects.filter(owner=owner).update(status=Delivery.Status.PENDING, lease_until=future)
    emit(core_user, fieldId="waits")
    held = Delivery.objects.get(owner=owner, body__contains='"waits"')
    assert held.status == Delivery.Status.PENDING and held.attempts == 0 and held.lease_until is None
    assert delivery_attempt(str(held.pk)) is None
    held.refresh_from_db()
    assert held.status == Delivery.Status.PENDING and held.attempts == 0 and held.lease_until is None
    # Another owner's event goes out meanwhile
    other_user = CoreUserFactory(owner=other_owner)
    subscribe(other_owner, webhook_receiver, ["fieldCreated"])
    emit(other_user, fieldId="other-owner")
    assert [json.loads(r.body)["fieldId"] for r in webhook_receiver.wait_for(5)][4:] == ["other-owner"]
    # The owner's deliveries end: its next one goes out
    Delivery.objects.filter(lease_until=future).update(status=Delivery.Status.SUCCEEDED, lease_until=None)
    assert delivery_attempt(str(held.pk)) is None
    assert json.loads(webhook_receiver.wait_for(6)[5].body)["fieldId"] == "waits"
    held.refresh_from_db()
    assert held.status == Delivery.Status.SUCCEEDED and held.attempts == 1


def _delivered_by_name(owner, core_user, subscribe, webhook_receiver, names) -> dict:
    """One delivery of the owner per name (its `fieldId`), each posted once, then all pending again with no attempt."""
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    for name in names:
        emit(core_user, fieldId=name)
    webhook_receiver.wait_for(len(names))
    by_name = {json.loads(d.body)["fieldId"]: d for d in Delivery.objects.filter(owner=owner)}
    Delivery.objects.filter(owner=owner).update(status=Delivery.Status.PENDING, attempts=0, lease_until=None)
    return by_name


def test_deliveries_claimed_at_one_moment_go_up_to_the_owners_limit(
    owner, core_user, subscribe, webhook_receiver, settings
):
    """Deliveries claimed together each counted all the others as being posted, and all stood back together: only
    those claimed before a delivery count against it."""
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 2
    by_name = _delivered_by_name(owner, core_user, subscribe, webhook_receiver, ("before", "after", "this"))
    # Being posted: one claimed before this delivery is (its lease ends first), one claimed after it
    now = timezone.now()
    Delivery.objects.filter(pk=by_name["before"].pk).update(lease_until=now + timedelta(seconds=60))
    Delivery.objects.filter(pk=by_name["after"].pk).update(lease_until=now + timedelta(hours=1))
    # This one goes: one post ahead of it, under the limit of 2 (it counted 2 in flight and stood back)
    assert delivery_attempt(str(by_name["this"].pk)) is None
    assert [json.loads(r.body)["fieldId"] for r in webhook_receiver.wait_for(4)][3:] == ["this"]


def test_when_a_post_ends_the_owners_next_held_back_delivery_is_sent_at_once(
    owner, core_user, subscribe, webhook_receiver, settings, monkeypatch
):
    """Held back by the owner's limit, deliveries asked again every 2 s: an owner's events went out in bursts of the
    limit every 2 s, however quickly its receiver answered. A post that ends hands its place to the oldest waiting."""
    from webhooks import tasks

    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 1
    # "first" is due to be posted; "held" and "later" wait their turn (held back: pending, due, held by nobody)
    by_name = _delivered_by_name(owner, core_user, subscribe, webhook_receiver, ("first", "held", "later"))
    sent = []
    monkeypatch.setattr(tasks.webhooks_delivery_send, "apply_async", lambda args, **options: sent.append(tuple(args)))
    settings.CELERY_TASK_ALWAYS_EAGER = False  # as a worker runs it (Celery reads it from Django's settings)
    assert delivery_attempt(str(by_name["first"].pk)) is None
    # The oldest one waiting is sent at once, claimed for it
    [(held_id, lease)] = sent
    assert held_id == str(by_name["held"].pk)
    assert Delivery.objects.get(pk=held_id).lease_until > timezone.now()
    # It goes out with that claim, though the owner's one place looks taken (it was handed to it)
    Delivery.objects.filter(pk=by_name["later"].pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    Delivery.objects.filter(pk=by_name["first"].pk).update(
        status=Delivery.Status.PENDING, lease_until=timezone.now() + timedelta(seconds=30)
    )
    assert delivery_attempt(held_id) is None  # (no claim of its own: it is held)
    assert webhook_receiver.wait_for(5, timeout=0.3)[4:] == []
    assert delivery_attempt(held_id, lease) is None
    assert json.loads(webhook_receiver.wait_for(5)[4].body)["fieldId"] == "held"
    held = Delivery.objects.get(pk=held_id)
    assert (held.status, held.attempts) == (Delivery.Status.SUCCEEDED, 1)
    # A claim handed over once is not used twice (a task delivered again)
    assert delivery_attempt(held_id, lease) is None
    assert webhook_receiver.wait_for(6, timeout=0.3)[5:] == []


def test_a_handed_over_claim_that_ran_out_is_not_posted(owner, core_user, subscribe, webhook_receiver, settings):
    """Its task waited in the queue past the claim: the row was due and free meanwhile, and the sweep's task posted
    it while the handed-over one did too (two posts of one delivery at once)."""
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 1
    by_name = _delivered_by_name(owner, core_user, subscribe, webhook_receiver, ("late",))
    ran_out = timezone.now() - timedelta(seconds=1)
    Delivery.objects.filter(pk=by_name["late"].pk).update(lease_until=ran_out)
    assert delivery_attempt(str(by_name["late"].pk), ran_out.isoformat()) is None
    assert webhook_receiver.wait_for(2, timeout=0.3)[1:] == []
    # The sweep's claim of it goes out
    assert delivery_attempt(str(by_name["late"].pk)) is None
    assert len(webhook_receiver.wait_for(2)) == 2
    assert Delivery.objects.get(pk=by_name["late"].pk).attempts == 1


def test_a_post_that_ends_hands_its_place_past_a_delivery_another_took(
    owner, core_user, subscribe, webhook_receiver, settings, monkeypatch
):
    from webhooks import tasks

    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 1
    by_name = _delivered_by_name(owner, core_user, subscribe, webhook_receiver, ("first", "taken", "next"))
    # Another post of the owner that ended at the same moment took "taken" (after "first" was claimed, below)
    Delivery.objects.filter(pk=by_name["taken"].pk).update(lease_until=timezone.now() + timedelta(hours=1))
    sent = []
    monkeypatch.setattr(tasks.webhooks_delivery_send, "apply_async", lambda args, **options: sent.append(tuple(args)))
    settings.CELERY_TASK_ALWAYS_EAGER = False
    assert delivery_attempt(str(by_name["first"].pk)) is None
    assert [delivery_id for delivery_id, _lease in sent] == [str(by_name["next"].pk)]


def test_a_deliverys_log_lines_name_the_request_that_fired_it_whichever_task_posts_it(
    owner, core_user, subscribe, webhook_receiver, monkeypatch
):
    """A delivery held back by its owner's share is posted by the task of the owner's post that ended first, often
    another request's: its lines and its retries were logged under that request's id."""
    import io
    import logging

    from platform_site.api import request_ids

    webhook_receiver.statuses = [500, 500]
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    [console] = [h for h in logging.getLogger().handlers if h.name == "console"]
    written = io.StringIO()
    monkeypatch.setattr(console, "stream", written)
    with request_ids.serving("req-B"), transaction.atomic():  # (eagerly, the post runs in the request's thread)
        event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f-B"})
    delivery = Delivery.objects.get()
    assert delivery.request_id == "req-B"
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    with request_ids.serving("req-A"):  # another request's task posts it (handed over), or the sweep's (none)
        delivery_attempt(str(delivery.pk))
    assert [line.split(": ", 1)[1] for line in written.getvalue().splitlines() if "attempt" in line] == [
        f"[request req-B] webhook delivery {delivery.pk} attempt {n} failed: 500" for n in (1, 2)
    ]


def test_a_delivery_held_back_waits_without_asking_again(
    owner, core_user, subscribe, webhook_receiver, settings, monkeypatch
):
    """Held back, each delivery asked again every 2 s: 300 of one owner behind a receiver that hangs made over a
    hundred tasks a second on the delivery queue, and other owners' deliveries waited seconds behind them."""
    from webhooks import tasks

    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 1
    by_name = _delivered_by_name(owner, core_user, subscribe, webhook_receiver, ("posting", "waits"))
    Delivery.objects.filter(pk=by_name["posting"].pk).update(lease_until=timezone.now() + timedelta(minutes=1))
    scheduled = []
    monkeypatch.setattr(tasks.webhooks_delivery_send, "apply_async", lambda *a, **k: scheduled.append((a, k)))
    monkeypatch.setattr(tasks.webhooks_delivery_send, "delay", lambda *args: scheduled.append(args))
    settings.CELERY_TASK_ALWAYS_EAGER = False
    tasks.webhooks_delivery_send.run(str(by_name["waits"].pk))
    assert scheduled == []
    waits = Delivery.objects.get(pk=by_name["waits"].pk)
    assert (waits.status, waits.attempts, waits.lease_until) == (Delivery.Status.PENDING, 0, None)


def test_the_sweep_sends_of_each_owner_no_more_than_its_share(
    owner, other_owner, core_user, subscribe, webhook_receiver, settings
):
    """A backlog waiting for its owner's turn went round the delivery queue whole at every sweep."""
    from webhooks import tasks

    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 2
    other_user = CoreUserFactory(owner=other_owner)
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    subscribe(other_owner, webhook_receiver, ["fieldCreated"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks.webhooks_delivery_send, "delay", lambda *args: None)  # waiting, all of them
        for n in range(5):
            emit(core_user, fieldId=f"a{n}")
        emit(other_user, fieldId="b0")
    due = deliveries_due()
    assert [json.loads(Delivery.objects.get(pk=pk).body)["fieldId"] for pk in due] == ["a0", "a1", "b0"]
    settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER = 0  # no share: all of them
    assert len(deliveries_due()) == 6


def test_old_deliveries_are_forgotten_and_failed_ones_kept(owner, core_user, subscribe, webhook_receiver):
    """Every delivery and its attempt were kept for ever (about 850 bytes an event). The sweep forgets those delivered
    more than WEBHOOK_DELIVERED_KEEP_DAYS ago, with their attempts; a failed one stays, as failed-calls lists it."""
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    for index in range(3):
        emit(core_user, fieldId=f"f-{index}")
    webhook_receiver.wait_for(3)
    old, recent, failed = Delivery.objects.order_by("created_at")
    long_ago = timezone.now() - timedelta(days=settings.WEBHOOK_DELIVERED_KEEP_DAYS, hours=1)
    Delivery.objects.filter(pk__in=[old.pk, failed.pk]).update(next_attempt_at=long_ago)
    Delivery.objects.filter(pk=failed.pk).update(status=Delivery.Status.FAILED)
    webhooks_deliveries_sweep.delay()
    assert set(Delivery.objects.values_list("pk", flat=True)) == {recent.pk, failed.pk}
    assert set(DeliveryAttempt.objects.values_list("delivery_id", flat=True)) == {recent.pk, failed.pk}
