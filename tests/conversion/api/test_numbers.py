"""Numbers a user reads off converted files: every task kept, totals, units and dry values as the points say."""

import io
import json
import re
import struct
import xml.etree.ElementTree as ET
import zipfile
from datetime import UTC, datetime

import pytest

from conversion.models import UNABLE_TO_READ, BatchDataset, DatasetStatus
from conversion.services.datasets import dataset_convert
from tests.conversion.readers.conftest import walk_tlg

from .conftest import BATCH_URL, FILES_URL, upload, zip_entries

pytestmark = pytest.mark.django_db(transaction=True)


def _get(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return response


def _batch(client, core_user, data: bytes, name="upload.zip") -> dict:
    response = upload(client, core_user.pk, data, name=name)
    assert response.status_code == 201, response.content
    return _get(client, f"{BATCH_URL}/{response.json()['id']}").json()


def _files(client, batch: dict) -> list[dict]:
    return [_get(client, f"{FILES_URL}/{file_id}").json() for file_id in batch["files"]]


def _utc(local: str, zone: str) -> str:
    """`local` (TASKDATA time without zone) at `zone` (+hh:mm), as the API writes UTC times."""
    stamp = datetime.fromisoformat(local[:23] + zone).astimezone(UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.embedded
def test_isoxml_tasks_of_one_name_each_keep_their_own_file(api_client, core_user, load_from_stream, tmp_path):
    # Given a task data set whose two tasks are both called "Plant crop", each with its own time log
    data = (load_from_stream / "AllFieldsMoved_Or_Simplified_Out.zip").read_bytes()
    archive = zipfile.ZipFile(io.BytesIO(data))
    root = ET.fromstring(archive.read("AllFieldsMoved_Or_Simplified_Out/TASKDATA.XML"))
    tasks = root.findall("TSK")
    assert [t.get("B") for t in tasks] == ["Plant crop", "Plant crop"]
    # The task controller's zone, written on the product allocations' times (TIM has none)
    [zone] = {m.group(0) for a in root.iter("ASP") if (m := re.search(r"[+-]\d\d:\d\d$", a.get("A")))}

    # When it is uploaded
    batch = _batch(api_client, core_user, data, name="AllFieldsMoved_Or_Simplified_Out.zip")

    # Then each task is a file of its own, with its own log's points and its own time range
    assert batch["status"] == "PROCESSED"
    files = _files(api_client, batch)
    assert [f["fileName"] for f in files] == [
        "AllFieldsMoved_Or_Simplified_Out/Plant crop",
        "AllFieldsMoved_Or_Simplified_Out/Plant crop (TSK2)",
    ]
    archive.extractall(tmp_path)
    folder = tmp_path / "AllFieldsMoved_Or_Simplified_Out"
    for file, task in zip(files, tasks, strict=True):
        assert file["status"] == "processed"
        tim = task.find("TIM")
        # (the points kept after cleaning lie within the task's own TIM start and stop)
        assert _utc(tim.get("A"), zone) <= file["startTime"] < file["endTime"] <= _utc(tim.get("B"), zone)
        stem = task.find("TLG").get("A")
        walk = walk_tlg(folder / f"{stem}.xml", folder / f"{stem}.bin")
        summary = _get(api_client, f"{FILES_URL}/{file['id']}/summary").json()["properties"]
        positioned = sum(1 for r in walk["records"] if (r["ptn"]["A"], r["ptn"]["B"]) != (0, 0))
        assert summary["cleaning"]["pointsRead"] == positioned
        assert file["pointCount"] == summary["pointCount"] > 2000

    # And a run of the data set again (a worker that crashed before ending it) makes no file twice
    dataset = BatchDataset.objects.get(batch_id=batch["id"])
    BatchDataset.objects.filter(pk=dataset.pk).update(status=DatasetStatus.PROCESSING)
    dataset_convert(dataset.pk)
    again = _get(api_client, f"{BATCH_URL}/{batch['id']}").json()
    assert again["files"] == batch["files"]
    assert _files(api_client, again) == files


@pytest.mark.embedded
def test_isoxml_tasks_whose_long_names_differ_only_after_255_characters_each_keep_their_file(
    api_client, core_user, load_from_stream
):
    # Given the two tasks of a data set renamed with 300 characters alike, then "north" and "south"
    source = zipfile.ZipFile(io.BytesIO((load_from_stream / "AllFieldsMoved_Or_Simplified_Out.zip").read_bytes()))
    entries = {info.filename: source.read(info) for info in source.infolist() if not info.is_dir()}
    root = ET.fromstring(entries["AllFieldsMoved_Or_Simplified_Out/TASKDATA.XML"])
    for task, side in zip(root.findall("TSK"), ("north", "south"), strict=True):
        task.set("B", "Plant crop " * 30 + side)
    entries["AllFieldsMoved_Or_Simplified_Out/TASKDATA.XML"] = ET.tostring(root)

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries(entries))

    # Then both tasks are converted, each into a file of its own whose name fits the 255 characters of a name
    files = _files(api_client, batch)
    assert [f["status"] for f in files] == ["processed", "processed"]
    names = [f["fileName"] for f in files]
    assert len(set(names)) == 2 and all(len(n) <= 255 for n in names)
    assert all(n.startswith("AllFieldsMoved_Or_Simplified_Out/Plant crop Plant crop") for n in names)
    assert files[0]["startTime"] != files[1]["startTime"]


@pytest.mark.embedded
def test_machine_files_carry_the_distance_and_fuel_of_their_file(api_client, core_user, valid_timelogs):
    # Given a task data set whose tasks record their fuel used (TIM total DDI 0x0094, in ml)
    root = ET.parse(valid_timelogs / "TASKDATA.XML").getroot()
    # (a task paused and resumed has several TIMs; the task controller's totals run on, so the last one holds them)
    fuel_ml = {
        task.get("B").strip(): float(dlv.get("B"))
        for task in root.findall("TSK")
        for dlv in task.findall("TIM")[-1].findall("DLV")
        if dlv.get("A") == "0094"
    }
    assert len(fuel_ml) > 10

    # When it is uploaded
    batch = _batch(api_client, core_user, zip_entries({p.name: p.read_bytes() for p in valid_timelogs.iterdir()}))

    # Then each machine file says how far the machine went (the file's totalDistance, in feet) and the fuel it
    # used (in US gallons), and the spec's distance filters find it
    checked = 0
    for file in _files(api_client, batch):
        if file["status"] != "processed" or not file["machines"]:
            continue
        metres = _get(api_client, f"{FILES_URL}/{file['id']}/summary").json()["properties"]["totalDistance"]
        assert metres["unit"] == "m" and metres["value"] > 0
        task = file["fileName"].split("/", 1)[1]
        for machine_id in file["machines"]:
            url = f"/services/beta/api/users/{core_user.pk}/machines/{machine_id}/files"
            (record,) = [r for r in _get(api_client, url).json() if r["coreFileId"] == file["id"]]
            assert record["distance"]["unit"] == "ft"
            assert record["distance"]["value"] == pytest.approx(metres["value"] / 0.3048)
            assert record["fuelConsumption"] == {"value": pytest.approx(fuel_ml[task] / 3785.411784), "unit": "US gal"}
            longer = _get(api_client, f"{url}?greaterThanDistanceValue={record['distance']['value'] - 1}").json()
            shorter = _get(api_client, f"{url}?lessThanDistanceValue={record['distance']['value'] - 1}").json()
            assert record["id"] in [r["id"] for r in longer] and record["id"] not in [r["id"] for r in shorter]
            checked += 1
    assert checked > 10


@pytest.mark.embedded
def test_summary_machinery_is_spelt_as_the_api(api_client, core_user, valid_timelogs):
    batch = _batch(api_client, core_user, zip_entries({p.name: p.read_bytes() for p in valid_timelogs.iterdir()}))
    file = next(f for f in _files(api_client, batch) if f["status"] == "processed")
    machinery = _get(api_client, f"{FILES_URL}/{file['id']}/summary").json()["properties"]["machinery"]
    assert machinery and all(re.fullmatch(r"[a-z]+([A-Z][a-z]+)*", key) for entry in machinery for key in entry)
    assert any("serialNumber" in entry for entry in machinery)


@pytest.mark.embedded
def test_a_task_that_cleaning_empties_fails_with_its_operation_type(api_client, core_user, load_from_stream):
    # Given a spreader's task data whose tasks are partly never switched on (every point is dropped by cleaning)
    batch = _batch(api_client, core_user, (load_from_stream / "Another-single-ACP.zip").read_bytes())
    files = _files(api_client, batch)
    failed = [f for f in files if f["status"] == "failed" and "No point is left after cleaning" in f["statusDetails"]]
    assert failed and any(f["status"] == "processed" for f in files)

    # Then each such file still says what kind of operation it logged (read before the points were cleaned away:
    # the seeding task planted, the spreading and spraying ones applied), so the operationType filter finds it
    kinds = {f["fileName"]: f["operationType"] for f in failed}
    assert all(
        kind == ("planted" if "Seeding" in name or "Planting" in name else "applied") for name, kind in kinds.items()
    )
    for kind in set(kinds.values()):
        listed = _get(api_client, f"{FILES_URL}?coreUserId={core_user.pk}&operationType={kind}&size=100").json()
        assert {f["id"] for f in failed if f["operationType"] == kind} <= {f["id"] for f in listed["operations"]}


def _geojson_zip(features: list[dict], name: str = "points.geojson") -> bytes:
    collection = {"type": "FeatureCollection", "features": features}
    return zip_entries({name: json.dumps(collection).encode()})


def _point(lon: float, lat: float, **properties) -> dict:
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]}, "properties": properties}


