"""What uploaded machine files hold, however odd, converts or fails with a reason: text with characters no database
stores is cleaned once as the reader hands it over (and so is every failure message that quotes a file), numbers
that are not finite count as missing values, one broken task never takes the others down, and values of the wrong
type are taken as text when they are numbers, else ignored."""

import io
import json
import logging
import math
import xml.etree.ElementTree as ET

import pytest
import shapefile

from conversion import outputs
from conversion.models import INTERNAL_ERROR, UNABLE_TO_READ, BatchDataset, DatasetStatus, File
from conversion.readers.isoxml import reader as isoxml_reader

from .conftest import BATCH_URL, FILES_URL, upload, zip_entries

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

CATALOGS_URL = "/services/beta/api/users"
WGS84_PRJ = (
    'GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],'
    'PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]'
)
UNSTORABLE = ("\x00", "\x01", "\x1f", "\ud800", "\udfff")


def _finite_json(content: bytes):
    """The JSON body, refusing NaN and Infinity (JSON has no such numbers, and no database column takes them)."""

    def refuse(constant):
        raise AssertionError(f"{constant} in {content[:300]!r}")

    return json.loads(content, parse_constant=refuse)


def _get(client, url, **params):
    response = client.get(url, params)
    assert response.status_code == 200, (url, response.content[:300])
    return _finite_json(response.content)


def _download(client, url) -> dict:
    response = client.get(url)
    assert response.status_code == 200, url
    return _finite_json(b"".join(response.streaming_content))


def _batch(client, core_user, data: bytes) -> dict:
    response = upload(client, core_user.pk, data)
    assert response.status_code == 201, response.content
    return _get(client, f"{BATCH_URL}/{response.json()['id']}")


def _files(client, batch: dict) -> list[dict]:
    return [_get(client, f"{FILES_URL}/{file_id}") for file_id in batch["files"]]


def _summary(client, file_id) -> dict:
    return _get(client, f"{FILES_URL}/{file_id}/summary")["properties"]


def _catalog(client, core_user, kind: str) -> list[str]:
    return sorted(record["name"] for record in _get(client, f"{CATALOGS_URL}/{core_user.pk}/{kind}"))


def _assert_clean(text: str | None) -> None:
    assert text is not None
    assert not [c for c in UNSTORABLE if c in text], repr(text)


def _geojson(count: int, **properties) -> bytes:
    """`count` points 1 m apart; a property given as a list has one value per point."""
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [10.0 + i * 1e-5, 54.0]},
            "properties": {
                "timestamp": f"2024-05-01T10:00:{i:02d}Z",
                **{k: v[i] if isinstance(v, list) else v for k, v in properties.items()},
            },
        }
        for i in range(count)
    ]
    # Python writes NaN and Infinity as JSON's common extension does; the reader takes them as Python does.
    return json.dumps({"type": "FeatureCollection", "features": features}).encode()


def _jd_shapefile(*, variety: str, metadata: dict | None, prj: bytes = WGS84_PRJ.encode()) -> dict[str, bytes]:
    """A John Deere style seeding export of 20 points: DBF columns as JD writes them, the metadata sidecar as given."""
    shp, shx, dbf = io.BytesIO(), io.BytesIO(), io.BytesIO()
    with shapefile.Writer(shp=shp, shx=shx, dbf=dbf, shapeType=shapefile.POINT) as writer:
        writer.field("IsoTime", "C", size=24)
        writer.field("AppliedRate", "N", size=12, decimal=1)
        writer.field("SWATHWIDTH", "N", size=8, decimal=2)
        writer.field("DISTANCE", "N", size=8, decimal=2)
        writer.field("Variety", "C", size=20)
        for i in range(20):
            writer.point(10.0 + i * 1e-5, 54.0)
            writer.record(f"2024-05-01T10:00:{i:02d}.000Z", 32000.0, 30.0, 3.3, variety)
    stem = "Farm-Field-Seeding"
    parts = {f"{stem}.shp": shp.getvalue(), f"{stem}.shx": shx.getvalue(), f"{stem}.dbf": dbf.getvalue()}
    parts[f"{stem}.prj"] = prj
    if metadata is not None:
        parts[f"{stem}-Deere-Metadata.json"] = json.dumps(metadata).encode()
    return parts


