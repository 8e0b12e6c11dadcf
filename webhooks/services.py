"""Webhooks and events: registration, `event_emit` (the one way any app announces a change), signed
delivery with retries, and the sweep that nothing is lost."""

import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import requests
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from platform_site.api import request_ids
from platform_site.api.errors import DomainError, list_item_errors
from platform_site.api.serializers import format_timestamp
from platform_site.api.urlsafety import UnsafeUrl, resolve_public, safe_session
from platform_site.celery import UNATTRIBUTED, app, send_on_commit
from platform_site.db import row_locked, rows_kept
from platform_site.outbound import call_deadline, connected_to, connection_failure, read_head
from platform_site.text import storable

from .models import EVENT_ALIASES, Delivery, DeliveryAttempt, EventType, Webhook, WebhookEvent

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Core-Signature"
DELIVERY_HEADER = "X-Core-Delivery"  # the delivery's id, the same on every attempt: a receiver's key to drop repeats
RESPONSE_KEEP_CHARS = 2000
LEASE = timedelta(seconds=120)


class EventRegisteredTwice(DomainError):
    error_key = "eventRegisteredTwice"


def canonical_event(name: str) -> str:
    """The stored spelling of an event name (aliases folded), or ValueError for an unknown one."""
    name = EVENT_ALIASES.get(name, name)
    if name not in EventType.values:
        raise ValueError(name)
    return name


def sign(secret: str, body: bytes) -> str:
    """`X-Core-Signature`: base64 of HMAC-SHA256 over the exact body bytes."""
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


@transaction.atomic
def webhook_register(*, owner, name: str, url: str, secret: str, events: list[str]) -> Webhook:
    """A new webhook that receives `events` from now on. An event already taken by another webhook
    of the owner is 400 `eventRegisteredTwice`; a URL into a private network is refused."""
    try:
        resolve_public(url)
    except UnsafeUrl as exc:
        raise DomainError(
            str(exc), error_key="webhookUrlNotAllowed", field_errors=[{"field": "url", "message": str(exc)}]
        ) from None
    requested = [canonical_event(e) for e in events]
    events = list(dict.fromkeys(requested))
    taken = events_taken(owner, events)
    if taken:
        raise _registered_twice(requested, taken)
    webhook = Webhook.objects.create(owner=owner, name=name, url=url, secret=secret)
    try:
        with transaction.atomic():
            WebhookEvent.objects.bulk_create([WebhookEvent(webhook=webhook, owner=owner, event=e) for e in events])
    except IntegrityError:
        # A concurrent registration took one of the events between our check and our insert.
        raise _registered_twice(requested, events_taken(owner, events) or events) from None
    return webhook


def events_taken(owner, events: list[str], *, other_than=None) -> set[str]:
    """Which of `events` a webhook of `owner` (or its id) listens to already; `other_than` a webhook's id: of its
    other webhooks."""
    taken = WebhookEvent.objects.filter(owner=owner, event__in=events).exclude(webhook_id=other_than)
    return set(taken.values_list("event", flat=True))


def _registered_twice(requested: list[str], taken) -> EventRegisteredTwice:
    """400 `eventRegisteredTwice`, a field error on each entry of the request's `events` that is taken
    (`events[1]`), its first mention only."""
    return EventRegisteredTwice(
        f"Another webhook already listens to: {', '.join(sorted(set(requested) & set(taken)))}. Delete it first.",
        field_errors=list_item_errors(requested, taken, lambda e: f"'{e}' already has a webhook.", field="events"),
    )


def webhook_events(webhook: Webhook) -> list[str]:
    return [s.event for s in webhook.subscriptions.all()]


@transaction.atomic
def webhook_delete(*, webhook: Webhook) -> bool:
    """Delete a webhook; its pending deliveries go with it, so nothing more is sent. Locked first: an event being
    emitted to it (`event_emit` keeps the webhooks it writes deliveries for) commits before its deliveries are
    collected, and one emitted later finds it gone. False: a concurrent deletion deleted it first."""
    if not row_locked(Webhook, webhook.pk):
        return False
    webhook.delete()
    return True


