"""Reading the answers of outside servers (OAuth providers, the weather source) without trusting their size."""

import requests


def read_at_most(response: requests.Response, limit: int) -> bytes | None:
    """The answer's body (decompressed), or None once it passes `limit` bytes (the rest is not read). Closes it."""
    chunks, size = [], 0
    try:
        for chunk in response.iter_content(64 * 1024):
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    finally:
        response.close()
    return b"".join(chunks)
