"""The gunicorn worker to deploy with (`--worker-class platform_site.server.ProblemThreadWorker`, README).

gunicorn refuses some requests itself, before Django sees them: a request line over `--limit-request-line` (4094
bytes by default: a long query string), headers over `--limit-request-fields` / `--limit-request-field_size`, or a
request that is no HTTP. It answered those with an HTML page; this worker answers them with a problem document, as
every other error of the API is answered (supplement "Lists and errors"), and with the status that says what to
change: 414 for a request line too long, 431 for headers too large, 501 for a transfer coding gunicorn does not
know, 400 for the rest. Anything else (a failure of gunicorn itself) is left to gunicorn.

Its access and error logs (`--access-logfile`, `--error-logfile`) are written without magic link tokens
(`platform_site.redaction`): their request lines and Referers hold a link's address, its only credential.
"""

import json
from http import HTTPStatus

from gunicorn import util
from gunicorn.http import errors
from gunicorn.workers.gthread import ThreadWorker

from platform_site.redaction import LinkTokenFilter

MALFORMED = (
    errors.InvalidRequestLine,
    errors.InvalidRequestMethod,
    errors.InvalidHTTPVersion,
    errors.InvalidHeader,
    errors.InvalidHeaderName,
    errors.ObsoleteFolding,
    errors.InvalidSchemeHeaders,
)


def refusal(exc: Exception) -> tuple[int, str, str] | None:
    """(status, errorKey, detail) of a request gunicorn refuses; None for what is no fault of the request."""
    if isinstance(exc, errors.LimitRequestLine):
        return (
            414,
            "uriTooLong",
            f"The request line has {exc.size} bytes or more, over the {exc.max_size} taken: send fewer or shorter "
            "query parameters.",
        )
    if isinstance(exc, errors.LimitRequestHeaders):
        return 431, "requestHeadersTooLarge", f"The request headers are too large ({exc}): send fewer or shorter ones."
    if isinstance(exc, errors.UnsupportedTransferCoding):
        return 501, "transferCodingNotImplemented", f"{exc}: send the body with a Content-Length."
    if isinstance(exc, MALFORMED):
        return 400, "malformedRequest", f"The request is not valid HTTP/1.1: {exc}."
    return None


NO_BROKER_WARNING = (
    "No CELERY_BROKER_URL: background work (conversions, operations, webhook deliveries) is queued in this process "
    "and never run under gunicorn. Set CELERY_BROKER_URL and run the workers (README), or serve with `make run`."
)


class ProblemThreadWorker(ThreadWorker):
    """gunicorn's threaded worker (`gthread`), answering the requests gunicorn refuses with a problem document and
    logging no magic link token."""

    def init_process(self):
        # In the worker process (forked): the requests are logged here, through gunicorn's two loggers.
        for log in (getattr(self.log, "error_log", None), getattr(self.log, "access_log", None)):
            if log is not None:
                log.addFilter(LinkTokenFilter())
        super().init_process()

    def load_wsgi(self):
        super().load_wsgi()  # (Django is set up from here on)
        from django.conf import settings

        if settings.CELERY_EMBEDDED and not settings.CELERY_TASK_ALWAYS_EAGER:
            # Only `manage.py serve` runs the in-process worker: under gunicorn, conversions, operations and webhook
            # deliveries were queued in this process's memory and never run, unsaid.
            self.log.warning(NO_BROKER_WARNING)

    def handle_error(self, req, client, addr, exc):
        answer = refusal(exc)
        if answer is None:
            return super().handle_error(req, client, addr, exc)
        status, error_key, detail = answer
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        # (Django's settings and apps are loaded: the worker loaded the application before it took any request.)
        from platform_site.api.errors import PROBLEM_CONTENT_TYPE, problem_body

        path = getattr(req, "path", None) or ""
        body = json.dumps(problem_body(status_code=status, error_key=error_key, detail=detail, path=path)).encode()
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nConnection: close\r\n"
            f"Content-Type: {PROBLEM_CONTENT_TYPE}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except Exception:  # noqa: BLE001 (the client is gone: nothing to answer, as gunicorn does)
            self.log.debug("Failed to send error message.")