def event_emit(*, type: str, core_user=None, owner=None, payload: dict[str, Any] | None = None) -> int:
    """Announce a change. Call it inside the transaction that makes the change: one delivery row is
    written per webhook of the owner listening to `type`, and each is posted after commit (nothing
    is sent for a rolled-back change). Returns how many deliveries were written.

    The body is compact JSON `{type, timestamp, coreUserId, **payload, deliveryId}`; payload values should be
    ids (strings) and an optional `message`."""
    event = canonical_event(type)
    owner_id = core_user.owner_id if core_user is not None else owner.pk
    webhooks = list(Webhook.objects.filter(owner_id=owner_id, subscriptions__event=event))
    if webhooks:
        # Kept until commit: a webhook deleted meanwhile failed the emitting change at commit (foreign key). Every
        # webhook of the owner, in id order, at the first event: a deletion of several (the admin's, in id order
        # too) then never holds one this change announces to later while waiting for one it holds, a deadlock.
        kept = rows_kept(Webhook, Webhook.objects.filter(owner_id=owner_id).values_list("pk", flat=True))
        webhooks = [w for w in webhooks if w.pk in kept]
    if not webhooks:
        return 0
    document = {"type": event, "timestamp": format_timestamp(timezone.now())}
    if core_user is not None:
        document["coreUserId"] = str(core_user.pk)
    document.update({k: _jsonable(v) for k, v in (payload or {}).items() if k != "deliveryId"})
    now = timezone.now()
    deliveries = []
    for webhook in webhooks:
        # Each webhook's body names its delivery: signed, unlike the header, so a receiver that drops the ids it
        # has seen drops a replayed body too (a body taken from a log, re-sent with a new header).
        delivery_id = uuid.uuid4()
        body = {**document, "deliveryId": str(delivery_id)}
        deliveries.append(
            Delivery(
                id=delivery_id,
                webhook=webhook,
                owner_id=owner_id,
                event=event,
                core_user_id=core_user.pk if core_user is not None else None,
                body=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
                next_attempt_at=now,
                request_id=request_ids.current.get() or "",
            )
        )
    deliveries = Delivery.objects.bulk_create(deliveries)
    from .tasks import webhooks_delivery_send

    for delivery in deliveries:
        # The delivery's row is its own outbox: a send the broker refuses is left to the deliveries sweep (60 s).
        send_on_commit(webhooks_delivery_send, str(delivery.pk), outbox=False)
    return len(deliveries)


def _jsonable(value):
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, (str, int, float, bool, dict)) or value is None:
        return value
    return str(value)


def _call_deadline() -> float:
    """The longest one post may take in all (connecting, then the answer): each timeout bounds one read only."""
    return call_deadline(settings.WEBHOOK_TIMEOUT_SECONDS)


def _owner_busy(delivery: Delivery) -> bool:
    """Whether the delivery's owner already has `WEBHOOK_MAX_IN_FLIGHT_PER_OWNER` deliveries being posted that were
    claimed before this one (their lease running, ending before this one's: every lease is as long). Deliveries
    claimed at one moment each counted all the others, and all of them stood back together; now the first ones, up
    to the limit, go."""
    limit = settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER
    if not limit:
        return False
    ahead = Delivery.objects.filter(
        Q(lease_until__lt=delivery.lease_until) | Q(lease_until=delivery.lease_until, pk__lt=delivery.pk),
        owner_id=delivery.owner_id,
        status=Delivery.Status.PENDING,
        lease_until__gt=timezone.now(),
    )
    return ahead.count() >= limit


# How many of an owner's waiting deliveries a post that ends tries to hand its place to (another post ending at the
# same moment may take the first).
HAND_OVER_TRIES = 5


class HandedOver(NamedTuple):
    """The delivery a post that ended handed its place to, claimed for it with `lease` (`_hand_over`)."""

    delivery_id: str
    lease: str


def _hand_over(delivery: Delivery) -> HandedOver | None:
    """A post of the delivery's owner has ended: its place goes to the owner's oldest delivery that is due and held
    by nobody (one held back by the owner's limit, `_owner_busy`), claimed here, unless a delivery claimed meanwhile
    took the place. Held-back deliveries asked again every 2 s: an owner's backlog behind a receiver that
    hangs circled the delivery queue, over a hundred tasks a second, and every other owner's deliveries waited behind
    them. (Tests run tasks in the caller, and send each delivery themselves.)"""
    if not settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER or app.conf.task_always_eager:
        return None
    waiting = _due_and_free(timezone.now()).filter(owner_id=delivery.owner_id).exclude(pk=delivery.pk)
    for found in waiting.order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:HAND_OVER_TRIES]:
        lease = _claim(found)
        if lease is None:
            continue
        # (a delivery claimed meanwhile may have taken the place: then this one waits again)
        if _owner_busy(Delivery(pk=found, owner_id=delivery.owner_id, lease_until=lease)):
            Delivery.objects.filter(pk=found).update(lease_until=None)
            return None
        return HandedOver(str(found), lease.isoformat())
    return None