def _only_file(client, batch: dict) -> tuple[dict, dict]:
    [file_id] = batch["files"]
    summary = _get(client, f"{FILES_URL}/{file_id}/summary").json()["properties"]
    standard = json.loads(b"".join(_get(client, f"{FILES_URL}/{file_id}/standardGeojson").streaming_content))
    return summary, standard


@pytest.mark.embedded
def test_per_section_rows_without_times_count_each_step_once(api_client, core_user):
    # Given a harvest logged per section (2 sections) at 10 steps of 10 m each, with no timestamps
    features = [
        _point(
            -93.15 + step * 1e-4 + section * 3e-5,
            41.66,
            sectionId=section,
            distance=10.0,
            equipmentWidth=5.0,
            wetMassPerArea=5000.0,
            harvestMoisture=20.0,
            crop="corn",
        )
        for step in range(10)
        for section in (1, 2)
    ]
    # When uploaded
    batch = _batch(api_client, core_user, _geojson_zip(features))
    assert batch["status"] == "PROCESSED"
    summary, _ = _only_file(api_client, batch)
    # Then the machine travelled 10 x 10 m (each step's rows repeat its distance), and covered 20 rows x 10 m x 5 m
    assert summary["totalDistance"] == {"value": 100.0, "unit": "m"}
    assert summary["totalArea"] == {"value": 1000.0, "unit": "m2"}


