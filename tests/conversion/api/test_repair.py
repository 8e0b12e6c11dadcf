"""Uploads whose task data was rearranged (re-zipped by hand) are repaired: a file TASKDATA.XML references that is
not next to it is found in the subfolders of its data set, when exactly one file there has its name."""

import io
import zipfile

import pytest

from conversion.models import UNABLE_TO_READ

from .conftest import BATCH_URL, FILES_URL, upload, zip_entries

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


@pytest.fixture
def single_dpd(load_from_stream) -> dict[str, bytes]:
    """A real task data set (TASKDATA.XML, one time log TLG00001, two grids GRD00001/2), by file name."""
    with zipfile.ZipFile(load_from_stream / "SingleDPD.zip") as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _placed(files: dict[str, bytes], where) -> dict[str, bytes]:
    """The files under the folder `where(name)` gives each one."""
    return {f"{where(name)}/{name}": data for name, data in files.items()}


def _batch(client, core_user, entries: dict[str, bytes]) -> dict:
    response = upload(client, core_user.pk, zip_entries(entries))
    assert response.status_code == 201, response.content
    return client.get(f"{BATCH_URL}/{response.json()['id']}").json()


def _files(client, batch) -> list[dict]:
    return [client.get(f"{FILES_URL}/{file_id}").json() for file_id in batch["files"]]


def _points(client, file_id) -> tuple[int, int]:
    summary = client.get(f"{FILES_URL}/{file_id}/summary").json()["properties"]
    return summary["cleaning"]["pointsRead"], summary["pointCount"]


def _original_names(client, file_id) -> list[str]:
    response = client.get(f"{FILES_URL}/{file_id}/originalFile")
    assert response.status_code == 200
    return sorted(zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist())


@pytest.fixture
def unmodified(api_client, core_user, single_dpd) -> tuple[int, int]:
    """Points read and kept from the data set uploaded as it was made (TASKDATA/ holding every file)."""
    batch = _batch(api_client, core_user, _placed(single_dpd, lambda name: "TASKDATA"))
    assert batch["status"] == "PROCESSED", batch
    points = _points(api_client, batch["files"][0])
    assert points[1] > 0
    return points


def _in_logs(name: str) -> str:
    return "TASKDATA" if name == "TASKDATA.XML" else "TASKDATA/logs"


def test_time_logs_and_grids_moved_into_a_subfolder_are_found(api_client, core_user, single_dpd, unmodified):
    # Given the time log and grids moved into TASKDATA/logs/ (a re-zipped upload)
    batch = _batch(api_client, core_user, _placed(single_dpd, _in_logs))
    # Then the upload converts as the unmodified one did
    assert batch["status"] == "PROCESSED", batch
    (file,) = _files(api_client, batch)
    assert file["status"] == "processed"
    assert _points(api_client, file["id"]) == unmodified
    # and its original files are the ones it used, where they were uploaded
    expected = sorted(name if name == "TASKDATA.XML" else f"logs/{name}" for name in single_dpd)
    assert _original_names(api_client, file["id"]) == expected


def test_a_moved_file_is_found_whatever_the_case_of_its_name(api_client, core_user, single_dpd, unmodified):
    files = {name if name == "TASKDATA.XML" else name.lower(): data for name, data in single_dpd.items()}
    batch = _batch(
        api_client, core_user, _placed(files, lambda n: "TASKDATA" if n == "TASKDATA.XML" else "TASKDATA/A/b")
    )
    assert batch["status"] == "PROCESSED", batch
    assert _points(api_client, batch["files"][0]) == unmodified


def test_a_log_found_twice_in_subfolders_is_not_guessed(api_client, core_user, single_dpd):
    # Given the time log in two subfolders
    entries = _placed(single_dpd, _in_logs)
    entries.update({f"TASKDATA/backup/{n}": d for n, d in single_dpd.items() if n.startswith("TLG")})
    batch = _batch(api_client, core_user, entries)
    # Then neither is used: the file fails, saying why
    assert batch["status"] == "FAILED", batch
    (file,) = _files(api_client, batch)
    assert file["status"] == "failed"
    assert file["statusDetails"].startswith(UNABLE_TO_READ)
    assert "TLG00001: header XML file missing (found 2 times in subfolders" in file["statusDetails"]
    assert "backup/TLG00001.XML, logs/TLG00001.XML" in file["statusDetails"]


def test_the_logs_of_another_data_set_are_never_borrowed(api_client, core_user, single_dpd, unmodified):
    # Given a task data set without its logs, and inside its folder another, complete one with the same names
    entries = {"TASKDATA/TASKDATA.XML": single_dpd["TASKDATA.XML"]}
    entries.update(_placed(single_dpd, lambda name: "TASKDATA/second"))
    batch = _batch(api_client, core_user, entries)
    files = {f["fileName"]: f for f in _files(api_client, batch)}
    assert sorted(files) == ["TASKDATA", "TASKDATA/second"]
    # Then the first still misses its log, and the second converts on its own
    assert files["TASKDATA"]["status"] == "failed"
    assert "TLG00001: header XML file missing, log skipped" in files["TASKDATA"]["statusDetails"]
    assert files["TASKDATA/second"]["status"] == "processed"
    assert _points(api_client, files["TASKDATA/second"]["id"]) == unmodified


@pytest.mark.parametrize("folder", ["MyExport", "SD card/2024/TASKDATA"])
def test_task_data_in_a_folder_of_any_name_or_depth_converts(api_client, core_user, single_dpd, unmodified, folder):
    batch = _batch(api_client, core_user, _placed(single_dpd, lambda name: folder))
    assert batch["status"] == "PROCESSED", batch
    (file,) = _files(api_client, batch)
    assert file["fileName"] == folder
    assert _points(api_client, file["id"]) == unmodified


def test_logs_moved_in_a_data_set_nested_two_levels_deep_are_found(api_client, core_user, single_dpd, unmodified):
    batch = _batch(api_client, core_user, _placed(single_dpd, lambda n: "SD card/2024/" + _in_logs(n)))
    assert batch["status"] == "PROCESSED", batch
    assert _points(api_client, batch["files"][0]) == unmodified