def _claim(delivery_id, held_with: str | None = None) -> datetime | None:
    """The lease of the delivery, taken if it is due and nobody holds it, or renewed if it is held with the running
    lease `held_with` (handed over: `_hand_over`); None otherwise. The claim is a lease in the row, so two workers
    never post the same attempt and a dead worker's claim expires. (A handed-over claim that ran out while its task
    waited in the queue is no longer ours: the row was due and free to the sweep meanwhile.)"""
    now = timezone.now()
    lease = now + max(LEASE, timedelta(seconds=_call_deadline() + 60))
    if held_with is None:
        held = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    else:
        held = Q(lease_until=held_with, lease_until__gte=now)
    claimed = Delivery.objects.filter(
        held, pk=delivery_id, status=Delivery.Status.PENDING, next_attempt_at__lte=now
    ).update(lease_until=lease)
    return lease if claimed else None


def delivery_claim(delivery_id, lease: str | None = None) -> Delivery | None:
    """The delivery, taken for one attempt (`_claim`), or already taken for it with `lease` (handed over by a post of
    its owner that ended: `_hand_over`), the claim renewed; None when it is not ours to post."""
    if _claim(delivery_id, lease) is None:
        return None
    # None too when its webhook was deleted between the claim and this read (the deletion takes its deliveries).
    return Delivery.objects.select_related("webhook").filter(pk=delivery_id).first()


def delivery_attempt(delivery_id, lease: str | None = None) -> float | None:
    """Post a due delivery once and record the attempt (`lease`: it was handed over, `_hand_over`), then send the
    delivery its post hands its place to. Returns the seconds until the next attempt when it failed and will be
    retried, else None."""
    from .tasks import webhooks_delivery_send

    delay, handed = delivery_post(delivery_id, lease)
    if handed is not None:
        webhooks_delivery_send.apply_async(handed, headers=UNATTRIBUTED)
    return delay


def delivery_post(delivery_id, lease: str | None = None) -> tuple[float | None, HandedOver | None]:
    """Post a due delivery once and record the attempt (`lease`: it was handed over, `_hand_over`). Returns the
    seconds until the next attempt when it failed and will be retried (else None), and the owner's delivery its post
    handed its place to, claimed, for the caller to post. Network I/O happens outside any transaction."""
    delivery = delivery_claim(delivery_id, lease)
    if delivery is None:
        return None, None
    with request_ids.serving(delivery.request_id or None):  # (its own request's, whichever task posts it)
        return _delivery_post_claimed(delivery, lease)


def _delivery_post_claimed(delivery: Delivery, lease: str | None) -> tuple[float | None, HandedOver | None]:
    if lease is None and _owner_busy(delivery):
        # One owner's receivers that hang take at most its share of the delivery workers: the others stay free for
        # every other owner. Held back, the delivery is let go, no attempt counted, and waits: the owner's next post
        # to end hands it its place (or the sweep sends it again).
        Delivery.objects.filter(pk=delivery.pk).update(lease_until=None)
        return None, None
    body = delivery.body.encode()
    webhook = delivery.webhook
    status_code, response_text, error = None, "", ""
    started = time.monotonic()
    session = None
    try:
        # Checked again at send time (DNS may have changed since registration), and the session connects only to
        # the addresses just checked, never to a second DNS answer.
        with safe_session(webhook.url, deadline=_call_deadline()) as session:
            response = session.post(
                webhook.url,
                data=body,
                headers={
                    "Content-Type": "application/json",
                    SIGNATURE_HEADER: sign(webhook.secret, body),
                    DELIVERY_HEADER: str(delivery.pk),
                    "User-Agent": "agdata-platform-webhooks/1",
                },
                timeout=(settings.WEBHOOK_TIMEOUT_SECONDS, settings.WEBHOOK_TIMEOUT_SECONDS),
                allow_redirects=False,
                stream=True,
            )
            status_code = response.status_code
            response_text = _read_limited(response)  # streamed: read before the session closes
    except UnsafeUrl as exc:
        error = f"refused: {exc}"
        # The operators' business, not only the receiver's: the URL passed the same check when it was registered, so
        # this worker and the API disagree on WEBHOOK_ALLOW_PRIVATE_URLS, or the host now resolves inside. (Logged at
        # INFO with the other failures, a worker started without the API's setting failed every delivery unseen.)
        logger.warning("webhook %s: delivery %s refused by this worker: %s", webhook.pk, delivery.pk, exc.detail)
    except requests.ConnectTimeout as exc:
        error = f"Timeout: no connection within {settings.WEBHOOK_TIMEOUT_SECONDS:g} s{connected_to(exc)}"
    except requests.RequestException as exc:
        error = connection_failure(exc)[:RESPONSE_KEEP_CHARS]
        if session is not None and session.expired:
            error = f"Timeout: no complete answer within {_call_deadline():g} s"
        elif isinstance(exc, requests.Timeout):  # (the read timeout; it named our connection pool's class)
            error = f"Timeout: no answer within {settings.WEBHOOK_TIMEOUT_SECONDS:g} s"
    duration_ms = int((time.monotonic() - started) * 1000)
    succeeded = status_code is not None and 200 <= status_code < 300
    delay = _delivery_record(delivery, webhook.url, status_code, response_text, error, duration_ms, succeeded)
    return delay, _hand_over(delivery)


