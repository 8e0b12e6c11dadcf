"""`manage.py serve [ADDR:PORT]`: the embedded default in one process.

Serves the API and, when no CELERY_BROKER_URL is configured, runs the tasks in-process: two Celery
workers in threads on the in-memory broker (one for the webhook deliveries, one for everything else, as
production runs them) and an embedded beat thread for the periodic sweeps. With a real broker, it only
serves (run the workers and beat beside it, README).

The in-memory broker dies with the process: whatever was queued or running then (a conversion, a merge, an
operation's build, a webhook delivery being posted) is lost. So at its start, the embedded server takes up what the
process before it left (`restart_recovery`): the sweeps run at once, with everything not touched since this start
counting as left, instead of after CONVERSION_STUCK_AFTER_SECONDS; leases of deliveries are released first. (It is
the only process on its database: two embedded servers on one database would each take the other's work as left.)
"""

import contextlib
import json
import logging
import re
import socket
import threading
import time
from datetime import datetime
from http import HTTPStatus
from urllib.parse import urlsplit, urlunsplit
from wsgiref import simple_server

from django.conf import settings
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.contrib.staticfiles.management.commands.runserver import Command as RunserverCommand
from django.core.exceptions import SuspiciousFileOperation
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.core.servers.basehttp import ServerHandler, WSGIRequestHandler, WSGIServer
from django.http import Http404
from django.utils import timezone

from platform_site.api import request_ids
from platform_site.api.errors import PROBLEM_CONTENT_TYPE, handler404, method_not_allowed, problem_body
from platform_site.api.middleware import answer_headers, host_refusal
from webhooks.services import deliveries_release


class Command(BaseCommand):
    help = "Serve the API; run tasks in-process when no broker is configured."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        if settings.CELERY_EMBEDDED and not settings.CELERY_TASK_ALWAYS_EAGER:
            started = timezone.now()
            released = deliveries_release()  # (before a worker of this process can hold one)
            routine_task_lines_quiet()
            start_embedded_worker()
            restart_recovery(started)
            self.stdout.write(
                "Tasks run in-process (no CELERY_BROKER_URL): embedded worker and beat started; work the process "
                f"before left is taken up ({released} webhook deliveries were held)."
            )
        call_command(Runserver(), addrport, use_reloader=False, use_threading=True, insecure_serving=True)


class ReadTimeoutWSGIServer(WSGIServer):
    """Django's development server, closing a connection that sends nothing for EMBEDDED_READ_TIMEOUT_SECONDS. It
    has no timeout of its own: a client that announced a longer body than it sent, or kept an idle connection open,
    held a request thread for as long as it stayed connected. The limit is on each read, not on the request: a slow
    upload that keeps sending is never cut off. A request whose body stops arriving is answered 408
    (`errors.BODY_INCOMPLETE`)."""

    def __init__(self, server_address, handler_class, **kwargs):
        # (Django's `run` gives its WSGIRequestHandler; this server serves with the subclass below.)
        super().__init__(server_address, ReadTimeoutRequestHandler, **kwargs)

    def finish_request(self, request, client_address):
        request.settimeout(settings.EMBEDDED_READ_TIMEOUT_SECONDS)
        # An answer goes out in several small writes (the status line, headers, the body): with Nagle's algorithm
        # the later ones waited for the client's delayed acknowledgement of the first, some 40 ms a request on a
        # kept-alive connection (leak review: 64 ms against 17 ms on a new one). gunicorn sets it too.
        with contextlib.suppress(OSError):  # (not a TCP socket)
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().finish_request(request, client_address)


# What is left unread of a request's body (one answered without reading it all: refused, too large) is read and
# thrown away in chunks up to this much, and the connection serves the next request; more, and the answer says
# `Connection: close` and the connection is closed after a lingering read (`_linger`).
DRAIN_BYTES = 1 << 20
DRAIN_CHUNK = 1 << 16
LINGER_SECONDS = 5.0  # the longest the rest of a body is read for after its answer, before the connection is closed
LINGER_READ_SECONDS = 1.0  # ...and the longest one read of it waits
# The longest request line taken (bytes, its CRLF aside): gunicorn's default `--limit-request-line`, so that what
# `make run` takes is what production takes. Python's server took 65536, and a list's `Link` header, which repeats the
# query up to four times, then grew past what clients read (`requests` refuses a header line over 65536 bytes).
REQUEST_LINE_MAX = 4094


