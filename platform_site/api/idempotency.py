"""`Idempotency-Key` on the API's creating POSTs (the IETF httpapi draft "The Idempotency-Key HTTP Header Field",
as Stripe's API takes it): a client whose connection broke after it sent a request cannot know whether it was
carried out; retried with the same key, the request is answered as the first one was, and nothing is made twice.

A view names its creating actions in `keyed_actions` (`viewsets.OwnerScopedViewSet`). A keyed request runs in one
transaction with the claim of its key (`claim`), a row of `IdempotentRequest` unique per API owner and key, and its
answer is written to that row before it commits (`keep`): a retry finds the answer, and a retry sent while the first
request runs waits for it at the key's unique index (PostgreSQL; SQLite serialises writers), then answers what it
answered. Only a success is kept: an answer of 4xx or 5xx rolls the request back, its key with it, so the request
can be retried with the key and finds nothing of its failed try."""

import hashlib
import json
import re
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.http import HttpResponse
from django.utils import timezone

from .errors import DomainError
from .models import IdempotentRequest

HEADER = "Idempotency-Key"
# A retry answered from the first request's answer says so (Stripe's header).
REPLAYED_HEADER = "Idempotent-Replayed"

# A key: 1-255 visible ASCII characters but double quotes and backslash (a UUID, say), bare as most APIs take it or
# as the structured-field string the IETF draft writes (`"..."`), which is the same key.
_KEY = r"[\x21\x23-\x5b\x5d-\x7e]{1,255}"
KEY_PATTERN = re.compile(rf'^(?:({_KEY})|"({_KEY})")$')

# How long a key answers its first request (a client retries within minutes; a day, as is usual).
KEY_LIFETIME = timedelta(hours=24)
# (as the answers say it)
KEY_LIFETIME_TEXT = f"{KEY_LIFETIME.total_seconds() / 3600:.0f} hours"


def request_key(request) -> str | None:
    """The request's `Idempotency-Key` (None without one); 400 when it is not a key."""
    value = request.META.get("HTTP_IDEMPOTENCY_KEY")
    if value is None:
        return None
    match = KEY_PATTERN.fullmatch(value.strip(" \t"))
    if match is None:
        message = "1 to 255 visible ASCII characters, without double quotes or backslash (a UUID, say)."
        raise DomainError(f"{HEADER}: must be {message}", field_errors=[{"field": HEADER, "message": message}])
    return match.group(1) or match.group(2)


class IdempotencyKeyReused(DomainError):
    """A key sent again with another request than the one it came with (the draft's 422)."""

    status_code = 422
    error_key = "idempotencyKeyReused"


class Replayed(Exception):
    """Raised by `claim` for a retry: `response` is the first request's answer (the view answers it as is)."""

    def __init__(self, response: HttpResponse):
        super().__init__("replayed")
        self.response = response


def key_horizon():
    """Keys claimed before this are forgotten."""
    return timezone.now() - KEY_LIFETIME


def fingerprint(request) -> str:
    """What the request asks for: its method, path, query string and body as parsed (so a retry whose JSON is
    written with other spacing or key order is the same request)."""
    data = request.data
    if hasattr(data, "lists"):  # a form: every value of each name
        data = {name: values for name, values in data.lists()}
    described = [
        request.method,
        request.path,
        sorted(request.query_params.lists()),
        data,
    ]
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def claim(*, owner, key: str, request, core_user=None) -> IdempotentRequest:
    """Claim `key` for `request`, in the transaction the request runs in: its row, to `keep` the answer in. For a
    retry of a request answered (the key's row exists), `Replayed` with that answer; for another request sent with
    the key, 422 `idempotencyKeyReused`. A retry sent while the first request runs waits for it to end. `core_user`:
    the one the request's address names, whose deletion takes the key and its answer."""
    asked = fingerprint(request)
    try:
        with transaction.atomic():
            # An expired row of the key is replaced: the key names a new request.
            IdempotentRequest.objects.filter(owner=owner, key=key, created_time__lt=key_horizon()).delete()
            return IdempotentRequest.objects.create(owner=owner, core_user=core_user, key=key, fingerprint=asked)
    except IntegrityError:
        earlier = IdempotentRequest.objects.filter(owner=owner, key=key).first()
        if earlier is None:  # another constraint
            raise
    if earlier.fingerprint != asked:
        raise IdempotencyKeyReused(
            f"This {HEADER} was sent with another request in the last {KEY_LIFETIME_TEXT} (another method, "
            "address, query or body). Send a new key with each new request, and the same "
            "key only to retry one.",
            field_errors=[{"field": HEADER, "message": "Sent with another request."}],
        )
    raise Replayed(replay(earlier))


def keep(claimed: IdempotentRequest, response) -> None:
    """Keep `response` as the answer of the request that claimed the key; when it is no success (a 4xx or 5xx: the
    request may be sent again with the key), roll the request's transaction back, its claim and whatever it wrote
    before it failed with it (an error answered as a problem document commits otherwise: DRF rolls back only
    under ATOMIC_REQUESTS), so that the retry does not make it a second time."""
    if not 200 <= response.status_code < 300:
        transaction.set_rollback(True)
        return
    if hasattr(response, "render"):
        response.render()
    claimed.status_code = response.status_code
    claimed.content_type = response.get("Content-Type", "")
    claimed.location = response.get("Location", "")
    claimed.content = bytes(response.content)
    claimed.save(update_fields=["status_code", "content_type", "location", "content"])


def replay(earlier: IdempotentRequest) -> HttpResponse:
    """The answer kept for a key, said to be replayed."""
    response = HttpResponse(
        bytes(earlier.content), status=earlier.status_code, content_type=earlier.content_type or None
    )
    if earlier.location:
        response["Location"] = earlier.location
    response[REPLAYED_HEADER] = "true"
    return response


def keys_sweep() -> int:
    """Forget the keys past their lifetime; how many."""
    deleted, _ = IdempotentRequest.objects.filter(created_time__lt=key_horizon()).delete()
    return deleted
