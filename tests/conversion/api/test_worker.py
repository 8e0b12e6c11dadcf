"""End to end over real HTTP (live server) with a real Celery worker process on Redis: upload a real sample as a
streamed multipart body, poll the batch until it ends, read the files, their summary and the field link."""

import time

import psycopg
import pytest
import requests
from django.conf import settings

from conversion import tasks
from conversion.models import Batch
from platform_site.api.authentication import token_issue

from .conftest import upload_lost, zip_folder

pytestmark = pytest.mark.celery_worker


def test_upload_poll_and_read_through_http_with_a_real_worker(
    celery_worker, live_server, owner, core_user, valid_timelogs, tmp_path
):
    base = f"{live_server.url}/services/operations/api"
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token_issue(owner)}"
    archive = tmp_path / "card.zip"
    archive.write_bytes(zip_folder(valid_timelogs, prefix="TASKDATA/"))
    with archive.open("rb") as fh:  # requests streams the file object into the multipart body
        response = session.post(
            f"{base}/batch", params={"coreUserId": str(core_user.pk), "provider": "Other"}, files={"file": fh}
        )
    assert response.status_code == 201, response.text
    batch_id = response.json()["id"]
    assert response.json()["status"] == "RECEIVED"

    deadline = time.monotonic() + 120
    while True:
        batch = session.get(f"{base}/batch/{batch_id}").json()
        if batch["status"] != "RECEIVED" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert batch["status"] == "PROCESSED", batch
    assert len(batch["files"]) == 19

    listed = session.get(f"{base}/files", params={"batchId": batch_id, "size": 100})
    assert listed.headers["X-Total-Count"] == "19"
    assert {f["id"] for f in listed.json()["operations"]} == set(batch["files"])
    assert {f["status"] for f in listed.json()["operations"]} == {"processed"}
    summary = session.get(f"{base}/files/{batch['files'][0]}/summary").json()
    assert summary["properties"]["recordedTotals"]["totalWetMass"]["value"] == 259605
    standard = session.get(f"{base}/files/{batch['files'][0]}/standardGeojson")
    assert standard.status_code == 200
    assert len(standard.json()["features"]) == summary["properties"]["pointCount"]


def test_an_opening_whose_database_session_was_cut_off_is_sent_again(
    celery_worker, api_client, core_user, valid_timelogs, monkeypatch
):
    # Given an uploaded batch whose opening has not been sent yet, its row locked by another session
    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    db = settings.DATABASES["default"]
    holder = psycopg.connect(
        host=db["HOST"], port=db["PORT"], dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"]
    )
    try:
        with holder.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {Batch._meta.db_table} WHERE id = %s FOR UPDATE", [batch_id])
            # When the worker opens it, and its session (waiting for that lock) is cut off, as a restart of
            # PostgreSQL would
            tasks.batch_open.delay(batch_id)
            deadline = time.monotonic() + 30
            waiting = []
            while not waiting and time.monotonic() < deadline:
                time.sleep(0.1)
                cursor.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    " AND pid <> pg_backend_pid()"
                )
                waiting = [pid for (pid,) in cursor.fetchall()]
            assert len(waiting) == 1, "the worker never waited for the locked batch"
            cursor.execute("SELECT pg_terminate_backend(%s)", waiting)
        holder.rollback()
    finally:
        holder.close()
    # Then the task is sent again after a pause and the batch converts
    deadline = time.monotonic() + 120
    while Batch.objects.get(pk=batch_id).status == "RECEIVED" and time.monotonic() < deadline:
        time.sleep(0.5)
    batch = Batch.objects.get(pk=batch_id)
    assert batch.status == "PROCESSED", (batch.status, batch.status_details)
    assert batch.files.count() == 19
