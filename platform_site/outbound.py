"""Calling outside servers (webhook receivers, OAuth providers, the weather source): how long a whole call may take,
and reading their answers without trusting their size or their shape."""

import http.client
import json
import socket
import ssl

import requests


def call_deadline(timeout: float) -> float:
    """The longest one call may take in all (connecting, then the answer) when `timeout` bounds each read: twice it.
    A server sending its answer a byte at a time, each within the read timeout, would otherwise hold a call as long
    as it liked."""
    return 2 * timeout


def connection_failure(exc: BaseException) -> str:
    """What went wrong on the way to an outside server, said plainly from the innermost cause of a requests error
    ("Connection refused (to 203.0.113.7)", "TLS: certificate verify failed: self-signed certificate"), not
    requests' and urllib3's wrappers ("ConnectionError: PinnedHTTPConnectionPool(host=..., port=...): Max retries
    exceeded with url: / (Caused by NewConnectionError(...))"). The address is the one connected to, where the
    host name was pinned to its checked addresses. Timeouts are said by the caller, who knows its limits."""
    chain = _causes(exc)
    return _plainly(chain[-1]) + _address_said(chain)


def connected_to(exc: BaseException) -> str:
    """ " (to <address>)" when `exc` (a requests error) says which checked address a connection was tried to."""
    return _address_said(_causes(exc))


def _address_said(chain: list[BaseException]) -> str:
    address = next((e.address for e in chain if isinstance(getattr(e, "address", None), str)), None)
    return f" (to {address})" if address else ""


def _plainly(cause: BaseException) -> str:
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"TLS: certificate verify failed: {cause.verify_message or cause.reason}"
    if isinstance(cause, (ssl.SSLZeroReturnError, ssl.SSLEOFError)):
        return "TLS: the server closed the connection during the handshake"
    if isinstance(cause, ssl.SSLError):
        return f"TLS: handshake failed ({cause.reason or type(cause).__name__})"
    if isinstance(cause, socket.gaierror):
        return "Host name not found"
    if isinstance(cause, http.client.RemoteDisconnected):
        return "Connection closed without an answer"
    if isinstance(cause, http.client.IncompleteRead):
        return "Connection closed in the middle of the answer"
    if isinstance(cause, http.client.HTTPException):
        return "Not an HTTP answer"
    if isinstance(cause, ConnectionResetError):
        return "Connection reset"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    # Our own refusals (a proxy for a checked URL, a host that was not checked) say what they are.
    return str(cause) or type(cause).__name__


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the errors it wraps, outermost first (urllib3 keeps the cause in `reason`, requests in its
    arguments, both in `raise ... from`)."""
    chain = [exc]
    while True:
        reason = getattr(exc, "reason", None)
        inner = next((arg for arg in exc.args if isinstance(arg, BaseException)), None)
        following = reason if isinstance(reason, BaseException) else inner or exc.__cause__
        if following is None or any(following is seen for seen in chain):
            return chain
        chain.append(following)
        exc = following


def read_head(response: requests.Response, limit: int) -> tuple[bytes, bool]:
    """The first `limit` bytes of the answer's body (decompressed), however many chunks they came in, and whether
    there was more (not read past that). Closes it."""
    chunks, size = [], 0
    try:
        for chunk in response.iter_content(64 * 1024):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(chunks)[:limit], True
    finally:
        response.close()
    return b"".join(chunks), False


def read_at_most(response: requests.Response, limit: int) -> bytes | None:
    """The answer's body (decompressed), or None once it passes `limit` bytes (the rest is not read). Closes it."""
    body, more = read_head(response, limit)
    return None if more else body


def json_object(raw: bytes) -> dict:
    """The JSON object `raw` holds; {} for anything else: not JSON, another JSON value, or nested deeper than the
    parser goes (a RecursionError, which was a 500 at the OAuth callback)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return body if isinstance(body, dict) else {}
