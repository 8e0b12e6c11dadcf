"""Calling outside servers (webhook receivers, OAuth providers, the weather source): how long a whole call may take,
and reading their answers without trusting their size or their shape."""

import json

import requests


def call_deadline(timeout: float) -> float:
    """The longest one call may take in all (connecting, then the answer) when `timeout` bounds each read: twice it.
    A server sending its answer a byte at a time, each within the read timeout, would otherwise hold a call as long
    as it liked."""
    return 2 * timeout


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
