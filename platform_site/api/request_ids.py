"""Every answer names its request in `X-Request-Id`, and every log line written while the request was served carries
the same id: a client quoting the id of a failed request leads to its log lines (the traceback of a 500, whose
problem document names the id too).

The id is the one the request came with, set by the client or a proxy in front, when it is plain (letters, digits
and `-_.:`, at most 128 characters: a UUID, a ULID, a trace id), so that one id follows the request through every
log; otherwise a new UUID. Nothing else of a sent value reaches a log line or a header."""

import logging
import re
import uuid
from contextlib import contextmanager
from contextvars import ContextVar

HEADER = "X-Request-Id"
_META_KEY = "HTTP_X_REQUEST_ID"
PLAIN_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
_PLAIN = re.compile(PLAIN_PATTERN)

# The id of the request this thread is serving, or that queued the task it runs (`platform_site.celery`); None
# outside both (a periodic task, a command, the server's own lines).
current: ContextVar[str | None] = ContextVar("request_id", default=None)


def request_id(meta) -> str:
    """The id of a request with these WSGI `meta`: its own `X-Request-Id` when plain, else a new UUID."""
    sent = meta.get(_META_KEY, "")
    return sent if _PLAIN.fullmatch(sent) else str(uuid.uuid4())


class RequestIdFilter(logging.Filter):
    """Stamps each record with the id of the request being served when it was logged (`record.request_id`), or of
    the request the record names: Django logs a 4xx answer ("Not Found: /x", with the request) after the
    middleware returned it."""

    def filter(self, record):
        record.request_id = current.get() or getattr(getattr(record, "request", None), "request_id", None)
        return True


class RequestIdFormatter(logging.Formatter):
    """`<time> <level> <logger>: <message>`, the message of a record logged while a request was served (or a task it
    set off ran) after `[request <id>] `: the lines of every process (the API's, the workers', beat's) sort by time
    and say their level and origin."""

    def __init__(self, fmt="%(asctime)s %(levelname)s %(name)s: %(request)s%(message)s", *args, **kwargs):
        super().__init__(fmt, *args, **kwargs)

    def formatMessage(self, record):
        served = getattr(record, "request_id", None)
        return self._style._fmt % {**record.__dict__, "request": f"[request {served}] " if served else ""}


@contextmanager
def serving(request_id: str | None):
    """Log lines written meanwhile name `request_id` (none: None), whatever they named before."""
    token = current.set(request_id)
    try:
        yield
    finally:
        current.reset(token)
