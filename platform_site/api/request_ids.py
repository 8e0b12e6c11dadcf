"""Every answer names its request in `X-Request-Id`, and every log line written while the request was served carries
the same id: a client quoting the id of a failed request leads to its log lines (the traceback of a 500, whose
problem document names the id too).

The id is the one the request came with, set by the client or a proxy in front, when it is plain (letters, digits
and `-_.:`, at most 128 characters: a UUID, a ULID, a trace id), so that one id follows the request through every
log; otherwise a new UUID. Nothing else of a sent value reaches a log line or a header."""

import logging
import re
import uuid
from contextvars import ContextVar

HEADER = "X-Request-Id"
_META_KEY = "HTTP_X_REQUEST_ID"
_PLAIN = re.compile(r"[A-Za-z0-9._:-]{1,128}")

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
    """A record logged while a request was served starts with `[request <id>] `, then as `wrapped` formats it (a
    Celery worker's formatter, with its time and level), or as a plain `logging.Formatter` does."""

    def __init__(self, *args, wrapped: logging.Formatter | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.wrapped = wrapped

    def format(self, record):
        text = self.wrapped.format(record) if self.wrapped is not None else super().format(record)
        served = getattr(record, "request_id", None)
        return f"[request {served}] {text}" if served else text
