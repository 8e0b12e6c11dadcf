"""Magic link tokens are kept out of the logs: a link's address is its only credential, and Django, the embedded
server and gunicorn each logged the path of every refused request ("Bad Request: /links/<token>/upload",
`"POST /links/<token>/upload HTTP/1.1" 400`). What the configured handlers and the servers' own log files hold is
checked, not what pytest's capture sees."""

import io
import logging
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from django.test import Client

from magiclinks import services
from magiclinks.models import MagicLink
from platform_site.redaction import LinkTokenFilter
from platform_site.server import NO_BROKER_WARNING
from tests.api.embedded import REPO, embedded_env, embedded_serve, owner_token
from tests.receiver import unused_port

pytestmark = pytest.mark.embedded
REDACTED_UPLOAD = "/links/[token]/upload"


@contextmanager
def configured_log_output():
    """What the handlers of settings LOGGING write meanwhile (their streams swapped for one buffer)."""
    handlers = [
        h
        for name in ("", "django.server")
        for h in logging.getLogger(name).handlers
        if any(isinstance(f, LinkTokenFilter) for f in h.filters)
    ]
    assert handlers, "no handler of settings LOGGING filters link tokens"
    buffer = io.StringIO()
    streams = [h.setStream(buffer) for h in handlers]
    try:
        yield buffer
    finally:
        for handler, stream in zip(handlers, streams, strict=True):
            handler.setStream(stream)


@pytest.mark.django_db
def test_refused_requests_of_a_live_link_log_no_token(core_user, settings):
    settings.CONVERSION_UPLOAD_MAX_BYTES = 10
    _link, token = services.magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD)
    upload = f"/links/{token}/upload"
    with configured_log_output() as log:
        assert Client().post(upload, {}).status_code == 400  # no file
        too_large = io.BytesIO(b"PK\x03\x04" + bytes(100))
        too_large.name = "big.zip"
        assert Client().post(upload, {"file": too_large}).status_code == 413
        assert Client().patch(upload).status_code == 405
        assert Client(enforce_csrf_checks=True).post(upload, {}).status_code == 403  # no CSRF cookie
    lines = log.getvalue()
    assert token not in lines
    for logged in ("Bad Request: ", "Request Entity Too Large: ", "Method Not Allowed: ", "Forbidden (CSRF"):
        assert logged in lines, lines
    assert lines.count(REDACTED_UPLOAD) >= 4, lines


def test_the_callback_address_is_kept_and_tracebacks_are_redacted():
    from platform_site.redaction import redact

    assert redact("GET /links/oauth/callback?error=access_denied HTTP/1.1") == (
        "GET /links/oauth/callback?error=access_denied HTTP/1.1"
    )
    referer = '"https://api.example.com/links/Ab-_9/batches/1"'
    assert redact(referer) == '"https://api.example.com/links/[token]/batches/1"'
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), None)
    try:
        raise ValueError("/links/secret-token/upload broke")
    except ValueError:
        record.exc_info = sys.exc_info()
    LinkTokenFilter().filter(record)
    assert "secret-token" not in logging.Formatter().format(record)


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        ("GET /links/oauth/callback?code=C0DE&state=ST4TE HTTP/1.1", "?code=[redacted]&state=[redacted] HTTP/1.1"),
        ('"https://x.example/links/oauth/callback?state=ST4TE&code=C0DE"', '?state=[redacted]&code=[redacted]"'),
        ("GET /users?size=5&access_token=eyJ.eyJ.s1g HTTP/1.1", "/users?size=5&access_token=[redacted] HTTP/1.1"),
        ("GET /users?id_token=eyJ.eyJ.s1g&page=0 HTTP/1.1", "/users?id_token=[redacted]&page=0 HTTP/1.1"),
        ("GET /users?TOKEN=eyJ.eyJ.s1g#x HTTP/1.1", "/users?TOKEN=[redacted]#x HTTP/1.1"),
        # Other credentials a client may send there (security review), and the callback's address with a slash
        (
            "GET /x?refresh_token=eyJ1&client_secret=eyJ2&Password=eyJ3&api_key=eyJ4 HTTP/1.1",
            "?refresh_token=[redacted]&client_secret=[redacted]&Password=[redacted]&api_key=[redacted] HTTP/1.1",
        ),
        ("GET /links/oauth/callback/?code=C0DE&state=ST4TE HTTP/1.1", "/?code=[redacted]&state=[redacted] HTTP/1.1"),
        ("GET /links/oauth/callback%2F?code=C0DE&state=ST4TE HTTP/1.1", "?code=[redacted]&state=[redacted] HTTP/1.1"),
        # each alone on its line (no "token=" beside it)
        ("GET /users?password=eyJ5 HTTP/1.1", "/users?password=[redacted] HTTP/1.1"),
        ("GET /users?client_secret=eyJ6 HTTP/1.1", "/users?client_secret=[redacted] HTTP/1.1"),
        ("GET /users?api_key=eyJ7 HTTP/1.1", "/users?api_key=[redacted] HTTP/1.1"),
    ],
)
def test_tokens_in_a_query_and_the_callbacks_code_and_state_are_redacted(line, logged):
    """A bearer token sent in the query by mistake was logged in full, as were the OAuth callback's `code` and
    `state` on its refused lines."""
    from platform_site.redaction import redact

    redacted = redact(line)
    assert logged in redacted and not any(secret in redacted for secret in ("C0DE", "ST4TE", "eyJ"))


