"""`make run`'s embedded default as a real process for the tests: a scratch VAR_DIR migrated with an owner, then
`manage.py serve` on a loopback port (SpatiaLite, tasks in-process)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.receiver import unused_port

REPO = Path(__file__).resolve().parents[2]
USERNAME, PASSWORD = "embedded", "a-long-password-for-the-test"
MANAGE = [sys.executable, "manage.py"]


def embedded_env(var_dir: Path, **settings: str) -> dict[str, str]:
    """This environment without a database or broker URL (the embedded default) on `var_dir`, migrated, with the
    owner USERNAME; `settings`: more environment variables."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env |= {"VAR_DIR": str(var_dir), "DEBUG": "false", "DJANGO_SETTINGS_MODULE": "platform_site.settings"}
    env |= settings
    for command in (["migrate", "-v0"], ["createapiowner", USERNAME, "--password", PASSWORD]):
        done = subprocess.run(MANAGE + command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command[0]} failed: {done.stderr[-3000:]}"
    return env


# The process id of each server `embedded_serve` runs, by its base URL
SERVER_PIDS: dict[str, int] = {}


def peak_memory_kib(base: str) -> int:
    """The most memory (resident, KiB: VmHWM) the server at `base` has held since it started."""
    status = Path(f"/proc/{SERVER_PIDS[base]}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


@contextmanager
def embedded_serve(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`manage.py serve` with `env`, its output in `log_path`: its base URL once it takes connections; stopped after."""
    port = unused_port()
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            MANAGE + ["serve", f"127.0.0.1:{port}"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail("the embedded server did not start: " + log_path.read_text()[-2000:])
                    time.sleep(0.2)
            SERVER_PIDS[f"http://127.0.0.1:{port}"] = server.pid
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=20)


def owner_token(base: str, username: str = USERNAME) -> str:
    """A token of the owner `username` (its password PASSWORD)."""
    request = urllib.request.Request(
        base + "/api/authenticate",
        data=json.dumps({"username": username, "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["id_token"]
