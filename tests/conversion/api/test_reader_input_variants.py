"""Uploads of real samples as other exporters or a damaged transfer give them, through the API: a shapefile without
its .shx, with a damaged one, with Latin-1 text; a time log with a fixed start time. Each converts with the values
its file records, or fails with the reason in plain words, never as an internal error."""

import json
import re
import zipfile
from pathlib import Path

import pytest
import shapefile

from conversion.models import INTERNAL_ERROR, UNABLE_TO_READ
from tests.conversion.readers.sample_variants import copy_shapefile_set, fixed_start_time_log, set_dbf_text

from .conftest import FILES_URL, uploaded_batch, zip_entries

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

SMALL_SET = "Merriweather Farms-JT-01-SB 2 PowerMax only Use 1"


def _get(client, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, response.content
    return response.json()


def _assert_user_failure(client, batch: dict, reason: str, caplog) -> None:
    assert batch["status"] == "FAILED", batch
    assert batch["statusDetails"] == UNABLE_TO_READ
    assert reason in batch["failureReason"], batch["failureReason"]
    [file_id] = batch["files"]
    file = _get(client, f"{FILES_URL}/{file_id}")
    assert file["status"] == "failed" and INTERNAL_ERROR not in file["statusDetails"]
    assert not [r for r in caplog.records if r.exc_info]


@pytest.fixture
def application(jd_shapefiles, tmp_path) -> Path:
    """The small data set of JD's application export, extracted."""
    with zipfile.ZipFile(jd_shapefiles / "Export From MyJohnDeere - Application.zip") as zf:
        zf.extractall(tmp_path / "zip")
    [folder] = {shp.parent for shp in (tmp_path / "zip").rglob("*.shp")}
    return folder


def _zip_set(folder: Path) -> bytes:
    return zip_entries({part.name: part.read_bytes() for part in folder.iterdir()})


def test_a_shapefile_without_its_index_converts_every_record(api_client, core_user, application, tmp_path):
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path / "bare", leave_out=(".shx",))
    with shapefile.Reader(str(shp.with_suffix(".dbf"))) as dbf:
        records = len(dbf)
    batch = uploaded_batch(api_client, core_user, _zip_set(shp.parent))
    assert batch["status"] == "PROCESSED", batch
    [file_id] = batch["files"]
    assert _get(api_client, f"{FILES_URL}/{file_id}/summary")["properties"]["cleaning"]["pointsRead"] == records


def test_a_shapefile_index_cut_short_fails_with_the_reason(api_client, core_user, application, tmp_path, caplog):
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path / "cut")
    shx = shp.with_suffix(".shx")
    shx.write_bytes(shx.read_bytes()[:-3])
    batch = uploaded_batch(api_client, core_user, _zip_set(shp.parent))
    _assert_user_failure(api_client, batch, f"{shp.name}: the {shx.name} index is cut short", caplog)


def test_latin1_text_of_a_shapefile_with_a_cpg_is_read_as_written(api_client, core_user, application, tmp_path):
    shp = copy_shapefile_set(application, SMALL_SET, tmp_path / "latin1")
    set_dbf_text(shp.with_suffix(".dbf"), "Product", "Düngerstreuer".encode("latin-1"), language_driver=0)
    shp.with_suffix(".cpg").write_bytes(b"ISO-8859-1")
    batch = uploaded_batch(api_client, core_user, _zip_set(shp.parent))
    assert batch["status"] == "PROCESSED", batch
    [file_id] = batch["files"]
    assert "Düngerstreuer" in _get(api_client, f"{FILES_URL}/{file_id}/summary")["properties"]["products"]
    response = api_client.get(f"{FILES_URL}/{file_id}/standardGeojson")
    features = json.loads(b"".join(response.streaming_content))["features"]
    assert {f["properties"]["products"] for f in features} == {"Düngerstreuer"}


@pytest.fixture
def single_dpd(load_from_stream, tmp_path):
    """A builder of SingleDPD's upload with its time log TLG00001 rewritten to a fixed start."""
    with zipfile.ZipFile(load_from_stream / "SingleDPD.zip") as zf:
        zf.extractall(tmp_path / "SingleDPD")
        entries = {name: zf.read(name) for name in zf.namelist()}

    def with_fixed_start(start: str) -> bytes:
        folder = tmp_path / "SingleDPD"
        xml, binary = fixed_start_time_log(folder / "TLG00001.XML", folder / "TLG00001.BIN", start)
        return zip_entries(entries | {"TLG00001.XML": xml, "TLG00001.BIN": binary})

    return with_fixed_start


def test_a_time_log_start_with_a_utc_offset_is_that_utc_time(api_client, core_user, single_dpd):
    batch = uploaded_batch(api_client, core_user, single_dpd("2022-10-19T16:03:35-05:00"))
    assert batch["status"] == "PROCESSED", batch
    [file_id] = batch["files"]
    file = _get(api_client, f"{FILES_URL}/{file_id}")
    assert file["startTime"] == file["endTime"] == "2022-10-19T21:03:35.000Z"


def test_a_time_log_start_that_is_no_date_fails_with_the_reason(api_client, core_user, single_dpd, caplog):
    batch = uploaded_batch(api_client, core_user, single_dpd("19.10.2022 16:03:35"))
    _assert_user_failure(
        api_client, batch, "TLG00001.XML: the fixed start time TIM A='19.10.2022 16:03:35' is not an ISO 8601", caplog
    )


def test_a_time_log_without_a_position_fails_saying_so_not_that_cleaning_dropped_everything(
    api_client, core_user, load_from_stream, tmp_path
):
    """Every record at 0, 0 (a receiver without a fix): the file failed with "No point is left after cleaning (0
    read; dropped: all)", and the reader's reason went unsaid."""
    from tests.conversion.readers.sample_variants import rewritten_time_log

    with zipfile.ZipFile(load_from_stream / "SingleDPD.zip") as zf:
        zf.extractall(tmp_path)
        entries = {name: zf.read(name) for name in zf.namelist()}

    def no_fix(record):
        record["ptn"]["A"] = record["ptn"]["B"] = 0

    binary = rewritten_time_log(tmp_path / "TLG00001.XML", tmp_path / "TLG00001.BIN", no_fix)
    batch = uploaded_batch(api_client, core_user, zip_entries(entries | {"TLG00001.BIN": binary}))
    [file_id] = batch["files"]
    file = _get(api_client, f"{FILES_URL}/{file_id}")
    assert file["status"] == "failed"
    assert re.search(
        r"\(No point could be read \(.*; (\d+) of \1 points left out: no position \(0, 0 is a receiver without a "
        r"fix\)\)\)$",
        file["statusDetails"],
    ), file["statusDetails"]
