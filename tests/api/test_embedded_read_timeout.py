"""The embedded server (`make run`) gives up a connection that sends nothing for EMBEDDED_READ_TIMEOUT_SECONDS: a
client that announced a longer body than it sent, or an idle keep-alive connection, held one of its threads for as
long as it stayed connected. A request whose body stops arriving is 408, and nothing of it is kept."""

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from tests.api.embedded import embedded_env, embedded_serve, owner_token

pytestmark = pytest.mark.embedded

TIMEOUT = 2  # seconds without data (EMBEDDED_READ_TIMEOUT_SECONDS)
USERS = "/services/usermanagement/api/users"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    var_dir = tmp_path_factory.mktemp("read-timeout")
    env = embedded_env(var_dir, EMBEDDED_READ_TIMEOUT_SECONDS=str(TIMEOUT))
    with embedded_serve(env, var_dir / "server.log") as base:
        yield base, owner_token(base), var_dir


def _connect(base: str) -> socket.socket:
    address = urlsplit(base)
    return socket.create_connection((address.hostname, address.port), timeout=30)


def _head(method: str, path: str, token: str, content_type: str, length: int) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def _answer(sock: socket.socket) -> tuple[int, dict]:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, json.loads(response.read())


def _users(base: str, token: str) -> list[str]:
    request = urllib.request.Request(base + USERS + "?size=100", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return [user["name"] for user in json.loads(response.read())]


def test_a_body_that_stops_arriving_is_408_and_nothing_is_written(server):
    base, token, _ = server
    body = json.dumps({"name": "never complete", "externalId": "cut-off"}).encode()
    with _connect(base) as sock:
        sock.sendall(_head("POST", USERS, token, "application/json", len(body)) + body[:10])
        started = time.monotonic()
        status, problem = _answer(sock)
        waited = time.monotonic() - started
    assert (status, problem["errorKey"], problem["status"]) == (408, "requestTimeout", 408), problem
    assert "Content-Length" in problem["detail"]
    assert TIMEOUT - 0.5 < waited < TIMEOUT + 10
    assert "never complete" not in _users(base, token)


def test_an_upload_page_body_that_stops_arriving_is_a_408_page(server):
    """A magic link's upload page (HTML, outside the API): the end user is told the upload did not complete."""
    base, token, var_dir = server
    status, link = _post_json(base, token, "/services/widgets/api/magic-link/file-upload", {"externalId": "page"})
    assert status == 201, link
    page = "/links/" + link["link"].rsplit("/links/", 1)[1] + "/upload"
    boundary = "----page-cut-off"
    start = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + b"PK\x03\x04"
        + b"\x00" * 100_000
    )
    head = (
        f"POST {page} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
        "Content-Length: 5000000\r\n\r\n"
    ).encode()
    with _connect(base) as sock:
        sock.sendall(head + start)
        response = http.client.HTTPResponse(sock)
        response.begin()
        html = response.read().decode()
    assert response.status == 408 and response.getheader("Content-Type").startswith("text/html")
    assert "The upload stopped arriving before it was complete." in html
    assert list((var_dir / "media" / ".uploads").glob("*")) == []