SEEDING_METADATA = {
    "Operation": "Seeding",
    "CropToken": "SOYBEANS",
    "DataAttributes": [
        {"Name": "AppliedRate", "Unit": "seeds1ac-1"},
        {"Name": "SWATHWIDTH", "Unit": "ft"},
        {"Name": "DISTANCE", "Unit": "ft"},
        {"Name": "Variety", "Description": "Variety Name"},
    ],
}


# --- text (1): cleaned once, as the reader hands it over --------------------------------------------------------------


@pytest.mark.parametrize("mark", UNSTORABLE)
def test_geojson_text_with_characters_no_database_stores_converts_with_them_removed(api_client, core_user, mark):
    # Given GeoJSON points whose crop, variety and product names, and one property's name and value, hold a NUL, a
    # control character or a lone surrogate (json writes them as \u escapes)
    data = _geojson(
        20,
        seedRate=80000.0,
        crop=f"co{mark}rn",
        operationType="planted",
        variety=f"P{mark}1",
        products=f"Round{mark}up",
        **{f"note{mark}": f"row{mark} 1"},
    )

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries({"plant.geojson": data}))

    # Then it converts, every name without the characters
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    assert file["status"] == "processed"
    assert (file["crops"], file["varieties"]) == (["corn"], ["P1"])
    summary = _summary(api_client, file["id"])
    assert (summary["crop"], summary["varieties"], summary["products"]) == (["corn"], ["P1"], ["Roundup"])
    assert _catalog(api_client, core_user, "varieties") == ["P1"]
    assert _catalog(api_client, core_user, "products") == ["Roundup"]
    # and so do the points, standard and raw
    standard = _download(api_client, f"{FILES_URL}/{file['id']}/standardGeojson")
    assert {(f["properties"]["variety"], f["properties"]["products"]) for f in standard["features"]} == {
        ("P1", "Roundup")
    }
    raw = _download(api_client, f"{FILES_URL}/{file['id']}/rawGeojson")
    assert {f["properties"]["note"] for f in raw["features"]} == {"row 1"}


def test_shapefile_and_deere_metadata_text_with_nul_converts_with_it_removed(api_client, core_user):
    # Given a JD seeding export whose DBF variety is padded with NULs inside, and whose metadata names a product
    # and the crop with a NUL in them
    metadata = {**SEEDING_METADATA, "CropToken": "SOY\u0000BEANS", "Product": {"ProductName": "Round\u0000up"}}
    parts = _jd_shapefile(variety="P\x00\x00\x0012", metadata=metadata)

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(parts))

    # Then it converts, and the names are the file's without the NULs
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    assert (file["crops"], file["varieties"]) == (["soybeans"], ["P12"])
    summary = _summary(api_client, file["id"])
    assert (summary["crop"], summary["varieties"], summary["products"]) == (["soybeans"], ["P12"], ["Roundup"])
    assert _catalog(api_client, core_user, "varieties") == ["P12"]
    assert _catalog(api_client, core_user, "products") == ["Roundup"]


# --- failure messages (2): cleaned before they are stored -------------------------------------------------------------