@pytest.mark.embedded
def test_a_point_without_moisture_is_dried_at_the_files_mean_moisture(api_client, core_user):
    # Given corn (standard moisture 15.5 %) whose third point logged no moisture; the others 20 % and 25 % over
    # areas of 50 and 150 m2
    start = datetime(2020, 9, 1, 10, tzinfo=UTC).timestamp()

    def at(i: int) -> str:
        return datetime.fromtimestamp(start + i, UTC).isoformat().replace("+00:00", "Z")

    common = {"equipmentWidth": 10.0, "wetMassPerArea": 10_000.0, "crop": "corn"}
    features = [
        _point(-93.15, 41.66, timestamp=at(0), distance=5.0, harvestMoisture=20.0, **common),
        _point(-93.1499, 41.66, timestamp=at(1), distance=15.0, harvestMoisture=25.0, **common),
        _point(-93.1498, 41.66, timestamp=at(2), distance=10.0, **common),
    ]
    # When uploaded
    batch = _batch(api_client, core_user, _geojson_zip(features))
    assert batch["status"] == "PROCESSED"
    summary, standard = _only_file(api_client, batch)
    dry = [f["properties"]["dryMassPerArea"] for f in standard["features"]]
    # Then the point without moisture is dried at the area-weighted mean moisture (23.75 %), not left wet
    mean = (20.0 * 50 + 25.0 * 150) / 200
    assert dry == pytest.approx([10_000 * 80 / 84.5, 10_000 * 75 / 84.5, 10_000 * (100 - mean) / 84.5])
    assert "harvestMoisture" not in standard["features"][2]["properties"] or (
        standard["features"][2]["properties"]["harvestMoisture"] is None
    )
    assert summary["totalDryMass"]["value"] == pytest.approx(
        sum(d * a / 10_000 for d, a in zip(dry, (50, 150, 100), strict=True))
    )


