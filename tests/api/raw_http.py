"""Requests to a real server on loopback with the framing a test needs (Django's test client has none)."""

import http.client
import json
import socket
import urllib.error
import urllib.request
from urllib.parse import urlsplit

INTERSECTS_BODY = b'{"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}}'


def send_chunked(
    base: str, path: str, parts: list[bytes], headers: dict[str, str], method: str = "POST"
) -> tuple[int, dict]:
    """`parts` with `Transfer-Encoding: chunked` (no Content-Length), one chunk each: (status, JSON body).
    The request goes out in one write, as a client's small body does: a server answering before the body has
    arrived would otherwise close the socket under the client's next chunk."""
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"
    request = f"{method} {path} HTTP/1.1\r\nHost: {urlsplit(base).netloc}\r\n{head}Transfer-Encoding: chunked\r\n\r\n"
    status, _, body = send_raw(base, request.encode("latin-1") + chunks)
    return status, body


def send_raw(base: str, request: bytes) -> tuple[int, str, dict]:
    """`request` as it is, in one write: (status, Content-Type, JSON body or None when it is no JSON)."""
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
    try:
        return response.status, response.getheader("Content-Type", ""), json.loads(body)
    except ValueError:
        return response.status, response.getheader("Content-Type", ""), None


def status_of(base: str, path: str, token: str, body: bytes | None = None, *, timeout: float = 30) -> int:
    """The status a plain request answers: a GET, or a POST of the JSON `body`, with the bearer `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def intersects_status(base: str, token: str, core_user_id, *, timeout: float = 30) -> int:
    """The status of `POST .../users/{core_user_id}/fields/intersects` with a small square."""
    path = f"/services/fields/api/users/{core_user_id}/fields/intersects"
    return status_of(base, path, token, INTERSECTS_BODY, timeout=timeout)