def test_an_upload_that_stops_arriving_is_408_and_its_partial_file_is_removed(server):
    base, token, var_dir = server
    status, user = _post_json(base, token, USERS, {"name": "uploader"})
    assert status == 201, user
    boundary = "----cut-off"
    start = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n'
            "Content-Type: application/zip\r\n\r\n"
        ).encode()
        + b"PK\x03\x04"
        + b"\x00" * 200_000
    )
    path = f"/services/operations/api/batch?coreUserId={user['id']}&provider=Other"
    with _connect(base) as sock:
        sock.sendall(_head("POST", path, token, f"multipart/form-data; boundary={boundary}", 10_000_000) + start)
        status, problem = _answer(sock)
    assert (status, problem["errorKey"]) == (408, "requestTimeout"), problem
    assert list((var_dir / "media" / ".uploads").glob("*")) == []  # (the directory was made for the upload)
    request = urllib.request.Request(
        f"{base}/services/operations/api/batch?coreUserId={user['id']}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert json.loads(response.read()) == []


@pytest.mark.parametrize("kind", ["json", "upload"])
def test_a_body_whose_client_stops_sending_is_408_at_once_and_nothing_is_kept(server, kind):
    """The client closes its side of the connection before its Content-Length (it gave up, or crashed, mid-body):
    the bytes that came were taken as the whole body, a 400 that blamed it ("no file", a JSON parse error), and the
    log said "Bad Request"."""
    base, token, var_dir = server
    status, user = _post_json(base, token, USERS, {"name": f"half-sent {kind}"})
    assert status == 201, user
    if kind == "json":
        path, content_type = USERS, "application/json"
        start = json.dumps({"name": "never complete", "externalId": "half-sent"}).encode()[:20]
    else:
        path = f"/services/operations/api/batch?coreUserId={user['id']}&provider=Other"
        content_type = "multipart/form-data; boundary=half"
        start = b'--half\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPK\x03\x04' + bytes(
            50_000
        )
    with _connect(base) as sock:
        sock.sendall(_head("POST", path, token, content_type, len(start) + 1_000_000) + start)
        sock.shutdown(socket.SHUT_WR)
        started = time.monotonic()
        status, problem = _answer(sock)
        waited = time.monotonic() - started
    assert (status, problem["errorKey"]) == (408, "requestTimeout"), problem
    assert "Content-Length" in problem["detail"]
    assert waited < TIMEOUT  # not the read timeout: the end of the body was seen
    assert "never complete" not in _users(base, token)
    assert list((var_dir / "media" / ".uploads").glob("*")) == []
    log = (var_dir / "server.log").read_text()
    assert f"Request Timeout: {path.split('?')[0]}" in log


def test_a_slow_body_that_keeps_arriving_is_taken(server):
    """The limit is on each read, not on the request: a body sent in pieces, each within the timeout, but the whole
    over it, is taken."""
    base, token, _ = server
    body = json.dumps({"name": "slow but steady"}).encode()
    pieces = [body[i : i + 5] for i in range(0, len(body), 5)]
    with _connect(base) as sock:
        sock.sendall(_head("POST", USERS, token, "application/json", len(body)))
        started = time.monotonic()
        for piece in pieces:
            time.sleep(TIMEOUT / 4)
            sock.sendall(piece)
        assert time.monotonic() - started > TIMEOUT
        status, user = _answer(sock)
    assert status == 201 and user["name"] == "slow but steady", user


def test_an_idle_connection_is_closed_and_the_server_keeps_serving(server):
    base, token, _ = server
    with _connect(base) as idle:
        started = time.monotonic()
        assert idle.recv(1) == b""  # closed by the server
        assert TIMEOUT - 0.5 < time.monotonic() - started < TIMEOUT + 10
    # A keep-alive connection idle after its first request too.
    with _connect(base) as sock:
        request = f"GET {USERS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        sock.sendall(request)
        assert _answer(sock)[0] == 200
        assert sock.recv(1) == b""
    assert _post_json(base, token, USERS, {"name": "after the idle ones"})[0] == 201


def test_the_server_log_has_no_traceback_for_timeouts(server):
    """A timeout of its own (whatever ran before it), and those of the tests before it: logged as a 408 request
    line, with no traceback."""
    base, token, var_dir = server
    body = json.dumps({"name": "never logged"}).encode()
    with _connect(base) as sock:
        sock.sendall(_head("POST", USERS, token, "application/json", len(body)) + body[:5])
        assert _answer(sock)[0] == 408
    log_path = var_dir / "server.log"
    deadline = time.monotonic() + 10
    while f'"POST {USERS} HTTP/1.1" 408' not in (log := log_path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f'"POST {USERS} HTTP/1.1" 408' in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def test_a_client_that_takes_nothing_of_its_answer_is_cut_off_without_a_traceback(server):
    """A client that stops reading its answers (the OpenAPI document, 0.9 MB, asked for ten times at once on one
    connection, more than the sockets' buffers hold): the server's writes made no progress for the timeout, and
    wsgiref logged the TimeoutError as a raw traceback, then the connection waited another timeout for a next request
    (leak review). It is given up as a client that hung up is: a request sent behind those answers is not run."""
    base, token, var_dir = server
    address = urlsplit(base)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before connecting: a small window)
        sock.connect((address.hostname, address.port))
        behind = json.dumps({"name": "behind the answers not taken"}).encode()
        sock.sendall(
            b"GET /api/schema/?format=json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 10
            + _head("POST", USERS, token, "application/json", len(behind))
            + behind
        )
        time.sleep(TIMEOUT + 1.5)  # (taking nothing meanwhile)
        sock.settimeout(30)
        received = 0
        while chunk := sock.recv(1 << 16):
            received += len(chunk)
    assert 0 < received < 6_000_000  # the first answers, then the server closed the connection
    log = (var_dir / "server.log").read_text()
    assert "Traceback" not in log and "TimeoutError" not in log, log[-3000:]
    with urllib.request.urlopen(base + "/api/schema/?format=json", timeout=30) as response:
        assert len(response.read()) > 800_000  # (and it goes on serving)
    assert "behind the answers not taken" not in _users(base, token)


def _post_json(base: str, token: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("ending", ["timeout", "stopped"])
def test_a_408_says_the_connection_ends(server, ending):
    """RFC 9110 15.5.9: the server closes the connection after a 408, and should say so (it closed it unsaid)."""
    base, token, _ = server
    body = json.dumps({"name": "never complete"}).encode()
    with _connect(base) as sock:
        sock.sendall(_head("POST", USERS, token, "application/json", len(body)) + body[:10])
        if ending == "stopped":
            sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        response.read()
    assert (response.status, response.getheader("Connection")) == (408, "close")