def test_a_failure_message_quoting_a_nul_is_stored_without_it(api_client, core_user):
    # Given a shapefile whose .prj is not a coordinate system and holds a NUL (the projection library quotes it)
    parts = _jd_shapefile(variety="P1", metadata=SEEDING_METADATA, prj=b"garbage\x00 here")

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(parts))

    # Then its file fails with the reason, which quotes the file without the NUL
    assert batch["status"] == "FAILED", batch
    assert batch["statusDetails"] == UNABLE_TO_READ
    assert "the .prj file is not a coordinate system" in batch["failureReason"]
    assert "garbage here" in batch["failureReason"]
    _assert_clean(batch["failureReason"])
    [file] = _files(api_client, batch)
    assert file["status"] == "failed" and file["statusDetails"].startswith(UNABLE_TO_READ)
    _assert_clean(file["statusDetails"])
    [failed] = _get(api_client, f"{BATCH_URL}/{batch['id']}/status")["failed"]
    _assert_clean(failed["message"])
    assert BatchDataset.objects.get(batch_id=batch["id"]).status == DatasetStatus.FAILED


# --- numbers (3): not finite is missing; totals that overflow are left out --------------------------------------------


def test_points_with_an_infinite_rate_count_as_missing_values(api_client, core_user):
    # Given 20 planted points of 10 m2 at 80,000 seeds/ha, 5 of which log an infinite seed rate
    rates = [math.inf if i % 4 == 0 else 80000.0 for i in range(20)]
    data = _geojson(20, area=10.0, seedRate=rates, operationType="planted", elevation=-math.inf)

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries({"plant.geojson": data}))

    # Then it converts; those 5 points are dropped as points without a rate, the total is the other 15's
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    summary = _summary(api_client, file["id"])
    assert summary["cleaning"]["pointsDropped"] == 5
    assert summary["cleaning"]["reasons"] == {"seedRate <= 0 or missing": 5}
    assert summary["totalPlanted"] == {"value": pytest.approx(15 * 80000.0 * 10.0 / 10000.0), "unit": "seeds"}
    assert summary["seedRate"]["max"] == 80000.0
    # and a property no point has a finite value of is no property of the file
    assert "elevation" not in summary and "elevation" not in _get(api_client, f"{FILES_URL}/{file['id']}/units")


def test_a_mean_of_huge_values_is_their_mean_and_a_total_that_overflows_is_left_out(api_client, core_user):
    # Given 20 planted points at 1e308 m elevation, each covering 1e308 m2
    data = _geojson(20, area=1e308, seedRate=80000.0, elevation=1e308, operationType="planted")

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries({"plant.geojson": data}))

    # Then it converts: the mean is the points' (no sum of them need fit a float), and the totals, which do not fit
    # one, are left out
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    summary = _summary(api_client, file["id"])
    # (PostgreSQL's JSONB gives 1e308 back written out as an integer of 309 digits: the same number)
    elevation = summary["elevation"]
    assert [float(elevation[k]) for k in ("avg", "min", "max")] == [1e308] * 3 and elevation["unit"] == "m"
    assert float(summary["area"]["avg"]) == 1e308
    assert "totalArea" not in summary and "totalPlanted" not in summary
    assert File.objects.get(pk=file["id"]).area is None
    # and the points keep their values
    standard = _download(api_client, f"{FILES_URL}/{file['id']}/standardGeojson")
    assert {(f["properties"]["elevation"], f["properties"]["area"]) for f in standard["features"]} == {(1e308, 1e308)}


@pytest.mark.parametrize("value", ["NaN", "1e999", "-inf"])
def test_isoxml_task_totals_that_are_not_finite_are_left_out(api_client, core_user, valid_timelogs, value):
    # Given the 19 tasks of a task data set, the first of which records its total mass (TIM DLV 0x005A, kg) as
    # `value`, not as the number its mass counter logged
    root = ET.parse(valid_timelogs / "TASKDATA.XML").getroot()
    task = root.find("TSK")
    [mass] = [dlv for dlv in task.findall("TIM")[-1].findall("DLV") if dlv.get("A") == "005A"]
    logged = float(mass.get("B"))
    mass.set("B", value)
    entries = {f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()}
    entries["iso/TASKDATA.XML"] = ET.tostring(root)

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(entries))

    # Then every task converts; the first one's recorded mass is what its time log's counter grew by, as for a task
    # whose TIM records none, and its other totals are the TIM's
    assert batch["status"] == "PROCESSED", batch
    files = _files(api_client, batch)
    assert [f["status"] for f in files] == ["processed"] * 19
    first = next(f for f in files if f["fileName"] == f"iso/{task.get('B').strip()}")
    recorded = _summary(api_client, first["id"])["recordedTotals"]
    assert recorded["totalWetMass"] == {"value": logged, "unit": "kg"}
    assert set(recorded) == {"totalArea", "totalDistance", "totalFuelConsumption", "totalWetMass"}


