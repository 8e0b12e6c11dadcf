"""What gunicorn refuses before Django sees it is answered as every other error: a problem document."""

import http.client
import socket
from urllib.parse import urlsplit

import pytest

from tests.api.raw_http import send_raw

pytestmark = pytest.mark.django_db(transaction=True)

USERS = "/services/usermanagement/api/users"


def request(target: str, headers: str = "") -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode("latin-1")


def assert_refused(answer, status: int, error_key: str) -> dict:
    code, content_type, body = answer
    assert (code, content_type) == (status, "application/problem+json"), answer
    assert body["status"] == status and body["errorKey"] == error_key and body["type"] == f"urn:problem:{error_key}"
    assert body["detail"]
    return body


def test_a_request_line_over_the_limit_is_a_414_problem(gunicorn_server):
    base, _ = gunicorn_server
    # 4094 bytes of request line are taken (gunicorn's default): the long query reaches Django, which answers it
    short = f"{USERS}?name={'a' * (4094 - len(f'GET {USERS}?name= HTTP/1.1'))}"
    code, content_type, body = send_raw(base, request(short))
    assert (code, body["errorKey"]) == (401, "unauthorized")
    body = assert_refused(send_raw(base, request(short + "a")), 414, "uriTooLong")
    assert "4094" in body["detail"]
    assert_refused(send_raw(base, request(f"{USERS}?sort={'name,' * 2000}")), 414, "uriTooLong")


def test_headers_over_the_limits_are_a_431_problem(gunicorn_server):
    base, _ = gunicorn_server
    many = "".join(f"X-Header-{index}: {index}\r\n" for index in range(101))  # 100 is the most taken
    assert_refused(send_raw(base, request(USERS, many)), 431, "requestHeadersTooLarge")
    long = f"X-Long: {'a' * 8200}\r\n"  # a field of 8190 bytes at most
    assert_refused(send_raw(base, request(USERS, long)), 431, "requestHeadersTooLarge")


@pytest.mark.parametrize(
    "raw",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET /api/docs/ HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET /api/docs/ HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n",
    ],
)
def test_a_request_that_is_no_http_is_a_400_problem(gunicorn_server, raw):
    base, _ = gunicorn_server
    assert_refused(send_raw(base, raw), 400, "malformedRequest")


def test_a_transfer_coding_gunicorn_does_not_know_is_a_501_problem(gunicorn_server):
    base, _ = gunicorn_server
    raw = f"POST {USERS} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: br, chunked\r\n\r\n0\r\n\r\n".encode()
    assert_refused(send_raw(base, raw), 501, "transferCodingNotImplemented")


def test_options_of_the_whole_server_says_its_methods(gunicorn_server):
    """RFC 9110 9.3.7 (`make run`'s case is in test_embedded_server): it was a 404."""
    base, _ = gunicorn_server
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.read() == b""
    assert (response.status, response.getheader("Allow")) == (200, "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
