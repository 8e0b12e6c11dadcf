"""The embedded default as `make run` starts it (`manage.py serve` on a SpatiaLite file, tasks in-process), under
concurrent writes: every request waits its turn for the database instead of failing with "database is locked"."""

import io
import json
import socket
import threading
import time
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import pytest

from tests.api.embedded import embedded_env, embedded_serve, owner_token
from tests.api.raw_http import send_raw

pytestmark = pytest.mark.embedded


def _call(base: str, method: str, path: str, body: dict | None = None, token: str | None = None):
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {}),
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


class EmbeddedServer(NamedTuple):
    base: str
    token: str
    database: Path


@pytest.fixture(scope="module")
def embedded_server(tmp_path_factory):
    """`make run`'s configuration in a scratch VAR_DIR: migrate, an owner, then `manage.py serve`."""
    var_dir = tmp_path_factory.mktemp("embedded")
    env = embedded_env(
        var_dir,
        WEBHOOK_TIMEOUT_SECONDS="60",  # a receiver that hangs holds its delivery that long
        DATABASE_URL=f"spatialite:///{var_dir / 'platform.sqlite3'}?timeout=5",  # a writer waits 5 s at most
    )
    with embedded_serve(env, var_dir / "server.log") as base:
        yield EmbeddedServer(base, owner_token(base), var_dir / "platform.sqlite3")


def test_concurrent_writes_all_succeed_on_the_embedded_database(embedded_server):
    """Each of these requests reads, then writes, in one transaction (finding or creating the core user of an
    external id; the one-webhook-per-event rule). SQLite refused such a transaction at once when another held
    the write lock ("database is locked": a 500) instead of waiting for it."""
    base, token, _ = embedded_server

    def link(i: int):
        return _call(base, "POST", "/services/widgets/api/magic-link/file-upload", {"externalId": f"grower-{i}"}, token)

    def webhook(i: int):
        # (an event no other test of this module's shared server registers: one of these ten is the first)
        body = {"name": f"hook {i}", "url": f"http://127.0.0.1:9/{i}", "secret": "s" * 16, "events": ["machineCreated"]}
        return _call(base, "POST", "/services/alerts/api/alerts/webhooks", body, token)

    with ThreadPoolExecutor(max_workers=16) as pool:
        links = list(pool.map(link, range(30)))
        hooks = list(pool.map(webhook, range(10)))

    assert [status for status, _ in links] == [201] * 30, links
    assert sorted(status for status, _ in hooks) == [201] + [400] * 9, hooks
    assert {body["errorKey"] for status, body in hooks if status == 400} == {"eventRegisteredTwice"}
    status, users = _call(base, "GET", "/services/usermanagement/api/users?size=100", token=token)
    assert status == 200
    # (the users of this test: the module's other tests make their own on the shared server)
    made = sorted(u["externalId"] for u in users if (u["externalId"] or "").startswith("grower-"))
    assert made == sorted(f"grower-{i}" for i in range(30))


