"""Real servers on loopback for the tests of what only a server shows (kept connections, request framing)."""

import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.receiver import unused_port

REPO = Path(__file__).resolve().parents[2]


def _gunicorn_start(extra_env: dict, output=None) -> tuple[str, str, subprocess.Popen]:
    """gunicorn serving the project over the test database: (base URL, the application_name of its database sessions,
    the process). `output`: a file for what it writes (its log lines and Django's), else the test run's."""
    if connection.vendor != "postgresql":
        pytest.skip("gunicorn runs over the PostgreSQL test database (the embedded server has its own tests)")
    db = settings.DATABASES["default"]
    name = f"api-test-{uuid.uuid4().hex[:12]}"
    port = unused_port()
    env = os.environ | {
        "DATABASE_URL": f"postgis://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        f"?application_name={name}",
        **extra_env,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "platform_site.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--worker-class", "platform_site.server.ProblemThreadWorker", "--threads", "1",
         "--log-level", "warning"],
        cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT if output is not None else None,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/api/docs/", timeout=2).close()
            return base, name, process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("gunicorn did not start")
            time.sleep(0.2)


def _gunicorn_stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def gunicorn_server(transactional_db):
    """gunicorn serving the project over the test database, as deployed: (base URL, the application_name of its
    database sessions). PostgreSQL only: the embedded default's test database is not shared with a subprocess."""
    base, name, process = _gunicorn_start({})
    try:
        yield base, name
    finally:
        _gunicorn_stop(process)


@pytest.fixture
def gunicorn_server_env(transactional_db):
    """Start gunicorn as `gunicorn_server` does, with more environment variables: `start(env) -> base URL`."""
    processes = []

    def start(extra_env: dict, output=None) -> str:
        base, _, process = _gunicorn_start(extra_env, output)
        processes.append(process)
        return base

    try:
        yield start
    finally:
        for process in processes:
            _gunicorn_stop(process)
