"""The embedded default (`make run`) started again after its process died: its in-memory broker lost every task
queued or running then, so at its start it takes up what was left (`serve.restart_recovery`) instead of waiting
for the sweeps' CONVERSION_STUCK_AFTER_SECONDS (an hour)."""

import io
import json
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest

from tests.api.embedded import REPO, USERNAME, embedded_env, embedded_serve, owner_token
from tests.receiver import Receiver, start_receiver

pytestmark = pytest.mark.embedded

# What a process killed mid-work leaves: it is run in a process of its own, whose in-memory broker (and with it the
# tasks sent) dies with it, as the server's would.
LEFT_BY_A_DEAD_PROCESS = """
import io, json, os, sys, zipfile
from datetime import timedelta

import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.utils import timezone

from conversion.services import batch_receive
from conversion.uploads import upload_temp_dir
from platform_site.accounts.models import CoreUser
from webhooks.models import Delivery
from webhooks.services import event_emit, webhook_register

owner = get_user_model().objects.get(username=sys.argv[2])
core_user = CoreUser.objects.create(owner=owner, name="grower")
webhook_register(owner=owner, name="hook", url=sys.argv[1], secret="s" * 16, events=["fieldCreated"])
# An upload received, whose opening task was queued (and lost)
upload = SimpleUploadedFile("points.zip", sys.stdin.buffer.read())
batch = batch_receive(core_user=core_user, provider="Other", upload=upload)
# A delivery being posted when the process died: held for another two minutes
with transaction.atomic():
    event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "north"})
Delivery.objects.update(lease_until=timezone.now() + timedelta(seconds=115))
# An upload cut off while it streamed in
upload_temp_dir().mkdir(parents=True, exist_ok=True)
(upload_temp_dir() / "tmpcutoff.upload").write_bytes(b"PK" + bytes(1000))
print(json.dumps({"batch": str(batch.pk), "coreUser": str(core_user.pk)}))
"""


def _points_zip() -> bytes:
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [10.0 + i * 1e-4, 54.0]},
            "properties": {"timestamp": f"2024-05-01T10:00:{i:02}Z", "appliedRate": 3.0},
        }
        for i in range(20)
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("points.geojson", json.dumps({"type": "FeatureCollection", "features": features}))
    return buffer.getvalue()


def _get(base: str, path: str, token: str) -> dict:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_work_a_killed_process_left_is_taken_up_as_the_embedded_server_starts(tmp_path):
    var_dir = tmp_path / "var"
    env = embedded_env(var_dir, CELERY_TASK_ALWAYS_EAGER="false", CONVERSION_STUCK_AFTER_SECONDS="3600")
    receiver = Receiver()
    receiver_server = start_receiver(receiver)
    dead = subprocess.run(
        [sys.executable, "-c", LEFT_BY_A_DEAD_PROCESS, receiver.url, USERNAME],
        cwd=REPO, env=env, input=_points_zip(), capture_output=True, timeout=120,
    )  # fmt: skip
    assert dead.returncode == 0, dead.stderr.decode()[-3000:]
    left = json.loads(dead.stdout.decode().strip().splitlines()[-1])
    assert receiver.received == []  # (nothing was sent: its tasks died with it)

    with embedded_serve(env, tmp_path / "server.log") as base:
        try:
            token = owner_token(base)

            # Then the upload is converted within moments, not after the sweep's hour
            deadline = time.monotonic() + 60
            while (batch := _get(base, f"/services/operations/api/batch/{left['batch']}", token))[
                "status"
            ] == "RECEIVED":
                assert time.monotonic() < deadline, batch
                time.sleep(0.5)
            assert batch["status"] == "PROCESSED", batch
            # The held delivery is sent at once (not when its lease runs out), once
            [delivery] = receiver.wait_for(1, timeout=60)
            assert json.loads(delivery.body)["fieldId"] == "north"
            time.sleep(1)
            assert len(receiver.received) == 1
            # And the upload cut off is gone
            deadline = time.monotonic() + 30
            while (var_dir / "media" / ".uploads" / "tmpcutoff.upload").exists():
                assert time.monotonic() < deadline, "the cut-off upload was not removed"
                time.sleep(0.2)
        finally:
            receiver_server.shutdown()