class BoundedDrainServerHandler(ServerHandler):
    """Django's development server read whatever the client still sent of a body the application had not read, in
    one read, after the answer: a refused upload or an over-long JSON body was held in memory whole (a 1 GB body
    sent after its 413 took 1 GB), and a `Content-Length` of 10**14 raised MemoryError. Here what is left is thrown
    away in chunks, at most DRAIN_BYTES of it; a larger rest closes the connection (as gunicorn and nginx do)."""

    def _unread(self) -> int:
        stdin = self.get_stdin()
        return max(0, stdin.limit - stdin._pos)

    def cleanup_headers(self):
        # A 204 or 304 sends no Content-Length (RFC 9110 8.6), yet its length is known: Django's server would close
        # the connection of an answer without one, and wsgiref write one of 0.
        no_content = self.status.startswith(("204", "304"))
        if no_content:
            self.headers["Content-Length"] = "0"
        super().cleanup_headers()
        if no_content:
            del self.headers["Content-Length"]
        # The connection ends after this answer, which says so (RFC 9110 15.5.9, 9112 9.6): a chunked body is never
        # read here (Django cannot; a method that takes a body was answered 411) and what is left of it must not be
        # read as the next request; more is left unread than DRAIN_BYTES; a 408 (a read that timed out, a body that
        # ended early); or the connection was ending already (HTTP/1.0, the client's `Connection: close`, a write
        # that timed out).
        if (
            "Transfer-Encoding" in self.request_handler.headers
            or self._unread() > DRAIN_BYTES
            or self.status.startswith("408")
            or self.request_handler.close_connection
        ):
            self.headers["Connection"] = "close"
            self.request_handler.close_connection = True
        self.request_handler.served_request_id = self.headers.get(request_ids.HEADER)

    def close(self):
        try:
            if self._unread() > DRAIN_BYTES:
                self.request_handler.close_connection = True
                _linger(self.request_handler.connection)
            else:
                stdin = self.get_stdin()
                while stdin.read(DRAIN_CHUNK):
                    pass
        except OSError:  # (the client went away, or stopped sending: the connection ends here)
            self.request_handler.close_connection = True
        finally:
            simple_server.ServerHandler.close(self)  # (not Django's: it reads the rest in one read)


def _linger(connection: socket.socket) -> None:
    """Close the sending side (the answer is out) and read what the client still sends for a while, so that the
    connection is not reset under an answer it has not read yet; then the server closes it. A client that stops
    sending or goes on past LINGER_SECONDS is cut off."""
    connection.shutdown(socket.SHUT_WR)
    connection.settimeout(LINGER_READ_SECONDS)
    deadline = time.monotonic() + LINGER_SECONDS
    while time.monotonic() < deadline and connection.recv(DRAIN_CHUNK):
        pass


# The request line's characters written escaped in the log: the C0 controls, DEL and the C1 controls, and the
# backslash that escapes them (so that a line sent with `\x1b` written out is told from one sent with ESC).
LOG_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))} | {ord("\\"): "\\\\"}
TLS_HANDSHAKE = "\x16\x03"  # (a TLS handshake record, SSL 3.0 or TLS 1.x)