# --- one bad task (4): fails its own file, the others convert ---------------------------------------------------------


def test_an_error_after_a_file_was_processed_leaves_it_processed(api_client, core_user, monkeypatch, caplog):
    """Sending the file's follow-up tasks after its commit can fail (the broker briefly unreachable): the file is
    converted and stays so; no failed event follows its finished one."""
    from operations import tasks as operation_tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(operation_tasks.operation_file_group, "delay", broker_down)
    with caplog.at_level(logging.WARNING, logger="platform_site.celery"):
        batch = _batch(api_client, core_user, zip_entries({"a.geojson": _geojson(20, seedRate=80000.0, area=10.0)}))
    [file] = _files(api_client, batch)
    assert file["status"] == "processed", file
    assert batch["status"] == "PROCESSED"
    assert BatchDataset.objects.get(batch_id=batch["id"]).status == DatasetStatus.DONE
    # What the broker refused is logged for the operations sweep to send again.
    assert [r for r in caplog.records if "operation_file_group" in r.getMessage() and "not queued" in r.getMessage()]


def test_an_internal_error_in_one_task_fails_only_its_file(api_client, core_user, valid_timelogs, monkeypatch, caplog):
    # Given a task data set of 19 tasks, one of which meets an unexpected error while its outputs are made
    root = ET.parse(valid_timelogs / "TASKDATA.XML").getroot()
    broken = root.findall("TSK")[3].get("B").strip()
    real_produce = outputs.produce

    def produce(file, table, **kwargs):
        if table.name == broken:
            raise RuntimeError("a bug met by this task's data")
        return real_produce(file, table, **kwargs)

    monkeypatch.setattr(outputs, "produce", produce)

    # When it is uploaded, then the other 18 tasks convert and the broken one fails with the internal-error text
    batch = _upload_with_one_task_broken(api_client, core_user, valid_timelogs, caplog, broken)

    # and the data set stays failed, so a retry runs the broken task again (and only it)
    assert BatchDataset.objects.get(batch_id=batch["id"]).status == DatasetStatus.FAILED
    monkeypatch.setattr(outputs, "produce", real_produce)
    _retry_converts_all(api_client, batch)


def test_an_internal_error_reading_one_task_fails_only_its_file(
    api_client, core_user, valid_timelogs, monkeypatch, caplog
):
    # Given a task data set of 19 tasks, one of which meets an unexpected error while the reader reads it
    root = ET.parse(valid_timelogs / "TASKDATA.XML").getroot()
    task = root.findall("TSK")[5]
    real_operators = isoxml_reader.task_operators

    def operators(td, element):
        if element.get("A") == task.get("A"):
            raise KeyError("a bug met by this task's data")
        return real_operators(td, element)

    monkeypatch.setattr(isoxml_reader, "task_operators", operators)

    # When it is uploaded, then the other 18 tasks convert and that one fails with the internal-error text
    batch = _upload_with_one_task_broken(api_client, core_user, valid_timelogs, caplog, task.get("B").strip())

    # and a retry converts it
    monkeypatch.setattr(isoxml_reader, "task_operators", real_operators)
    _retry_converts_all(api_client, batch)


