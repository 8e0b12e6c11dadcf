"""Requests to a real server on loopback with the framing a test needs (Django's test client has none)."""

import http.client
import json
import socket
from urllib.parse import urlsplit


def send_chunked(
    base: str, path: str, parts: list[bytes], headers: dict[str, str], method: str = "POST"
) -> tuple[int, dict]:
    """`parts` with `Transfer-Encoding: chunked` (no Content-Length), one chunk each: (status, JSON body).
    The request goes out in one write, as a client's small body does: a server answering before the body has
    arrived would otherwise close the socket under the client's next chunk."""
    address = urlsplit(base)
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"
    request = f"{method} {path} HTTP/1.1\r\nHost: {address.netloc}\r\n{head}Transfer-Encoding: chunked\r\n\r\n"
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(request.encode("latin-1") + chunks)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, json.loads(response.read() or b"null")