class ReadTimeoutRequestHandler(WSGIRequestHandler):
    """Reads the request through `_AbortOnTimeout`: a read past the timeout is the connection given up, as a client
    that hung up is, so neither the server nor wsgiref logs a traceback for it (Django logs "Broken pipe"). The
    requests it refuses itself, before Django sees them, are answered with a problem document (`send_error`)."""

    served_request_id = None  # the `X-Request-Id` of the answer being sent (`BoundedDrainServerHandler`)

    def setup(self):
        super().setup()
        self.rfile = _AbortOnTimeout(self.rfile, self)
        self.wfile = _AbortOnTimeout(self.wfile, self)

    def log_request(self, code="-", size="-"):
        """The request line (written for a 4xx or 5xx: settings LOGGING) ends with the id its answer carried, which
        the request's other log lines start with. Its control characters are written escaped (`\\x1b`), as the
        standard library's server writes them and Django's "Not Found" line does: sent raw, anyone could colour or
        rewrite an operator's terminal without a login."""
        served, self.served_request_id = self.served_request_id, None
        line = self.requestline
        if not line.startswith(TLS_HANDSHAKE):  # (Django's own message for it: HTTPS spoken to this HTTP server)
            line = line.translate(LOG_ESCAPES)
        code = code.value if isinstance(code, HTTPStatus) else code
        if served is None:  # (a refusal of the server's own, before Django)
            self.log_message('"%s" %s %s', line, str(code), str(size))
        else:
            self.log_message('"%s" %s %s [request %s]', line, str(code), str(size), served)

    def get_environ(self):
        """Django's, without wsgiref's `text/plain` for a request that has no Content-Type (RFC 9110 8.3: the
        client said nothing of its body; a 415 named "text/plain"), as gunicorn leaves it out."""
        environ = super().get_environ()
        if self.headers.get("Content-Type") is None:
            environ.pop("CONTENT_TYPE", None)
        return environ

    def handle_one_request(self):
        """Django's, with the handler that throws an unread body away in chunks (`BoundedDrainServerHandler`)."""
        self.raw_requestline = self.rfile.readline(REQUEST_LINE_MAX + 3)
        if len(self.raw_requestline.rstrip(b"\r\n")) > REQUEST_LINE_MAX:
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
            return
        reader = self.rfile
        self.rfile = lines = _LinesRead(reader)  # (the header lines as sent: `bare_cr_or_nul`)
        try:
            if not self.parse_request():
                return
        finally:
            self.rfile = reader
        if (refused := bare_cr_or_nul([self.raw_requestline, *lines.lines])) is not None:
            self.send_error(400, refused)
            self.close_connection = True
            return
        if (refused := framing_error(self.command, self.request_version, self.headers)) is not None:
            self.send_error(400, refused)
            self.close_connection = True
            return
        if (coding_refused := transfer_coding_refusal(self.request_version, self.headers)) is not None:
            self.send_error(*coding_refused)
            self.close_connection = True
            return
        self._origin_form()
        handler = BoundedDrainServerHandler(self.rfile, self.wfile, self.get_stderr(), self.get_environ())
        handler.request_handler = self
        handler.run(self.server.get_app())

    def _origin_form(self) -> None:
        """A target in absolute form (`GET http://host/path`, which a server must take, RFC 9112 3.2.2) as the path
        it names, with the target's host in place of the Host header."""
        target = urlsplit(self.path)
        if target.scheme.lower() in ("http", "https") and target.netloc:
            self.path = urlunsplit(("", "", target.path or "/", target.query, ""))
            del self.headers["Host"]
            self.headers["Host"] = target.netloc

    def send_error(self, code, message=None, explain=None):
        """A refusal of the server's own (a request line over REQUEST_LINE_MAX bytes; a header line over 65536 bytes
        or more than 100 headers, `http.server`'s limits; a request that is no HTTP) as a problem document with the
        error keys gunicorn's worker answers (`platform_site.server`): it was an HTML page."""
        error_key, detail = {
            414: ("uriTooLong", "The request line is too long: send fewer or shorter query parameters."),
            431: ("requestHeadersTooLarge", f"The request headers are too large ({message}): send fewer or shorter."),
            501: ("transferCodingNotImplemented", f"{message}: send the body with a Content-Length."),
        }.get(code, ("malformedRequest", f"The request is not valid HTTP/1.1: {message}."))
        # (Django's `log_message` reads the second argument as a text: None, for a request line too long, made the
        # refusal a traceback and an empty answer.)
        self.log_error("code %d, message %s", code, message or detail)
        path = urlsplit(getattr(self, "path", "") or "").path
        body = json.dumps(problem_body(status_code=code, error_key=error_key, detail=detail, path=path)).encode()
        # Refused before its HTTP version was read, a request counts as HTTP/0.9, which `http.server` answers with
        # the body alone: the status line and headers say what the body is.
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"
        self.send_response(code)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", PROBLEM_CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # (A refusal made before the request line was parsed, `command` unset, is a HEAD's too when its line says so.)
        method = getattr(self, "command", None) or getattr(self, "raw_requestline", b"").split(b" ", 1)[0].decode(
            "latin-1"
        )
        if method != "HEAD":
            self.wfile.write(body)


METHOD = re.compile(r"[A-Z]+")  # (methods are case-sensitive, RFC 9110 9.1: `delete` is no DELETE)
DECIMAL = re.compile(r"[0-9]+")


def bare_cr_or_nul(lines: list[bytes]) -> str | None:
    """Why the request line or a header line is refused for a CR not followed by LF or a NUL, or None. Python's
    header parser ends a line at a bare CR too: `X-Foo: a<CR>Authorization: ...` was taken as two headers, where a
    proxy that keeps the CR (RFC 9112 2.2 lets a recipient) sees one, and forwards a header it never checked. gunicorn
    refuses such lines; RFC 9110 5.5 calls a CR, LF or NUL in a field value invalid and dangerous."""
    for line in lines:
        text = line.removesuffix(b"\n").removesuffix(b"\r")
        if b"\r" in text or b"\0" in text:
            return "a line of the request holds a CR not followed by LF, or a NUL"
    return None


