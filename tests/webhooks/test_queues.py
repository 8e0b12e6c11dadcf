"""Webhook deliveries travel on a queue of their own, and every other task on the default one: each message reaches
exactly one queue of a real Redis broker, so the delivery workers and the conversion workers each get their own."""

from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings

from conversion.tasks import batch_open
from platform_site.celery import app
from tests.api.test_broker_unavailable import _broker
from tests.conftest import set_eager
from webhooks.tasks import webhooks_delivery_send

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet_broker():
    """The test's Redis, in a database no worker reads: what is sent stays there to be counted."""
    if settings.CELERY_BROKER_URL.startswith("memory"):
        pytest.skip("needs the Redis broker of `make test`")
    before = app.conf.broker_url
    _broker(urlunsplit(urlsplit(before)._replace(path="/14")))
    set_eager(False)
    with app.connection_for_write() as connection:
        client = connection.default_channel.client
        client.delete("celery", "webhooks")
        yield client
        client.delete("celery", "webhooks")
    set_eager(True)
    _broker(before)


def test_each_task_reaches_its_own_queue_only(quiet_broker):
    webhooks_delivery_send.delay("00000000-0000-0000-0000-000000000001")
    assert (quiet_broker.llen("webhooks"), quiet_broker.llen("celery")) == (1, 0)
    batch_open.delay("00000000-0000-0000-0000-000000000002")
    assert (quiet_broker.llen("webhooks"), quiet_broker.llen("celery")) == (1, 1)
