"""Shared fixtures. Real sample machine files live outside the repository (never committed)."""

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# The real browser of the page tests (magic link pages, the admin's maps).
pytest_plugins = ["tests.browser"]
SAMPLES_DIR = Path(os.environ.get("SAMPLES_DIR", REPO_ROOT.parent / "shared" / "samples"))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """Folder of the real sample files (`SAMPLES_DIR`, default `../shared/samples`)."""
    if not SAMPLES_DIR.is_dir():
        pytest.fail(f"sample files not found at {SAMPLES_DIR}; set SAMPLES_DIR")
    return SAMPLES_DIR


def sample_path(samples_dir: Path, relative: str) -> Path:
    """A sample's file or folder under `samples_dir`; the test fails when it is not there (a `SAMPLES_DIR` of other
    files let tests that zipped a missing folder, or globbed it, pass on nothing)."""
    path = samples_dir / relative
    if not path.exists():
        pytest.fail(f"sample {relative} not found under {samples_dir}; set SAMPLES_DIR")
    return path


def set_eager(eager: bool) -> None:
    """Celery reads its namespaced settings (CELERY_*) live from Django's settings object."""
    from django.conf import settings

    settings.CELERY_TASK_ALWAYS_EAGER = eager


@pytest.fixture(scope="session", autouse=True)
def _tasks_run_eagerly(tmp_path_factory):
    """Tasks run synchronously in tests unless a test asks for the real worker (`celery_worker`);
    stored files go to a scratch folder shared with that worker."""
    from django.conf import settings

    from platform_site.celery import app

    settings.MEDIA_ROOT = str(tmp_path_factory.mktemp("media"))
    # The owner cache is off in the test process unless a test turns it on (`owner_cache_on`): tests change a
    # password or delete a core user and use the token in the same breath, which the change's announcement races.
    # The servers the tests start (gunicorn, the embedded server) keep their default.
    settings.AUTH_CACHE_SECONDS = 0
    set_eager(True)
    assert app.conf.task_always_eager is True
    yield


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real Celery worker (a separate process) on the Redis broker, using the test database."""
    import subprocess
    import sys
    import time

    from django.conf import settings

    from platform_site.celery import app

    db = settings.DATABASES["default"]
    if "postgis" not in db["ENGINE"] or settings.CELERY_BROKER_URL.startswith("memory"):
        pytest.fail("the worker tests need PostGIS and Redis: run them through `make test`")
    env = os.environ | {
        "DATABASE_URL": f"postgis://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "WEBHOOK_RETRY_SCHEDULE": "1,1",
        "WEBHOOK_TIMEOUT_SECONDS": "2",
        "WEBHOOK_MAX_IN_FLIGHT_PER_OWNER": "2",  # (under its 4 threads: an owner's share is reached)
        "TASK_DATABASE_RETRY_SECONDS": "1",
    }
    app.control.purge()
    log = open(tmp_path_factory.mktemp("worker") / "worker.log", "w")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "platform_site", "worker", "--pool=threads", "--concurrency=4",
         "--without-heartbeat", "--without-mingle", "--without-gossip", "--loglevel=INFO"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=0.5):
        if process.poll() is not None or time.monotonic() > deadline:
            log.flush()
            pytest.fail("the Celery worker did not start: " + open(log.name).read()[-2000:])
    process.log_path = Path(log.name)  # (what the worker logged, for the tests of its log lines)
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


@pytest.fixture
def celery_worker(celery_worker_process, transactional_db):
    """Send tasks to the real worker for this test (data is committed so the worker sees it)."""

    set_eager(False)
    yield celery_worker_process
    set_eager(True)


@pytest.fixture
def owner(db):
    from tests.factories import OwnerFactory

    return OwnerFactory()


@pytest.fixture
def other_owner(db):
    from tests.factories import OwnerFactory

    return OwnerFactory()


@pytest.fixture
def core_user(owner):
    from tests.factories import CoreUserFactory

    return CoreUserFactory(owner=owner)


@pytest.fixture
def owner_cache_on(settings):
    """The owner cache as deployed (AUTH_CACHE_SECONDS=30), its listener stopped after the test."""
    from platform_site.api.owner_cache import owner_cache_stop

    settings.AUTH_CACHE_SECONDS = 30
    yield
    owner_cache_stop()


@pytest.fixture
def make_client():
    """An APIClient carrying a real bearer token of `owner`."""
    from rest_framework.test import APIClient

    from platform_site.api.authentication import token_issue

    def make(owner):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(owner)}")
        return client

    return make


@pytest.fixture
def api_client(owner, make_client):
    return make_client(owner)


@pytest.fixture
def other_client(other_owner, make_client):
    return make_client(other_owner)


@pytest.fixture
def webhook_receiver():
    """A real HTTP receiver on 127.0.0.1 (answers 200 unless the test changes `statuses`/`hang`)."""
    from tests.receiver import Receiver, start_receiver

    receiver = Receiver()
    server = start_receiver(receiver)
    yield receiver
    server.shutdown()
    server.server_close()


@pytest.fixture
def subscribe(settings):
    """Register a webhook of `owner` on `events` to `receiver` (loopback allowed for the test)."""
    from webhooks.services import webhook_register

    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True

    def make(owner, receiver, events, secret="s3cret"):
        return webhook_register(owner=owner, name="test hook", url=receiver.url, secret=secret, events=list(events))

    return make


@pytest.fixture
def latest_schema_after():
    """Every migration applied again once the test is done (tests/migrating.py): a test that stopped at an older
    one left the tests after it a database without the newer columns."""
    from tests.migrating import migrate_latest

    yield
    migrate_latest()