def framing_error(method: str, version: str, headers) -> str | None:
    """Why a request's framing is ambiguous, or None. Python's server took a Content-Length of `abc` as 0 (the body
    then read as the next request) and framed a request with both a Content-Length and a Transfer-Encoding by the
    length (the chunks then read as a request of their own: smuggling past a proxy that frames by the chunks). These
    are refused as gunicorn refuses them (RFC 9112 6.3), as is an HTTP/1.1 request with no Host or two."""
    if not METHOD.fullmatch(method):
        return f"the method {method[:40]!r} is not an upper-case token"
    lengths = headers.get_all("Content-Length") or []
    if len(lengths) > 1 or any(not DECIMAL.fullmatch(length.strip()) for length in lengths):
        return "Content-Length must be one decimal number"
    if lengths and "Transfer-Encoding" in headers:
        return "a request has a Content-Length or a Transfer-Encoding, not both"
    if version == "HTTP/1.1" and len(headers.get_all("Host") or []) != 1:
        return "an HTTP/1.1 request has one Host header"
    return None


TRANSFER_CODINGS = ("identity", "compress", "deflate", "gzip")  # (and chunked, last) what gunicorn knows


def transfer_coding_refusal(version: str, headers) -> tuple[int, str] | None:
    """(status, message) refusing a request's `Transfer-Encoding` as gunicorn refuses it (`set_body_reader`), or
    None: a coding it does not know is 501 (it was a 411 for a POST, and a GET was answered), `chunked` twice or not
    last, or in an HTTP/1.0 request, is 400 (RFC 9112 6.1, 6.3: it was a 411)."""
    chunked = False
    for value in headers.get_all("Transfer-Encoding") or []:
        for coding in (part.strip().lower() for part in value.split(",")):
            if coding == "chunked" and chunked:
                return 400, "chunked is applied once"
            if coding == "chunked":
                chunked = True
            elif coding not in TRANSFER_CODINGS:
                return 501, f"Unsupported transfer coding: {value[:80]!r}"
            elif chunked:
                return 400, "chunked must be the last transfer coding"
    if chunked and version != "HTTP/1.1":
        return 400, f"a {version} request cannot be chunked: send the body with a Content-Length"
    return None


class _LinesRead:
    """A reader of the request socket that keeps the lines read through it (the header lines `parse_request` reads)."""

    def __init__(self, reader):
        self._reader = reader
        self.lines: list[bytes] = []

    def readline(self, *args):
        line = self._reader.readline(*args)
        self.lines.append(line)
        return line

    def __getattr__(self, name):
        return getattr(self._reader, name)


class _AbortOnTimeout:
    """A file of the request's socket (its reader or its writer) whose reads or writes after
    EMBEDDED_READ_TIMEOUT_SECONDS without progress raise ConnectionAbortedError and end the connection: a client that
    sends nothing, or takes nothing of its answer, has given up, as one that hung up has. (The first raised
    TimeoutError, the next ones a plain OSError: "cannot read from timed out object". A write's TimeoutError was
    logged by wsgiref as a traceback, and the connection then waited another timeout for a next request.)"""

    def __init__(self, file, handler):
        self._file = file
        self._handler = handler
        self._timed_out = False

    def _call(self, method, *args):
        if not self._timed_out:
            try:
                return method(*args)
            except TimeoutError:
                self._timed_out = True
        self._handler.close_connection = True
        raise ConnectionAbortedError(f"no progress for {settings.EMBEDDED_READ_TIMEOUT_SECONDS:g} s")

    def read(self, *args):
        return self._call(self._file.read, *args)

    def readline(self, *args):
        return self._call(self._file.readline, *args)

    def write(self, *args):
        return self._call(self._file.write, *args)

    def __getattr__(self, name):
        return getattr(self._file, name)


class Runserver(RunserverCommand):
    """`runserver` (staticfiles' own: it serves the admin's and the pages' static files) on `ReadTimeoutWSGIServer`,
    its static files through `ProblemStaticFilesHandler`."""

    server_cls = ReadTimeoutWSGIServer

    def get_handler(self, *args, **options):
        handler = super().get_handler(*args, **options)
        return ProblemStaticFilesHandler(handler.application) if isinstance(handler, StaticFilesHandler) else handler


STATIC_METHODS = ("GET", "HEAD")