@pytest.mark.parametrize(
    "line",
    [
        "GET /links%2FAb-_9/batches/1 HTTP/1.1",
        "GET /%6Cinks/Ab-_9 HTTP/1.1",
        "GET /links%2fAb-_9 HTTP/1.1",
        "GET /links//Ab-_9/upload HTTP/1.1",
        "GET /LINKS/Ab-_9 HTTP/1.1",
        "GET /links%2Foauth%2Fcallback?code=Ab-_9&state=Ab-_9 HTTP/1.1",
    ],
)
def test_a_link_address_written_another_way_is_redacted_too(line):
    """Django serves `/links%2F<token>` and `/%6Cinks/<token>` as the link's pages: their request lines were logged
    with the token, the redaction knowing only `/links/`."""
    from platform_site.redaction import redact

    assert "Ab-_9" not in redact(line)


@pytest.mark.parametrize("path", ["/" * 65_000, "%2F" * 21_000, "/l" * 32_000])
def test_a_path_of_many_slashes_is_redacted_without_holding_the_process(path):
    """A pattern that started afresh at every slash of a run (quadratic: 19 s for 16,000, minutes for a 65,000-byte
    request line) held the whole process while a 404's log line was redacted: one request without a token froze the
    server. Not a performance figure: the bound is a thousand times what the redaction takes (a few ms), in a
    process of its own that can be stopped."""
    script = f"from platform_site.redaction import redact; redact({path!r} + ' HTTP/1.1')"
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30, cwd=REPO)


def test_other_query_values_are_kept():
    from platform_site.redaction import redact

    line = "GET /fields?code=1&state=2&mytoken=3&tokens=4 HTTP/1.1"  # (a code and state of no callback)
    assert redact(line) == line


def _secret_queries(base: str) -> tuple[str, ...]:
    """Refused requests with a token in the query (it belongs in the Authorization header) and an OAuth callback
    with a code and a state no connection is waiting for: the secrets they sent."""
    token = owner_token(base)
    for name in ("access_token", "id_token", "token"):
        refused = requests.get(f"{base}/services/usermanagement/api/users?{name}={token}", timeout=30)
        assert refused.status_code == 401
    code, state = "secret-oauth-code-1", "secret-oauth-state-1"
    callback = requests.get(f"{base}/links/oauth/callback?code={code}&state={state}", timeout=30)
    assert callback.status_code >= 400
    return token, code, state


def _assert_secrets_redacted(secrets: tuple[str, ...], log: str) -> None:
    assert not any(secret in log for secret in secrets), log
    for name in ("access_token", "id_token", "token"):
        assert f"/services/usermanagement/api/users?{name}=[redacted] HTTP/1.1" in log, log
    assert "/links/oauth/callback?code=[redacted]&state=[redacted] HTTP/1.1" in log, log