@pytest.mark.embedded
def test_harvest_without_any_moisture_has_no_dry_values(api_client, core_user):
    features = [
        _point(-93.15 + i * 1e-4, 41.66, distance=10.0, equipmentWidth=10.0, wetMassPerArea=8000.0, crop="corn")
        for i in range(3)
    ]
    batch = _batch(api_client, core_user, _geojson_zip(features))
    summary, standard = _only_file(api_client, batch)
    units = _get(api_client, f"{FILES_URL}/{batch['files'][0]}/units").json()
    assert "dryMassPerArea" not in units and "totalDryMass" not in summary
    assert all(f["properties"].get("dryMassPerArea") is None for f in standard["features"])
    assert summary["totalWetMass"]["value"] == pytest.approx(3 * 8000 * 100 / 10_000)


@pytest.mark.embedded
def test_units_and_images_name_only_properties_some_point_has(api_client, core_user, samples_dir):
    # Given the ofpetrial yield shapefile, whose points have no time (so no speed can be derived)
    folder = samples_dir / "ofpetrial-difm/inst/extdata"
    data = zip_entries({p.name: p.read_bytes() for p in sorted(folder.glob("yield-simple1.*"))})
    batch = _batch(api_client, core_user, data)
    assert batch["status"] == "PROCESSED"
    file_id = batch["files"][0]
    _, standard = _only_file(api_client, batch)
    with_values = {k for f in standard["features"] for k, v in f["properties"].items() if v is not None}
    # Then the units map and the images name only properties with a value on some point
    units = _get(api_client, f"{FILES_URL}/{file_id}/units").json()
    assert "speed" not in units
    assert set(units) <= with_values
    images = _get(api_client, f"{FILES_URL}/{file_id}/images").json()
    assert images and {i["property"] for i in images} <= with_values
    assert "speed" not in {i["property"] for i in images}
    # And each property of the units map has its image
    assert {i["property"] for i in images} == set(units)
    # And a distance derived from the positions is in feet on request, as the source's own lengths are
    imperial = _get(api_client, f"{FILES_URL}/{file_id}/units?unitSystem=imperial").json()
    assert (units["distance"], imperial["distance"]) == ("m", "ft")