class ProblemStaticFilesHandler(StaticFilesHandler):
    """Staticfiles' handler (it serves `/static/...` before any middleware runs), answering a path it has no file
    for with the API's 404 problem document (`errors.handler404`), as any unknown URL. A path climbing out of the
    static folders (`/static/../x`, `/static/%2e%2e/x`) raised SuspiciousFileOperation, which nothing caught: a 500
    text/plain from wsgiref. A missing file was Django's HTML 404 page (its debug page under `make run`). Its answers
    get the headers of every answer (`answer_headers`: `X-Request-Id` among them), as the middleware gives the rest,
    but `no-store`: a static file is no owner's data, whoever asks for it. A host not in ALLOWED_HOSTS is refused as
    on every other path (`host_refusal`: it got the file)."""

    def get_response(self, request):
        if (response := host_refusal(request)) is None:
            if request.method not in STATIC_METHODS:
                # staticfiles' `serve` answers any method with the file: a 200 to a DELETE says it was deleted
                response = method_not_allowed(request, STATIC_METHODS)
            else:
                try:
                    response = self.serve(request)
                except (Http404, SuspiciousFileOperation):
                    response = handler404(request)
        return answer_headers(request, response, owners_data=False)


def restart_recovery(started: datetime) -> None:
    """Send the sweeps at once, everything untouched since `started` (this process's start) counting as in flight
    too long: conversions, merges and operation builds are sent again (each send an attempt: work that kills the
    process every time ends FAILED after CONVERSION_MAX_ATTEMPTS starts; a data set whose task never started uses
    none), uploads cut off are removed, due webhook deliveries are sent."""
    from conversion.tasks import conversion_storage_sweep, conversion_sweep
    from operations.tasks import operations_sweep
    from webhooks.tasks import webhooks_deliveries_sweep

    limit = started.isoformat()
    conversion_sweep.delay(limit, True)
    operations_sweep.delay(limit)
    conversion_storage_sweep.delay(limit)
    webhooks_deliveries_sweep.delay()


# Celery's INFO lines of each task (received, succeeded) and of each periodic send: under `make run`, whose log is the
# API's too, they were most of it (9.6 MB in 35 minutes of a load test; six lines a minute when idle), burying its
# warnings. A task that fails is still logged (ERROR), and every line is back with LOG_LEVEL=DEBUG.
ROUTINE_TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace", "celery.beat")


def routine_task_lines_quiet() -> None:
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in ROUTINE_TASK_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


def start_embedded_worker() -> None:
    """Celery workers and beat as daemon threads of this process, on the in-memory broker: one worker for the
    webhook deliveries (posts that may hang on a receiver, up to 2 x WEBHOOK_TIMEOUT_SECONDS each), one for the
    rest, so a hanging receiver never holds up a conversion."""
    from celery.beat import EmbeddedService

    from platform_site.celery import app, embedded_workers

    # (8 delivery threads: one owner's receivers take at most WEBHOOK_MAX_IN_FLIGHT_PER_OWNER, 4, of them)
    for queue, concurrency in (("celery", 2), ("webhooks", 8)):
        _worker_start(app, queue, concurrency)
    embedded_workers.set()
    beat = EmbeddedService(app, thread=True, schedule_filename=str(settings.VAR_DIR / "celerybeat-schedule"))
    beat.start()


# The in-memory broker is no event-loop transport: its worker runs Celery's blocking loop, which applies the
# acknowledgements of finished tasks only between waits of 2 s. With CELERY_WORKER_PREFETCH_MULTIPLIER's 4, a worker
# of 2 threads took 8 tasks per 2 s, however quick (a deleted user's thousands of data sets, each a no-op, held up
# every other upload for minutes: the security review); at 64 it takes 128 (bench/embedded_tasks.py). The queue is in
# this process, so a task taken early costs nothing and is lost with the process as a queued one is.
EMBEDDED_PREFETCH_MULTIPLIER = 64


def _worker_start(app, queue: str, concurrency: int):
    """A worker thread taking `queue` only; the worker is returned started and ready. Celery keeps the queues a
    worker takes in the app (one selection for the process), and a worker reads it as it starts consuming: so each
    is started, and ready, before the next selects its own."""
    ready = threading.Event()
    worker = app.WorkController(
        pool_cls="threads",
        concurrency=concurrency,
        queues=[queue],
        hostname=f"{queue}@embedded",
        prefetch_multiplier=EMBEDDED_PREFETCH_MULTIPLIER,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        loglevel="INFO",
        ready_callback=lambda consumer: ready.set(),
    )
    threading.Thread(target=worker.start, name=f"celery-worker-{queue}", daemon=True).start()
    if not ready.wait(timeout=60):
        raise RuntimeError(f"the embedded Celery worker for queue {queue!r} did not start")
    return worker