def _refused_requests(base: str) -> str:
    """A live link's token, after a 400, a 413 (the server's limit: 10 bytes), a 405 and a CSRF 403 of its upload."""
    token_ = owner_token(base)
    created = requests.post(
        f"{base}/services/widgets/api/magic-link/file-upload", json={"externalId": "grower-logs"},
        headers={"Authorization": f"Bearer {token_}"}, timeout=30,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    token = created.json()["link"].rstrip("/").rsplit("/", 1)[1]
    upload = f"{base}/links/{token}/upload"
    browser = requests.Session()
    page = browser.get(f"{base}/links/{token}", timeout=30)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    form = {"csrfmiddlewaretoken": csrf}
    headers = {"Referer": f"{base}/links/{token}"}
    assert browser.post(upload, data=form, headers=headers, timeout=30).status_code == 400
    big = {"file": ("big.zip", b"PK\x03\x04" + bytes(100))}
    assert browser.post(upload, data=form, files=big, headers=headers, timeout=30).status_code == 413
    assert browser.patch(upload, timeout=30).status_code == 405
    assert requests.post(upload, data={"provider": "Other"}, timeout=30).status_code == 403
    return token


def _assert_redacted(token: str, log: str, request_line: str) -> None:
    assert token not in log, log
    assert request_line in log, log


def test_the_embedded_servers_request_log_holds_no_token(tmp_path):
    env = embedded_env(tmp_path, CONVERSION_UPLOAD_MAX_BYTES="10")
    log_path = tmp_path / "server.log"
    with embedded_serve(env, log_path) as base:
        token = _refused_requests(base)
        secrets = _secret_queries(base)
        time.sleep(0.5)  # (the last lines written)
    log = log_path.read_text()
    _assert_secrets_redacted(secrets, log)
    _assert_redacted(token, log, f'"POST {REDACTED_UPLOAD} HTTP/1.1" 400')
    assert f'"PATCH {REDACTED_UPLOAD} HTTP/1.1" 405' in log and "Bad Request: " + REDACTED_UPLOAD in log


def test_gunicorns_access_and_error_logs_hold_no_token(tmp_path):
    env = embedded_env(tmp_path, CONVERSION_UPLOAD_MAX_BYTES="10")
    port = unused_port()
    logs = {name: tmp_path / f"{name}.log" for name in ("access", "error", "output")}
    with open(logs["output"], "w") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "platform_site.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
             "--worker-class", "platform_site.server.ProblemThreadWorker", "--threads", "2",
             "--access-logfile", str(logs["access"]), "--error-logfile", str(logs["error"]), "--log-level", "info"],
            cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_for(base, server, logs["output"])
            token = _refused_requests(base)
            secrets = _secret_queries(base)
            # A request gunicorn itself refuses (a request line over its limit) is logged by the worker too
            long_line = requests.get(f"{base}/links/{token}/upload?q={'x' * 5000}", timeout=30)
            assert long_line.status_code == 414
            # No broker and no worker in the process: the instance says so to its monitor (it said "ok")
            health = requests.get(f"{base}/health", timeout=30).json()
            assert (health["status"], health["broker"]) == ("degraded", "none")
        finally:
            server.terminate()
            server.wait(timeout=30)
    access = logs["access"].read_text()
    _assert_secrets_redacted(secrets, access)
    _assert_redacted(token, access, f'"POST {REDACTED_UPLOAD} HTTP/1.1" 400')
    assert f'"PATCH {REDACTED_UPLOAD} HTTP/1.1" 405' in access and f'{REDACTED_UPLOAD} HTTP/1.1" 413' in access
    assert f'"http://127.0.0.1:{port}/links/[token]"' in access  # the Referer
    error = logs["error"].read_text() + logs["output"].read_text()
    assert not any(secret in error for secret in secrets)
    assert token not in error and "Invalid request from ip=" in error and "Bad Request: " + REDACTED_UPLOAD in error
    # No broker: gunicorn runs no task of it, and says so (uploads stayed RECEIVED, webhooks PENDING, unsaid)
    assert NO_BROKER_WARNING in error


# A worker started from the command line sets up its logging so (`celery.apps.worker.Worker.setup_logging`), then logs
WORKER_LOGGING = """
import django, logging
django.setup()
from platform_site.celery import app
link_token, query_token, logfile = __import__("sys").argv[1:]
app.log.setup_logging_subsystem(loglevel="WARNING", logfile=logfile)  # (the worker's default `--loglevel`)
logging.getLogger("webhooks.services").info("posted to /links/%s/upload?token=%s", link_token, query_token)
logging.getLogger("celery.task").warning("task line: /links/%s/x", link_token)
"""


def test_a_celery_workers_log_lines_hold_no_token(tmp_path):
    """A worker started from the command line put its own handlers in place of those of settings LOGGING (Celery's
    `worker_hijack_root_logger`): its lines went out without their filters, tokens in full, and none under its
    `--loglevel` (WARNING by default), whatever LOG_LEVEL said."""
    env = embedded_env(tmp_path)
    link_token, query_token = "Lk7secretLinkToken", "Qy9secretQueryToken"
    logfile = tmp_path / "worker.log"  # (`--logfile`: where a detached worker writes, its standard error lost)
    done = subprocess.run(
        [sys.executable, "-c", WORKER_LOGGING, link_token, query_token, str(logfile)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert link_token not in done.stderr and query_token not in done.stderr
    assert logfile.read_text().splitlines() == done.stderr.splitlines()[-2:]
    lines = done.stderr.splitlines()
    assert any(
        line.endswith(" INFO webhooks.services: posted to /links/[token]/upload?token=[redacted]") for line in lines
    )
    assert any(line.endswith(" WARNING celery.task: task line: /links/[token]/x") for line in lines), done.stderr


def _wait_for(base: str, server: subprocess.Popen, output: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(base + "/api/docs/", timeout=2)
            return
        except (requests.ConnectionError, requests.Timeout):  # (a worker still starting on a busy host)
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("gunicorn did not start: " + output.read_text()[-2000:])
            time.sleep(0.2)
