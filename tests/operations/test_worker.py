"""Through HTTP with a real Celery worker (PostGIS + Redis): uploads become one operation, which is merged and
cropped by the worker while the client polls."""

import json
import time

import pytest
from shapely.geometry import MultiPolygon, box

from fields.services import field_create
from tests.conversion.api.conftest import FILES_URL, upload, zip_entries

OPS_URL = "/services/operations/api/operations"


def _spray(day: int) -> bytes:
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [10.0 + i * 1e-4, 54.0 + (i % 2) * 5e-5]},
            "properties": {
                "timestamp": f"2024-05-0{day}T10:00:{i:02d}Z",
                "appliedRate": 100.0 + i,
                "equipmentWidth": 12.0,
            },
        }
        for i in range(30)
    ]
    return zip_entries(
        {f"spray{day}.geojson": json.dumps({"type": "FeatureCollection", "features": features}).encode()}
    )


def _poll(check, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.3)
    pytest.fail("the worker did not finish in time")


def test_uploads_become_an_operation_then_merge_and_crop_through_the_worker(celery_worker, api_client, core_user):
    field_create(core_user=core_user, id="strip", geometry=MultiPolygon([box(9.9995, 53.9995, 10.0035, 54.0005)]))
    for day in (1, 3):
        assert upload(api_client, core_user.pk, _spray(day)).status_code == 201

    def operation_done():
        body = api_client.get(OPS_URL).json()
        return body[0] if body and len(body[0]["files"]) == 2 and body[0]["status"] == "processed" else None

    operation = _poll(operation_done)
    assert [f["id"] for f in operation["fields"]] == ["strip"]
    assert api_client.get(f"{OPS_URL}/{operation['id']}/summary").json()["properties"]["pointCount"] == 60

    merged = api_client.post(f"{FILES_URL}/merge", {"ids": operation["files"]}, format="json").json()
    assert merged["status"] == "processing"
    _poll(lambda: api_client.get(f"{FILES_URL}/{merged['id']}").json()["status"] == "processed")

    crop = api_client.post(f"{OPS_URL}/cropOperationByField", {"id": operation["id"]}, format="json")
    assert crop.status_code == 202, crop.content
    file_id = crop.json()["coreFileId"]
    status = _poll(
        lambda: (s := api_client.get(f"{FILES_URL}/{file_id}/status").json())["status"] != "processing" and s
    )
    assert status["status"] == "processed", status
    assert api_client.get(f"{FILES_URL}/{file_id}").json()["pointCount"] == 60