def _read_limited(response) -> str:
    """The start of the receiver's answer, kept with a failed call: its first RESPONSE_KEEP_CHARS characters,
    whatever chunks it came in (only the first chunk was kept: "error: " of "error: database is down")."""
    try:
        head, _more = read_head(response, RESPONSE_KEEP_CHARS * 4)
    except requests.RequestException:
        head = b""
    return storable(head.decode("utf-8", "replace"))[:RESPONSE_KEEP_CHARS]


@transaction.atomic
def _delivery_record(delivery, url, status_code, response_text, error, duration_ms, succeeded) -> float | None:
    # The webhook kept first (as `event_emit` does): deleted meanwhile, its deletion had not collected the attempt
    # recorded here, and failed at commit.
    if not rows_kept(Webhook, [delivery.webhook_id]):
        return None
    delivery = Delivery.objects.select_for_update().filter(pk=delivery.pk).first()
    if delivery is None:  # the webhook was deleted meanwhile
        return None
    schedule = settings.WEBHOOK_RETRY_SCHEDULE
    delivery.attempts += 1
    delay = None
    if succeeded:
        delivery.status = Delivery.Status.SUCCEEDED
    elif delivery.attempts <= len(schedule):
        delay = float(schedule[delivery.attempts - 1])
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay)
    else:
        delivery.status = Delivery.Status.FAILED
    delivery.lease_until = None
    delivery.save(update_fields=["attempts", "status", "next_attempt_at", "lease_until", "updated_at"])
    DeliveryAttempt.objects.create(
        delivery=delivery,
        owner_id=delivery.owner_id,
        number=delivery.attempts,
        url=url,
        status_code=status_code,
        response=response_text,
        error=storable(error) if error else error,
        duration_ms=duration_ms,
        succeeded=succeeded,
        will_retry=delay is not None,
    )
    if not succeeded:
        logger.info("webhook delivery %s attempt %s failed: %s", delivery.pk, delivery.attempts, status_code or error)
    return delay


def deliveries_release() -> int:
    """Release every delivery's lease: for the embedded server as it starts, before its workers run. A lease kept a
    delivery from being posted twice at once, but its holder died with the process before (in-memory broker, no
    other worker); released, the delivery is due at once instead of when the lease runs out (up to 2 minutes)."""
    return Delivery.objects.filter(status=Delivery.Status.PENDING, lease_until__isnull=False).update(lease_until=None)


def deliveries_due(limit: int = 500) -> list[str]:
    """Ids of pending deliveries that are due and held by nobody: lost messages, dead workers, retries whose task
    never arrived, deliveries waiting for their owner's turn; of each owner, the oldest
    `WEBHOOK_MAX_IN_FLIGHT_PER_OWNER` (more would only be held back again: a backlog went round the queue)."""
    due = _due_and_free(timezone.now())
    if per_owner := settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER:
        turn = Window(RowNumber(), partition_by=[F("owner_id")], order_by=[F("next_attempt_at"), F("pk")])
        due = due.annotate(turn=turn).filter(turn__lte=per_owner)
    return [str(pk) for pk in due.order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:limit]]


def _due_and_free(now):
    """Pending deliveries due at `now` that nobody holds (no lease, or one run out), as `delivery_claim` takes them."""
    return Delivery.objects.filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=now), status=Delivery.Status.PENDING, next_attempt_at__lte=now
    )


def deliveries_forget() -> int:
    """Periodic: drop the deliveries delivered more than WEBHOOK_DELIVERED_KEEP_DAYS ago, with their attempts
    (nothing of the API reads them; `failed-calls` lists the failed ones, which stay). They were kept for ever: about
    850 bytes per event delivered. Returns how many deliveries."""
    cutoff = timezone.now() - timedelta(days=settings.WEBHOOK_DELIVERED_KEEP_DAYS)
    # (`next_attempt_at` of a delivered one is when it was last due: the index on status and it serves this)
    delivered = Delivery.objects.filter(status=Delivery.Status.SUCCEEDED, next_attempt_at__lt=cutoff)
    _, by_model = delivered.delete()  # (their attempts with them: CASCADE)
    return by_model.get(Delivery._meta.label, 0)  # (the deliveries, not their attempts: as `link_tombstones_sweep`)