def test_each_tasks_points_are_let_go_once_its_file_is_made(api_client, core_user, valid_timelogs, monkeypatch):
    """The points of every task of a task data set were held until the last task's file was made: a worker held
    them all at once. Each task's are let go once its file is made now (the reader still reads every task first)."""
    import gc
    import weakref

    real_produce = outputs.produce
    made: list[weakref.ref] = []
    held_while_making: list[int] = []

    def produce(file, table, **kwargs):
        gc.collect()
        held_while_making.append(sum(ref() is not None for ref in made))
        made.append(weakref.ref(table))
        return real_produce(file, table, **kwargs)

    monkeypatch.setattr(outputs, "produce", produce)
    entries = {f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()}
    batch = _batch(api_client, core_user, zip_entries(entries))
    assert batch["status"] == "PROCESSED" and len(batch["files"]) == 19
    assert held_while_making == [0] * 19


def _upload_with_one_task_broken(api_client, core_user, valid_timelogs, caplog, broken: str) -> dict:
    """Upload the 19 tasks of ValidTimeLogs while the task named `broken` meets "a bug met by this task's data":
    the other 18 convert, that one's file fails with the internal-error text and the traceback is logged."""
    entries = {f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()}
    with caplog.at_level(logging.ERROR, logger="conversion"):
        batch = _batch(api_client, core_user, zip_entries(entries))
    assert batch["status"] == "PROCESSED", batch
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status")
    assert len(status["converted"]) == 18
    [failed] = status["failed"]
    assert failed["message"] == INTERNAL_ERROR
    assert _get(api_client, f"{FILES_URL}/{failed['id']}")["fileName"] == f"iso/{broken}"
    assert [r for r in caplog.records if r.exc_info and "a bug met by this task's data" in str(r.exc_info[1])]
    return batch


def _retry_converts_all(api_client, batch: dict) -> None:
    """Retry: the failed task converts; the 18 converted before are left as they were (not converted again)."""
    before = {
        f: _get(api_client, f"{FILES_URL}/{f}")
        for f in _get(api_client, f"{BATCH_URL}/{batch['id']}/status")["converted"]
    }
    response = api_client.put(f"{BATCH_URL}/{batch['id']}/retry")
    assert response.status_code == 200, response.content
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status")
    assert len(status["converted"]) == 19 and status["failed"] == []
    assert len(before) == 18 and {f: _get(api_client, f"{FILES_URL}/{f}") for f in before} == before


# --- numbers written in other digits (5) -----------------------------------------------------------------------------


def test_isoxml_numbers_in_digits_int_refuses_are_read_as_text_or_left_out(api_client, core_user, valid_timelogs):
    # Given a task data set whose fields grow crops named "²" (a digit to str.isdigit, not to int) and 5,000 nines
    # (past Python's limit for int), and whose device elements are numbered likewise
    root = ET.parse(valid_timelogs / "TASKDATA.XML").getroot()
    crops = {"CTP1": "²", "CTP2": "9" * 5000}
    for position, (ctp_id, name) in enumerate(crops.items()):
        root.insert(position, ET.Element("CTP", A=ctp_id, B=name))
    tasks = root.findall("TSK")
    fields = {pfd.get("A"): pfd for pfd in root.findall("PFD")}
    for task, ctp_id in zip(tasks, crops, strict=False):
        fields[task.get("E")].set("G", ctp_id)
    for det, (type_, number) in zip(root.iter("DET"), [("²", "9" * 5000), ("9" * 5000, "²")], strict=False):
        det.set("C", type_)
        det.set("E", number)
    entries = {f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()}
    entries["iso/TASKDATA.XML"] = ET.tostring(root, encoding="utf-8")

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(entries))

    # Then every task converts, each of those two with its crop named as the file names it
    assert batch["status"] == "PROCESSED", batch
    files = _files(api_client, batch)
    assert [f["status"] for f in files] == ["processed"] * 19
    by_name = {f["fileName"]: f for f in files}
    for task, name in zip(tasks, crops.values(), strict=False):
        assert by_name[f"iso/{task.get('B').strip()}"]["crops"] == [name]