def _time_log(ddis: list[int], values: list[int], *, first_second: int) -> tuple[bytes, bytes]:
    """A time log (header XML, binary) of 50 points 1 s and ~1.1 m apart, each logging `values` for the DLVs of
    `ddis` on DET-1, laid out as ISO 11783-10 says (TIM A/PTN A/B in every record, then the DLV pairs)."""
    dlvs = "".join(f'<DLV A="{ddi:04X}" B="" C="DET-1"/>' for ddi in ddis)
    header = f'<?xml version="1.0" encoding="UTF-8"?><TIM A="" D="4"><PTN A="" B=""/>{dlvs}</TIM>'
    day = (datetime(2024, 5, 2) - datetime(1980, 1, 1)).days
    records = bytearray()
    for i in range(50):
        ms = (10 * 3600 + first_second + i) * 1000
        records += struct.pack("<IHiiB", ms, day, int(52.0 * 1e7) + i * 100, int(8.0 * 1e7), len(values))
        for index, value in enumerate(values):
            records += struct.pack("<Bi", index, value)
    return header.encode(), bytes(records)


@pytest.mark.embedded
def test_a_task_whose_logs_give_a_rate_in_volume_and_in_mass_fails_with_the_reason(api_client, core_user):
    # Given one task logged first as 200 L/ha (DDI 0x0002, mm3/m2 x 0.01), then as 150 kg/ha (DDI 0x0007, mg/m2)
    width, on = 0x0043, 0x008D
    first = _time_log([0x0002, width, on], [2_000_000, 12_000, 1], first_second=0)
    second = _time_log([0x0007, width, on], [15_000, 12_000, 1], first_second=100)
    taskdata = (
        '<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="3" '
        'DataTransferOrigin="1"><TSK A="TSK1" B="spread" G="4"><TLG A="TLG00001" C="1"/><TLG A="TLG00002" C="1"/>'
        "</TSK></ISO11783_TaskData>"
    )
    entries = {"TASKDATA/TASKDATA.XML": taskdata.encode()}
    for n, (xml, binary) in enumerate((first, second), start=1):
        entries[f"TASKDATA/TLG0000{n}.XML"], entries[f"TASKDATA/TLG0000{n}.BIN"] = xml, binary
    # When uploaded
    batch = _batch(api_client, core_user, zip_entries(entries))
    # Then no file averages litres with kilograms: the task fails, saying which property and units disagree
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == UNABLE_TO_READ
    [failed] = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()["failed"]
    assert "appliedRate" in failed["message"] and "'L/ha'" in failed["message"] and "'kg/ha'" in failed["message"]
    file = _get(api_client, f"{FILES_URL}/{failed['id']}").json()
    assert file["status"] == "failed" and file["standardGeojson"] is None


@pytest.mark.embedded
def test_a_harvest_giving_each_points_mass_and_no_rate_has_its_totals(api_client, core_user):
    # Given a GeoJSON harvest whose points say their own wet mass (kg) and moisture, and no yield per area
    wet = [12.5, 14.0, 9.5, 13.0, 11.0]
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [-93.0 + i * 2e-5, 41.0]},
            "properties": {
                "timestamp": f"2024-10-01T10:00:0{i}Z",
                "wetMass": mass,
                "harvestMoisture": 20.0,
                "crop": "Corn",
            },
        }
        for i, mass in enumerate(wet)
    ]
    data = zip_entries({"corn.geojson": json.dumps({"type": "FeatureCollection", "features": features}).encode()})

    # When it is uploaded
    batch = _batch(api_client, core_user, data)
    [file] = _files(api_client, batch)
    summary = _get(api_client, f"{FILES_URL}/{file['id']}/summary").json()["properties"]

    # Then it is a harvest (it was "other") whose total wet mass is the sum of its points' masses (it had no total),
    # and whose dry mass is theirs at corn's standard 15.5 % (it had no dry values): wet x (100 - 20) / (100 - 15.5)
    assert summary["operationType"] == "harvested"
    assert summary["totalWetMass"] == {"value": pytest.approx(sum(wet)), "unit": "kg"}
    assert summary["totalDryMass"] == {"value": pytest.approx(sum(wet) * 80 / 84.5), "unit": "kg"}
    assert summary["dryMass"]["unit"] == "kg" and summary["dryMass"]["max"] == pytest.approx(14.0 * 80 / 84.5)
    assert summary["totalDryVolume"]["unit"] == "L"
