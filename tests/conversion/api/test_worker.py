"""End to end over real HTTP (live server) with a real Celery worker process on Redis: upload a real sample as a
streamed multipart body, poll the batch until it ends, read the files, their summary and the field link."""

import time

import pytest
import requests

from platform_site.api.authentication import token_issue

from .conftest import zip_folder

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
