"""The broker (Redis) down while clients write: what committed is answered as committed (not a 500 the client
would retry into a 409), nothing committed is undone (an upload's zip was deleted under its recorded batch), and
the sweeps send the tasks again once the broker is back."""

import io
import os
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from conversion.models import Batch, BatchStatus, File
from conversion.services import batch_open, conversion_sweep
from platform_site.celery import app
from tests.conftest import set_eager
from tests.fields.helpers import square
from tests.operations.helpers import grid_table, processed_file
from webhooks.models import Delivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

UNREACHABLE = "redis://127.0.0.1:9/0"  # the discard port: nothing listens
BROKER_VARIABLE = "CELERY_BROKER_URL"


def _broker(url: str | None) -> None:
    """Point Celery at `url` (None: back at the configured broker). Through the environment, which Celery reads
    before any setting (`app.conf.broker_url = url` was read back as the configured broker: the tasks went to the
    working one, and these tests never met a broker down). Its connection and producer pools are found again by
    address on first use."""
    if url is None:
        os.environ.pop(BROKER_VARIABLE, None)
    else:
        os.environ[BROKER_VARIABLE] = url
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down(settings):
    """A real broker address where nothing answers; tasks are sent to it, not run in the test."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # the receiver is on loopback
    before = os.environ.get(BROKER_VARIABLE)
    _broker(UNREACHABLE)
    assert app.conf.broker_url == UNREACHABLE
    set_eager(False)
    yield
    set_eager(True)
    _broker(before)


def test_writes_that_commit_while_the_broker_is_down_answer_as_committed(
    broker_down, api_client, core_user, webhook_receiver, samples_dir
):
    jd_zip = (samples_dir / "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip").read_bytes()
    hook = api_client.post(
        "/services/alerts/api/alerts/webhooks",
        {"name": "hook", "secret": "a-secret-of-some-length", "url": webhook_receiver.url, "events": ["fieldCreated"]},
        format="json",
    )
    assert hook.status_code == 201, hook.content
    field = api_client.post(
        f"/services/fields/api/users/{core_user.pk}/fields",
        {"id": "north", "geometry": square(-1.0, 47.0)},
        format="json",
    )
    assert field.status_code == 201, field.content
    assert Delivery.objects.count() == 1  # recorded: the webhook sweep sends it once the broker is back

    upload = io.BytesIO(jd_zip)
    upload.name = "harvest.zip"
    answer = api_client.post(
        f"/services/operations/api/batch?coreUserId={core_user.pk}&provider=Other", {"file": upload}
    )
    assert answer.status_code == 201, answer.content
    batch = Batch.objects.get(pk=answer.json()["id"])
    assert batch.status == BatchStatus.RECEIVED and default_storage.exists(batch.upload.name)

    # Back up: what the sweep sends again converts from the kept zip.
    set_eager(True)
    batch_open(str(batch.pk))
    batch = Batch.objects.get(pk=batch.pk)
    assert batch.status == BatchStatus.PROCESSED, (
        batch.status,
        batch.status_details,
        list(batch.datasets.values_list("id", "status", "attempts", "message")),
    )


def test_a_merge_accepted_while_the_broker_is_down_is_completed_by_the_sweep_once_it_is_back(
    broker_down, api_client, core_user, settings
):
    """The sweep failed such a merge ("processing did not finish in time"): the client had to merge again."""
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-01T14:00:00", seed=2))
    answer = api_client.post(
        "/services/operations/api/files/merge", {"ids": [str(first.pk), str(second.pk)]}, format="json"
    )
    assert answer.status_code == 201, answer.content
    merged_id = answer.json()["id"]

    # Back up: once the merge has waited longer than the stuck limit, the sweep sends it again.
    set_eager(True)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    File.objects.filter(pk=merged_id).update(updated_time=long_ago)
    assert conversion_sweep() == {"resent": 1, "failed": 0}
    body = api_client.get(f"/services/operations/api/files/{merged_id}").json()
    assert body["status"] == "processed", body
    assert body["pointCount"] == 2 * len(grid_table())