# --- text where a number or an object stands (6) ---------------------------------------------------------------------


def test_deere_metadata_numbers_are_taken_as_text_and_other_values_are_ignored(api_client, core_user):
    # Given a JD export whose metadata names the product with a number, its components with a number, an object
    # and a boolean, gives the crop as a JD crop id number and a column's name and unit as numbers
    metadata = {
        **SEEDING_METADATA,
        "CropToken": 174,
        "Product": {"ProductName": 5, "Components": [{"Name": 7.0}, {"Name": {"x": 1}}, {"Name": True}, "x"]},
        "DataAttributes": [*SEEDING_METADATA["DataAttributes"], {"Name": 5, "Unit": 3}, "Heading"],
    }
    parts = _jd_shapefile(variety="P1", metadata=metadata)

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(parts))

    # Then it converts; the numbers are names, the rest is left out
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    assert file["crops"] == ["soybeans"]
    assert _summary(api_client, file["id"])["products"] == ["5", "7"]
    assert _catalog(api_client, core_user, "products") == ["5", "7"]


def test_deere_metadata_that_is_not_an_object_is_ignored(api_client, core_user):
    parts = _jd_shapefile(variety="P1", metadata=[SEEDING_METADATA])
    batch = _batch(api_client, core_user, zip_entries(parts))
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    assert file["varieties"] == ["P1"]


def test_geojson_names_given_as_numbers_are_text_and_other_values_are_ignored(api_client, core_user):
    # Given GeoJSON points whose variety is a number, crop NaN on some points and a JD crop id on others, products
    # an object, operation type an object, and a rate an integer beyond the range of a float
    count = 20
    data = _geojson(
        count,
        seedRate=[10**400 if i == 0 else 80000 for i in range(count)],
        variety=5,
        crop=[math.nan if i % 2 else 173 for i in range(count)],
        products={"name": "Roundup"},
        operationType={"planted": True},
    )

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries({"plant.geojson": data}))

    # Then it converts: the number is the variety's name, the crop id a crop, the objects are ignored, and the rate
    # that is no float is a missing value
    assert batch["status"] == "PROCESSED", batch
    [file] = _files(api_client, batch)
    assert (file["crops"], file["varieties"]) == (["corn"], ["5"])
    assert file["operationType"] == "planted"
    summary = _summary(api_client, file["id"])
    assert summary["products"] == [] and _catalog(api_client, core_user, "products") == []
    assert summary["cleaning"]["reasons"] == {"seedRate <= 0 or missing": 1}


def test_an_isoxml_workers_licence_number_reaches_its_operator(api_client, core_user, valid_timelogs):
    """The reader took a worker's names only (WKR B, C): every operator pooled from ISOXML had `license` null."""
    # Given a task data set's first task, worked by a WKR that states its licence number (L) and by one that does not
    root = ET.parse(valid_timelogs / "TASKDATA.XML").getroot()
    tasks = root.findall("TSK")
    for task in tasks[1:]:
        root.remove(task)
    root.append(ET.Element("WKR", A="WKR1", B="Driver", C="Peter", L=" LIC-123 "))
    root.append(ET.Element("WKR", A="WKR2", B="Helper"))
    tasks[0].set("F", "WKR1")
    ET.SubElement(tasks[0], "WAN", A="WKR2")
    entries = {f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()}
    entries["iso/TASKDATA.XML"] = ET.tostring(root)

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(entries))

    # Then its operators are pooled, the licence number with the worker who has one
    assert batch["status"] == "PROCESSED", batch
    operators = _get(api_client, f"/services/beta/api/users/{core_user.id}/operators")
    assert {(o["name"], o["license"]) for o in operators} == {("Peter Driver", "LIC-123"), ("Helper", None)}
