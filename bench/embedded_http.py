"""`make run`'s server answering small requests: `GET /users` (authenticated, a page of core users) and `/health`,
REQUESTS of each on one kept-alive connection and on a new connection each, p50 and p95.

Runs `manage.py serve` on the embedded default in a scratch VAR_DIR (as the tests do).
"""

import http.client
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _django import percentile  # noqa: E402

from tests.api.embedded import embedded_env, embedded_serve, owner_token  # noqa: E402

REQUESTS = int(os.environ.get("BENCH_REQUESTS", 200))
USERS = "/services/usermanagement/api/users"


def timed(connection_for, path: str, headers: dict) -> list[float]:
    timings = []
    for _ in range(REQUESTS):
        connection = connection_for()
        started = time.perf_counter()
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        timings.append(time.perf_counter() - started)
        assert response.status == 200, response.status
    return timings


def main() -> None:
    with tempfile.TemporaryDirectory() as var_dir:
        env = embedded_env(Path(var_dir))
        with embedded_serve(env, Path(var_dir) / "server.log") as base:
            host, port = base.removeprefix("http://").split(":")
            headers = {"Authorization": f"Bearer {owner_token(base)}"}
            kept = http.client.HTTPConnection(host, int(port), timeout=30)
            for path, label in ((USERS, "GET /users"), ("/health", "GET /health")):
                for way, connection_for in (
                    ("kept-alive", lambda: kept),
                    ("new connection", lambda: http.client.HTTPConnection(host, int(port), timeout=30)),
                ):
                    timings = timed(connection_for, path, headers)
                    print(
                        f"{label:12s} {way:15s} p50 {statistics.median(timings) * 1000:6.1f} ms  "
                        f"p95 {percentile(timings, 95) * 1000:6.1f} ms"
                    )


if __name__ == "__main__":
    main()