def test_a_chunked_body_is_411_on_the_embedded_server(embedded_server):
    """The development server cannot decode `Transfer-Encoding: chunked`: Django read the body as empty (a field's
    JSON was "geometry: This field is required."). It is refused with 411, and nothing is written."""
    from tests.api.raw_http import send_chunked

    base, token, _ = embedded_server
    status, user = _call(base, "POST", "/services/usermanagement/api/users", {"name": "chunked"}, token)
    assert status == 201, user
    body = json.dumps(
        {"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [0.01, 0], [0.01, 0.01], [0, 0]]]}}
    ).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    fields = f"/services/fields/api/users/{user['id']}/fields"
    status, problem = send_chunked(base, fields, [body[:20], body[20:]], headers)
    assert (status, problem["errorKey"]) == (411, "lengthRequired"), problem
    request = f"POST {fields} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
    [(status, answered)] = _answers(base, f"{request}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode())
    assert (status, answered["cache-control"]) == (411, "no-store")  # (as every answer to a request with a token)
    assert len(answered["x-request-id"]) == 36  # (a UUID: answered before the middleware, named all the same)
    listed = f"/services/fields/api/fields?coreUserId={user['id']}"
    assert _call(base, "GET", listed, token=token) == (200, [])
    assert _call(base, "POST", fields, json.loads(body), token)[0] == 201
    assert len(_call(base, "GET", listed, token=token)[1]) == 1


class HangingReceiver:
    """A webhook receiver that takes every connection and never answers; it notes when a client gives up."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.given_up = 0
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.open.append(connection)
            threading.Thread(target=self._hold, args=(connection,), daemon=True).start()

    def _hold(self, connection):
        try:
            while connection.recv(65536):
                pass
        except OSError:
            pass
        self.given_up += 1

    def close(self):
        self.sock.close()
        for connection in self.open:
            connection.close()


def _upload(base: str, token: str, core_user_id: str, name: str, payload: bytes) -> tuple[int, dict]:
    boundary = "----embedded-test"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + payload
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"{base}/services/operations/api/batch?coreUserId={core_user_id}&provider=Other",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


def test_receivers_that_hang_do_not_hold_up_conversions_on_the_embedded_server(embedded_server):
    """Webhook deliveries have workers of their own: a conversion runs while every delivery worker waits on a
    receiver that never answers (one worker for all held the conversion until the posts timed out)."""
    base, token, _ = embedded_server
    receiver = HangingReceiver()
    try:
        hook = {"name": "hangs", "url": f"http://127.0.0.1:{receiver.port}/", "secret": "s" * 16}
        status, body = _call(
            base, "POST", "/services/alerts/api/alerts/webhooks", hook | {"events": ["fieldBoundaryCreated"]}, token
        )
        assert status == 201, body
        status, user = _call(base, "POST", "/services/usermanagement/api/users", {"name": "hangs"}, token)
        fields = f"/services/fields/api/users/{user['id']}/fields"
        for n in range(8):  # more deliveries than there are delivery workers
            square = [[[n, 0], [n + 0.01, 0], [n + 0.01, 0.01], [n, 0.01], [n, 0]]]
            assert (
                _call(base, "POST", fields, {"geometry": {"type": "Polygon", "coordinates": square}}, token)[0] == 201
            )
        deadline = time.monotonic() + 30
        while receiver.accepted < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.accepted >= 2  # deliveries wait on the receiver (as many as a worker for all had threads)
        feature = {"type": "Feature", "properties": {"Yield": 10.0},
                   "geometry": {"type": "Point", "coordinates": [0.005, 0.005]}}  # fmt: skip
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("points.geojson", json.dumps({"type": "FeatureCollection", "features": [feature]}))
        status, batch = _upload(base, token, user["id"], "points.zip", archive.getvalue())
        assert status == 201, batch
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            status, batch = _call(base, "GET", f"/services/operations/api/batch/{batch['id']}", token=token)
            if batch["status"] != "RECEIVED":
                break
            time.sleep(0.2)
        assert batch["status"] != "RECEIVED", batch
        assert receiver.given_up == 0  # converted while the deliveries still waited
    finally:
        receiver.close()


def test_a_request_that_waits_too_long_for_the_database_is_503_to_try_again(embedded_server):
    """Another writer holds SQLite's lock past the server's wait (here 5 s; a long change): the request is told to
    try again, not that the server failed (it was a 500)."""
    import sqlite3

    base, token, database = embedded_server
    users = "/services/usermanagement/api/users"
    holder = sqlite3.connect(database, timeout=30)
    try:
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as a long change holds it
        status, problem = _call(base, "POST", users, {"name": "waits"}, token)
        assert (status, problem["errorKey"]) == (503, "databaseBusy"), problem
    finally:
        holder.rollback()
        holder.close()
    status, user = _call(base, "POST", users, {"name": "waits"}, token)
    assert status == 201, user


def test_a_link_page_that_waits_too_long_for_the_database_says_to_try_again(embedded_server):
    """A grower opening a link while another writer held the database past the wait got the 500 of a fault, a JSON
    problem document, in the browser; the page says to try again, and when (the API's 503, as a page)."""
    import sqlite3

    base, token, database = embedded_server
    status, created = _call(base, "POST", "/services/widgets/api/magic-link/file-upload", {"externalId": "busy"}, token)
    assert status == 201, created
    page_url = base + urlsplit(created["link"]).path
    holder = sqlite3.connect(database, timeout=30)
    try:
        holder.execute("BEGIN IMMEDIATE")  # (opening the page counts its use: a write)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(page_url, timeout=60)
    finally:
        holder.rollback()
        holder.close()
    page = refused.value.read().decode()
    assert (refused.value.code, refused.value.headers["Retry-After"]) == (503, "5")
    assert refused.value.headers["Content-Type"].startswith("text/html") and "Try again in a moment" in page
    with urllib.request.urlopen(page_url, timeout=60) as response:
        assert response.status == 200


def test_a_long_read_does_not_hold_back_writers(embedded_server):
    """A read transaction that lasts (a large export, an admin page, a backup) while requests write: in SQLite's
    rollback journal every writer waited for it to end and then failed (the server's wait here is 5 s); the embedded
    database runs in write-ahead-log mode, where the write commits at once and the reader keeps its snapshot."""
    import sqlite3

    base, token, database = embedded_server
    users = "/services/usermanagement/api/users"
    reader = sqlite3.connect(database, timeout=30)
    try:
        assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        reader.execute("BEGIN")
        before = reader.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
        started = time.monotonic()
        status, user = _call(base, "POST", users, {"name": "written during a read"}, token)
        assert status == 201, user
        assert time.monotonic() - started < 4  # not after the wait ran out
        assert reader.execute("SELECT count(*) FROM django_migrations").fetchone()[0] == before
    finally:
        reader.rollback()
        reader.close()
    status, listed = _call(base, "GET", f"{users}/{user['id']}", token=token)
    assert (status, listed["name"]) == (200, "written during a read")


STATIC_PATHS_WITH_NO_FILE = [
    "/static/../x",
    "/static/%2e%2e/x",
    "/static/..%2f..%2fx",
    "/static/../../etc/passwd",
    "/static/no-such.css",
]


@pytest.mark.parametrize("path", STATIC_PATHS_WITH_NO_FILE)
def test_a_static_path_with_no_file_is_the_apis_404_on_the_embedded_server(embedded_server, path):
    """A path climbing out of the static folders was a 500 text/plain (Django's static handler raised
    SuspiciousFileOperation); a missing file was Django's HTML 404. Sent as it is (`curl --path-as-is`)."""

    host = embedded_server.base.removeprefix("http://")
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    status, content_type, problem = send_raw(embedded_server.base, request)
    assert (status, content_type) == (404, "application/problem+json"), problem
    assert (problem["errorKey"], problem["detail"]) == ("notFound", "No such endpoint or resource.")


@pytest.mark.parametrize("path", ["/static/admin/css/base.css", "/services/usermanagement/api/users"])
def test_a_host_not_allowed_is_refused_on_static_paths_as_on_the_apis(embedded_server, path):
    """Static files are served before the middleware that refuses a host not in ALLOWED_HOSTS: one was served (200)
    for `Host: evil.example`, where every other path answered 400."""

    request = f"GET {path} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n".encode()
    status, content_type, problem = send_raw(embedded_server.base, request)
    assert (status, content_type, problem["errorKey"]) == (400, "application/problem+json", "malformedRequest")


def test_static_files_are_still_served_on_the_embedded_server(embedded_server):
    """...with a request id, as every answer (they are served before the middleware that gives the others one)."""
    with urllib.request.urlopen(embedded_server.base + "/static/admin/css/base.css", timeout=30) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/css")
        assert len(response.headers["X-Request-Id"]) == 36
    # (no owner's data, whoever asks: a cache may keep it, unlike every answer of the API to a request with a token)
    with_token = urllib.request.Request(
        embedded_server.base + "/static/admin/css/base.css",
        headers={"Authorization": f"Bearer {embedded_server.token}"},
    )
    with urllib.request.urlopen(with_token, timeout=30) as response:
        assert response.status == 200 and "no-store" not in response.headers.get("Cache-Control", "")
    missing = urllib.request.Request(embedded_server.base + "/static/no-such.css", headers={"X-Request-Id": "static-1"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(missing, timeout=30)
    assert (refused.value.code, refused.value.headers["X-Request-Id"]) == (404, "static-1")


def test_the_embedded_database_files_are_readable_by_their_owner_only(embedded_server):
    """`migrate` (run first by `make run`) made `platform.sqlite3` 0644, and SQLite its `-wal` and `-shm` files with
    the same mode: password hashes and webhook secrets readable by every user of the host."""
    import sqlite3
    import stat

    base, token, database = embedded_server
    reader = sqlite3.connect(database, timeout=30)  # (keeps the -wal and -shm files while the server writes)
    try:
        reader.execute("SELECT count(*) FROM django_migrations").fetchone()
        status, user = _call(base, "POST", "/services/usermanagement/api/users", {"name": "mode"}, token)
        assert status == 201, user
        files = sorted(database.parent.glob(database.name + "*"))
        assert [f.name for f in files] == [database.name + suffix for suffix in ("", "-shm", "-wal")]
        assert {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files} == {f.name: "0o600" for f in files}
    finally:
        reader.close()


@pytest.mark.parametrize(
    ("head", "status", "error_key"),
    [
        ("X-Long: " + "a" * 70_000 + "\r\n", 431, "requestHeadersTooLarge"),
        ("".join(f"X-Header-{index}: {index}\r\n" for index in range(101)), 431, "requestHeadersTooLarge"),
    ],
    ids=["a header line over 65536 bytes", "101 headers"],
)
def test_headers_the_embedded_server_refuses_are_a_problem(embedded_server, head, status, error_key):
    """Python's HTTP server refuses a header line over 65536 bytes and more than 100 headers itself, before Django:
    it answered an HTML page, where every other error of the API is a problem document."""

    request = f"GET /services/usermanagement/api/users HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n"
    code, content_type, problem = send_raw(embedded_server.base, request.encode("latin-1"))
    assert (code, content_type) == (status, "application/problem+json"), problem
    assert (problem["status"], problem["errorKey"]) == (status, error_key)
    assert problem["path"] == "/services/usermanagement/api/users" and problem["detail"]


@pytest.mark.parametrize(
    ("request_line", "status", "error_key"),
    [
        (f"GET /services/usermanagement/api/users?name={'a' * 70_000} HTTP/1.1", 414, "uriTooLong"),
        (f"GET /services/usermanagement/api/users?name={'a' * 4042} HTTP/1.1", 414, "uriTooLong"),
        ("GARBAGE", 400, "malformedRequest"),
        ("GET /services/usermanagement/api/users HTTP/x.y", 400, "malformedRequest"),
    ],
    ids=["a request line over 65536 bytes", "a request line of 4095 bytes", "no HTTP", "no HTTP version"],
)
def test_a_request_line_the_embedded_server_refuses_is_a_problem_with_a_status_line(
    embedded_server, request_line, status, error_key
):
    """A request line over 65536 bytes: the refusal's log line raised in Django's logger, and the client got an empty
    answer. One that is no HTTP was answered with the problem document alone, no status line (as HTTP/0.9)."""

    request = f"{request_line}\r\nHost: 127.0.0.1\r\n\r\n"
    code, content_type, problem = send_raw(embedded_server.base, request.encode("latin-1"))
    assert (code, content_type) == (status, "application/problem+json"), problem
    assert (problem["status"], problem["errorKey"]) == (status, error_key)


def _log_lines_with(embedded_server, *texts: str, at_least: int = 1) -> list[str]:
    """The lines of the server's log holding every one of `texts`, once there are `at_least` of them (or after 10 s:
    the server writes its request line after the answer)."""
    log_path = embedded_server.database.parent / "server.log"
    deadline = time.monotonic() + 10
    while (
        len(lines := [line for line in log_path.read_text().splitlines() if all(t in line for t in texts)]) < at_least
    ):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return lines


def test_a_refused_requests_log_lines_carry_the_id_its_answer_carried(embedded_server):
    """The server's request line of a 4xx and Django's line about it both carry the request's `X-Request-Id`, the id
    a client quotes, so that one leads to the other."""
    sent = "probe-404-7f3a"
    request = urllib.request.Request(f"{embedded_server.base}/nowhere-{sent}", headers={"X-Request-Id": sent})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert (refused.value.code, refused.value.headers["X-Request-Id"]) == (404, sent)
    size = len(refused.value.read())
    lines = _log_lines_with(embedded_server, sent, at_least=2)
    assert any(
        line.endswith(f" WARNING django.request: [request {sent}] Not Found: /nowhere-{sent}") for line in lines
    ), lines
    assert any(line.endswith(f'"GET /nowhere-{sent} HTTP/1.1" 404 {size} [request {sent}]')
               for line in lines), lines  # fmt: skip


def test_a_request_lines_control_characters_are_written_escaped_in_the_log(embedded_server):
    """Written raw, an escape sequence in a path coloured or rewrote the operator's terminal, with no login (the
    security review: `"GET /x^[[31mred HTTP/1.1" 404`)."""
    sent = "probe-esc-52c1"
    status, _, _ = send_raw(
        embedded_server.base,
        f"GET /x\x1b[31m{sent}\\ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode("latin-1"),
    )
    assert status == 404
    lines = _log_lines_with(embedded_server, f"{sent}\\", '"GET')
    assert len(lines) == 1 and f'"GET /x\\x1b[31m{sent}\\\\ HTTP/1.1" 404 ' in lines[0], lines
    assert "\x1b" not in (embedded_server.database.parent / "server.log").read_text()


def test_control_characters_are_escaped_on_the_servers_own_refusals_too(embedded_server):
    """A request the server refuses before Django (here 431, too many headers) was logged by the standard
    library's line, raw: the escape sequence reached the terminal without a login. DEL and the C1 controls (0x9b
    is a terminal's escape too) are escaped as C0 ones are."""
    headers = "".join(f"X-{n}: 1\r\n" for n in range(101))
    request = f"GET /x\x1b[31mprobe-431\x9b\x7f HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n"
    status, _, _ = send_raw(embedded_server.base, request.encode("latin-1"))
    assert status == 431
    [line] = _log_lines_with(embedded_server, "probe-431")
    assert '"GET /x\\x1b[31mprobe-431\\x9b\\x7f HTTP/1.1" 431' in line, line
    log = (embedded_server.database.parent / "server.log").read_text(encoding="latin-1")
    assert not {"\x1b", "\x9b", "\x7f"} & set(log)


def test_a_tls_handshake_keeps_djangos_message(embedded_server):
    """HTTPS spoken to the plain server: Django's own line says so (escaping the handshake's line hid it)."""
    address = urlsplit(embedded_server.base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"R" * 20 + b"\r\n\r\n")
        sock.recv(1024)
    assert _log_lines_with(embedded_server, "accessing the development server over HTTPS")


def test_the_log_lines_of_a_task_name_the_request_that_queued_it(embedded_server):
    """The in-process workers' lines about what a request set off (here the failed post of the webhook a field's
    change fired) carry the request's id, as the request's own lines do."""
    import os
    import subprocess

    from tests.api.embedded import MANAGE, PASSWORD, REPO
    from tests.receiver import unused_port

    base, _, database = embedded_server
    # An owner of its own: the deliveries of the owner of the other tests may hold its share of the delivery workers
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env |= {"VAR_DIR": str(database.parent), "DATABASE_URL": f"spatialite:///{database}?timeout=5"}
    command = MANAGE + ["createapiowner", "task-lines", "--password", PASSWORD]
    assert subprocess.run(command, cwd=REPO, env=env, capture_output=True, timeout=120).returncode == 0
    token = owner_token(base, "task-lines")
    hook = {"name": "closed", "url": f"http://127.0.0.1:{unused_port()}/", "secret": "s" * 16}
    status, webhook = _call(
        base, "POST", "/services/alerts/api/alerts/webhooks", hook | {"events": ["fieldUpdated"]}, token
    )
    assert status == 201, webhook
    status, user = _call(base, "POST", "/services/usermanagement/api/users", {"name": "task lines"}, token)
    square = [[[5, 5], [5.01, 5], [5.01, 5.01], [5, 5.01], [5, 5]]]
    fields = f"/services/fields/api/users/{user['id']}/fields"
    status, field = _call(base, "POST", fields, {"geometry": {"type": "Polygon", "coordinates": square}}, token)
    assert status == 201, field
    sent = "probe-task-2c9e"
    request = urllib.request.Request(
        f"{base}{fields}/{field['id']}",
        data=json.dumps({"name": "renamed"}).encode(),
        method="PATCH",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}", "X-Request-Id": sent},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert (response.status, response.headers["X-Request-Id"]) == (200, sent)
    failed = f"/services/alerts/api/alerts/webhooks/failed-calls?webhookId={webhook['id']}"
    deadline = time.monotonic() + 30
    while not (calls := _call(base, "GET", failed, token=token)[1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    line = f"webhook delivery {calls[0]['deliveryId']} attempt 1 failed: "
    log_path = embedded_server.database.parent / "server.log"
    while not (lines := [text for text in log_path.read_text().splitlines() if line in text]):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(lines) == 1 and f" INFO webhooks.services: [request {sent}] {line}" in lines[0], lines


def test_the_longest_request_line_taken_is_gunicorns_and_its_links_stay_readable(embedded_server):
    """A request line of 4094 bytes (gunicorn's default limit) is served, one more byte is 414 (above). The list's
    `Link` header repeats the query up to four times: with Python's limit of 65536 bytes it grew past what clients
    read (curl gave up, `requests` refused a header line over 65536 bytes)."""

    path = "/services/usermanagement/api/users?size=1&sort="
    path += "%2C" * ((4094 - len(f"GET {path}name HTTP/1.1")) // 3) + "name"
    path = path.replace("sort=", "sort=" + "," * (4094 - len(f"GET {path} HTTP/1.1")))
    assert len(f"GET {path} HTTP/1.1") == 4094
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {embedded_server.token}\r\n\r\n"
    code, _content_type, users = send_raw(embedded_server.base, request.encode("latin-1"))
    assert (code, type(users)) == (200, list), users
    listed = urllib.request.Request(
        embedded_server.base + path, headers={"Authorization": f"Bearer {embedded_server.token}"}
    )
    with urllib.request.urlopen(listed, timeout=30) as answer:  # (http.client refuses a header line over 65536)
        assert answer.status == 200 and 'rel="first"' in answer.headers["Link"]
    # Past it, the query whose Link header no client read (18 KB of it: a header line of 72 KB) is refused first
    longer = path.replace("sort=", "sort=" + "%2C" * 6000)
    request = f"GET {longer} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {embedded_server.token}\r\n\r\n"
    code, _content_type, problem = send_raw(embedded_server.base, request.encode("latin-1"))
    assert (code, problem["errorKey"]) == (414, "uriTooLong"), problem


def _refused_then_sent(base: str, declared: int, sent: int) -> tuple[bytes, bytes]:
    """A JSON body of `declared` bytes to the authentication (413: over 10 MiB), of which `sent` bytes are sent
    after the headers; then the answer, and whatever else the connection gives before it is closed."""
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        head = f"POST /api/authenticate HTTP/1.1\r\nHost: {address.netloc}\r\nContent-Type: application/json\r\n"
        sock.sendall(f"{head}Content-Length: {declared}\r\n\r\n".encode())
        chunk = b"a" * (1 << 16)
        try:
            for _ in range(sent // len(chunk)):
                sock.sendall(chunk)
        except OSError:  # (the server closed the connection, having read enough)
            pass
        received = b""
        try:
            while data := sock.recv(1 << 16):
                received += data
        except OSError:
            pass
    answer, _, rest = received.partition(b"\r\n\r\n")
    return answer, rest


def test_the_rest_of_a_refused_body_is_thrown_away_not_held_in_memory(embedded_server):
    """The development server read what was left of a body the application had not read in one read: 300 MB sent
    after a 413 took 300 MB of the server's memory, and a `Content-Length` of 10**14 was a MemoryError."""
    from tests.api.embedded import peak_memory_kib

    before = peak_memory_kib(embedded_server.base)
    answer, _ = _refused_then_sent(embedded_server.base, declared=500_000_000, sent=300_000_000)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in answer, answer
    assert peak_memory_kib(embedded_server.base) - before < 64 * 1024
    # Declared past any memory, a small body: the answer, then the connection closes (the two bytes sent are no
    # second request)
    answer, rest = _refused_then_sent(embedded_server.base, declared=10**14, sent=0)
    assert answer.startswith(b"HTTP/1.1 413 ") and rest.count(b"HTTP/1.1") == 0, rest


def test_a_small_rest_of_a_refused_body_is_read_and_the_connection_serves_on(embedded_server):
    """Under DRAIN_BYTES, what is left of a body refused unread is thrown away and the connection is kept."""
    address = urlsplit(embedded_server.base)
    body = b"x" * 700_000  # refused for its media type (415) before it is read
    head = f"Host: {address.netloc}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
    then = f"GET /services/usermanagement/api/users HTTP/1.1\r\nHost: {address.netloc}\r\n\r\n"
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(f"POST /api/authenticate HTTP/1.1\r\n{head}".encode() + body + then.encode())
        answers = sock.makefile("rb")  # (one reader for both answers: a reader of each could read into the next)
        first, second = _answer(answers), _answer(answers)
    assert (first[0], "connection" in first[1], second[0]) == (415, False, 401)


def _answer(reader) -> tuple[int, dict[str, str]]:
    """The status and headers (lower-case names) of the next answer on `reader`, its body read past."""
    status = int(reader.readline().split()[1])
    headers = {}
    while (line := reader.readline().decode("latin-1").strip()) != "":
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    reader.read(int(headers.get("content-length", "0")))
    return status, headers


def _answers(base: str, request: bytes) -> list[tuple[int, dict]]:
    """Every answer to `request` (sent in one write) until the server closes the connection or stops answering."""
    address = urlsplit(base)
    answers = []
    with socket.create_connection((address.hostname, address.port), timeout=5) as sock:
        sock.sendall(request)
        reader = sock.makefile("rb")
        try:
            while reader.peek(1):
                answers.append(_answer(reader))
        except (TimeoutError, ValueError, IndexError):
            pass
    return answers


@pytest.mark.parametrize(
    "head",
    [
        "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n",
        "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: +13\r\n",
        "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\nContent-Length: 2\r\n",
        "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n",
        "delete /health HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        "GET /health HTTP/1.1\r\n",
        "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\rContent-Length: 13\r\n",
        "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\x00b\r\n",
    ],
    ids=[
        "length no number",
        "length with a sign",
        "two lengths",
        "length and chunked",
        "lower-case method",
        "no host",
        "a length behind a bare CR",
        "a NUL",
    ],
)
def test_a_request_of_ambiguous_framing_is_refused_and_its_connection_closed(embedded_server, head):
    """Python's server read `Content-Length: abc` as 0 (the write ran with an empty body, and the body was read as
    the next request) and framed a chunked request with a length by the length: the chunks then ran as a request
    of their own, past any proxy that framed by the chunks. gunicorn refuses these; so does the embedded server
    (each request would otherwise be answered: /health takes no POST, 405, and a GET of it is 200)."""
    then = (
        f"GET /services/config/api/configs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {embedded_server.token}"
    )
    body = f'{{"a":1}}\r\n{then}\r\n\r\n'.encode()
    answers = _answers(embedded_server.base, head.encode() + b"\r\n" + body)
    assert [status for status, _ in answers] == [400], answers
    assert answers[0][1]["connection"] == "close"


def test_a_chunked_body_nobody_reads_is_not_read_as_the_next_request(embedded_server):
    """A DELETE with a chunked body: the body stayed on the connection and was read as a request ("Bad request
    syntax ('0')"), and the request after it was lost."""
    request = (
        "DELETE /health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    answers = _answers(embedded_server.base, request.encode())
    assert [status for status, _ in answers] == [405], answers  # then closed: the client sends the GET again
    assert answers[0][1]["connection"] == "close"  # (and said so)


def test_the_embedded_servers_health_says_its_tasks_run_in_the_process(embedded_server):
    """`make run` has no broker and runs its tasks itself: healthy (gunicorn without a broker says `none`)."""
    with urllib.request.urlopen(f"{embedded_server.base}/health", timeout=30) as answer:
        assert json.load(answer) == {"status": "ok", "database": "ok", "broker": "embedded", "outbox": "empty"}


def test_a_target_in_absolute_form_is_taken(embedded_server):
    """RFC 9112 3.2.2: a server must take `GET http://host/path`; it was a 404 (Django's HTML debug page)."""
    request = f"GET {embedded_server.base}/health HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n".encode()
    assert [status for status, _ in _answers(embedded_server.base, request)][:1] == [200]
    request = b"GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answers = _answers(embedded_server.base, request)
    assert [status for status, _ in answers] == [404, 200]  # (a 404 of a known length: the connection serves on)
    assert answers[0][1]["content-type"] == "application/problem+json"
    assert answers[0][1]["x-content-type-options"] == "nosniff"  # (answered by the whole stack, as any 404)


def test_options_of_the_whole_server_says_its_methods(embedded_server):
    """RFC 9110 9.3.7: `OPTIONS *` asks about the server itself (a ping of proxies and clients); it was a 404."""
    request = b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answers = _answers(embedded_server.base, request)
    assert [status for status, _ in answers] == [200, 200]
    assert answers[0][1]["allow"] == "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    assert answers[0][1]["content-length"] == "0" and len(answers[0][1]["x-request-id"]) == 36


def test_a_204_sends_no_length_and_its_connection_serves_on(embedded_server):
    """RFC 9110 8.6: no Content-Length on a 204 (Python's server wrote one of 0, and closed the connection of an
    answer without one)."""
    base, token = embedded_server.base, embedded_server.token
    status, user = _call(base, "POST", "/services/usermanagement/api/users", {"name": "to delete"}, token)
    assert status == 201
    request = (
        f"DELETE /services/usermanagement/api/users/{user['id']} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    answers = _answers(base, request.encode())
    assert [status for status, _ in answers] == [204, 200], answers
    assert "content-length" not in answers[0][1] and "connection" not in answers[0][1]


def _raw_exchange(base: str, request: bytes) -> tuple[bytes, bytes]:
    """(head, everything after it) the server sends for `request` until it closes the connection."""
    address = urlsplit(base)
    received = b""
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(request)
        while chunk := sock.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return head, rest


@pytest.mark.parametrize(
    "line",
    [f"HEAD /health?{'a' * 5000} HTTP/1.1", "HEAD /health HTTP/1.x", "HEAD /health HTTP/1.1\r\nX: a\x00b"],
    ids=["line too long", "bad version", "a NUL"],
)
def test_the_servers_own_refusals_of_a_head_have_no_body(embedded_server, line):
    """RFC 9110 9.3.2: no content in an answer to HEAD. The server's refusals made before the request line was
    parsed (414, a bad version) wrote their problem document after the headers."""
    head, rest = _raw_exchange(embedded_server.base, f"{line}\r\nHost: 127.0.0.1\r\n\r\n".encode())
    assert head.split(b" ")[1] in (b"400", b"414"), head
    assert b"Content-Length:" in head and rest == b"", (head, rest)


@pytest.mark.parametrize("method", ["DELETE", "POST", "PUT", "FOO"])
def test_a_static_file_answers_get_and_head_only(embedded_server, method):
    """staticfiles' `serve` answered any method with the file: a 200 to DELETE says the file was deleted."""
    path = "/static/admin/css/base.css"
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    answers = _answers(embedded_server.base, request.encode())
    assert [status for status, _ in answers] == [405, 200], answers
    assert answers[0][1]["allow"] == "GET, HEAD"
    assert answers[0][1]["content-type"] == "application/problem+json"


def test_a_head_of_a_static_file_is_answered(embedded_server):
    head, rest = _raw_exchange(
        embedded_server.base,
        b"HEAD /static/admin/css/base.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    assert head.split(b" ")[1] == b"200" and rest == b"", head


def test_an_answer_to_a_request_that_closes_its_connection_says_so(embedded_server):
    """RFC 9112 9.6: the server that closes after its answer sends `Connection: close`."""
    head, _rest = _raw_exchange(
        embedded_server.base, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert head.split(b" ")[1] == b"200" and b"\r\nConnection: close" in head, head


def test_a_body_without_a_content_type_is_said_to_have_none(embedded_server):
    """wsgiref filled in `text/plain` (RFC 9110 8.3 lets a server assume only application/octet-stream): the 415
    named a type the client never sent."""
    base, token, _ = embedded_server
    body = b'{"name": "no type"}'
    request = (
        f"POST /services/usermanagement/api/users HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    head, rest = _raw_exchange(base, request + body)
    assert head.split(b" ")[1] == b"415", head
    problem = json.loads(rest)
    assert problem["errorKey"] == "unsupportedMediaType"
    assert problem["detail"] == "The body has no Content-Type. Send application/json."


@pytest.mark.parametrize(
    ("method", "version", "coding", "status"),
    [
        ("POST", "1.1", "foo", 501),
        ("GET", "1.1", "foo", 501),
        ("POST", "1.1", "chunked, chunked", 400),
        ("POST", "1.1", "chunked, gzip", 400),
        ("POST", "1.0", "chunked", 400),
        ("POST", "1.1", "gzip, chunked", 411),  # framed as gunicorn frames it; then no length (wsgi.length_unknown)
        ("POST", "1.1", "Chunked", 411),  # (codings are case-insensitive)
        ("POST", "1.1", "GZIP, chunked", 411),
    ],
)
def test_transfer_codings_are_refused_as_gunicorn_refuses_them(embedded_server, method, version, coding, status):
    """A coding neither server knows was a 411 (a POST) or answered (a GET); chunked in an HTTP/1.0 request, or
    not last, was a 411: gunicorn answers 501 and 400 (`platform_site.server`), and `make run` should too."""
    request = (
        f"{method} /services/usermanagement/api/users HTTP/{version}\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {embedded_server.token}\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: {coding}\r\n\r\n0\r\n\r\n"
    )
    head, rest = _raw_exchange(embedded_server.base, request.encode())
    assert head.split(b" ")[1] == str(status).encode(), head
    assert b"Connection: close" in head
    error_key = {501: "transferCodingNotImplemented", 400: "malformedRequest", 411: "lengthRequired"}[status]
    assert json.loads(rest)["errorKey"] == error_key


def test_routine_task_lines_stay_out_of_the_log(embedded_server):
    """Celery's INFO lines of each task run (received, succeeded) and of each periodic send were most of `make
    run`'s log, which is the API's too (9.6 MB in 35 minutes of a load test): they are shown with LOG_LEVEL=DEBUG
    only. A task still runs, and the server's own lines are still written."""
    base, token, database = embedded_server
    status, user = _call(base, "POST", "/services/usermanagement/api/users", {"name": "quiet log"}, token)
    assert status == 201, user
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("readme.txt", "nothing to convert")
    status, batch = _upload(base, token, user["id"], "nothing.zip", archive.getvalue())
    assert status == 201, batch
    deadline = time.monotonic() + 45
    while batch["status"] == "RECEIVED" and time.monotonic() < deadline:
        time.sleep(0.2)
        batch = _call(base, "GET", f"/services/operations/api/batch/{batch['id']}", token=token)[1]
    assert batch["status"] == "FAILED", batch  # (its opening task ran: no data set in it)
    log = (database.parent / "server.log").read_text()
    assert "embedded worker and beat started" in log
    routine = [
        line
        for line in log.splitlines()
        if " INFO celery.app.trace:" in line or " INFO celery.worker.strategy:" in line
    ]
    assert routine == [], routine[:3]
