"""Shared fixtures. Real sample machine files live outside the repository (never committed)."""

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = Path(os.environ.get("SAMPLES_DIR", REPO_ROOT.parent / "shared" / "samples"))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """Folder of the real sample files (`SAMPLES_DIR`, default `../shared/samples`)."""
    if not SAMPLES_DIR.is_dir():
        pytest.fail(f"sample files not found at {SAMPLES_DIR}; set SAMPLES_DIR")
    return SAMPLES_DIR


@pytest.fixture(scope="session", autouse=True)
def _tasks_run_eagerly():
    """Tasks run synchronously in tests unless a test asks for the real worker (`celery_worker`)."""
    from platform_site.celery import app

    app.conf.task_always_eager = True
    yield


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
