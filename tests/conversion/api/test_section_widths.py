"""Area of ISOXML points from the sections that are on (condensed work state 0x00A1), not from the whole boom."""

import io
import json
import struct
import xml.etree.ElementTree as ET
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from shapely.geometry import Point, shape

from tests.conversion.readers.conftest import walk_tlg

from .conftest import FILES_URL, upload, zip_entries

pytestmark = pytest.mark.django_db(transaction=True)


def _get(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return response


def _converted(client, core_user, data: bytes, name: str) -> dict[str, dict]:
    """Upload `data`; the processed files by file name, each with its summary properties, covered area and
    standard points."""
    response = upload(client, core_user.pk, data, name=name)
    assert response.status_code == 201, response.content
    batch = _get(client, f"/services/operations/api/batch/{response.json()['id']}").json()
    out = {}
    for file_id in batch["files"]:
        file = _get(client, f"{FILES_URL}/{file_id}").json()
        if file["status"] != "processed":
            continue
        summary = _get(client, f"{FILES_URL}/{file_id}/summary").json()
        standard = json.loads(b"".join(_get(client, f"{FILES_URL}/{file_id}/standardGeojson").streaming_content))
        out[file["fileName"]] = {
            "summary": summary["properties"],
            "geometry": summary["geometry"],
            "points": [f["properties"] for f in standard["features"]],
        }
    return out


def _counter_share(walk: dict, index: int) -> int:
    """What the counter logged at DLV `index` grew by over the log (last - first), read by the independent walker."""
    logged = [value for record in walk["records"] for i, value in record["values"] if i == index]
    return logged[-1] - logged[0]


@pytest.mark.embedded
def test_cnh_spreader_area_counts_only_the_sections_that_are_on(api_client, core_user, load_from_stream, tmp_path):
    # Given CNH's "Germany solid" task: a 36 m Rauch spreader of six 6 m sections whose boom logs a 36 m actual
    # working width (0x0043) throughout, while its condensed work state (0x00A1) often has every section off
    data = (load_from_stream / "Another-single-ACP.zip").read_bytes()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    root = ET.parse(tmp_path / "TASKDATA.XML").getroot()
    sections = {det.get("A") for dvc in root.iter("DVC") for det in dvc.iter("DET") if det.get("C") == "4"}
    header = ET.parse(tmp_path / "TLG00000.XML").getroot()
    dlvs = header.findall("DLV")
    walk = walk_tlg(tmp_path / "TLG00000.XML", tmp_path / "TLG00000.BIN")
    # (the area the task controller counted on each section, 0x0074 in m2, summed over the six sections)
    section_area = sum(
        _counter_share(walk, i) for i, d in enumerate(dlvs) if d.get("A") == "0074" and d.get("C") in sections
    )
    assert 8000 < section_area < 8500

    # When it is uploaded
    files = _converted(api_client, core_user, data, "Another-single-ACP.zip")

    # Then its area is within 5 % of what the sections counted (the whole-boom width gave 14,594 m2, +77 %): the
    # points' distance differs from the controller's by about 1 % and a section switching within a record by up
    # to one record's travel
    spreader = files["Another-single-ACP/Germany solid"]
    summary = spreader["summary"]
    assert summary["totalArea"]["value"] == pytest.approx(section_area, rel=0.05)
    # and the boom's own area counter, which drops once mid-log (8231 -> 3936 m2), is recorded as what it grew by
    assert summary["recordedTotals"]["totalArea"]["value"] == pytest.approx(section_area, rel=0.01)
    # and a point with every section off stays a point, with no width and no area
    off = [p for p in spreader["points"] if p["equipmentWidth"] == 0]
    assert off and all(p.get("area") in (0, None) for p in off)
    assert {p["equipmentWidth"] for p in spreader["points"]} <= {0, 6, 12, 18, 24, 30, 36}


_SPREADER_NAME = "A00A800825600000"  # ISO NAME of a fertilizer spreader (device class 5)
_DAY = (datetime(2024, 5, 2) - datetime(1980, 1, 1)).days


def _task_data(section_widths_mm: list[int | None], boom_max_mm: int | None) -> bytes:
    """A spreader whose boom DET-2 has three sections (DET type 4), listed out of their element-number order."""
    properties, sections = [], []
    for n, width in enumerate(section_widths_mm, start=1):
        dor = ""
        if width is not None:
            properties.append(f'<DPT A="{20 + n}" B="0043" C="{width}" D="Section width"/>')
            dor = f'<DOR A="{20 + n}"/>'
        sections.append(f'<DET A="DET-{2 + n}" B="{2 + n}" C="4" D="Section {n}" E="{1 + n}" F="2">{dor}</DET>')
    boom_dor = ""
    if boom_max_mm is not None:
        properties.append(f'<DPT A="11" B="0046" C="{boom_max_mm}" D="Maximum width"/>')
        boom_dor = '<DOR A="11"/>'
    return (
        '<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="3" '
        f'DataTransferOrigin="1"><DVC A="DVC-1" B="Spreader" D="{_SPREADER_NAME}">'
        '<DET A="DET-1" B="1" C="1" D="Spreader" E="0" F="0"/>'
        f'<DET A="DET-2" B="2" C="2" D="Boom" E="1" F="1">{boom_dor}</DET>'
        + "".join(reversed(sections))
        + "".join(properties)
        + '</DVC><TSK A="TSK1" B="spread" G="4"><TLG A="TLG00001" C="1"/></TSK></ISO11783_TaskData>'
    ).encode()


def _time_log(states: list[int]) -> tuple[bytes, bytes]:
    """One record a second, 1.1 m apart northwards; the boom logs a 10 m working width, work state on, 150 kg/ha
    and the condensed work state of each record."""
    header = (
        '<?xml version="1.0" encoding="UTF-8"?><TIM A="" D="4"><PTN A="" B=""/>'
        '<DLV A="0043" B="" C="DET-2"/><DLV A="008D" B="" C="DET-2"/><DLV A="0007" B="" C="DET-2"/>'
        '<DLV A="00A1" B="" C="DET-2"/></TIM>'
    )
    records = bytearray()
    for i, state in enumerate(states):
        records += struct.pack("<IHiiB", (10 * 3600 + i) * 1000, _DAY, int(52.0 * 1e7) + i * 100, int(8.0 * 1e7), 4)
        records += struct.pack("<BiBiBiBI", 0, 10_000, 1, 1, 2, 15_000, 3, state)
    return header.encode(), bytes(records)


def _upload_spreader(client, core_user, states, section_widths_mm, boom_max_mm=None) -> dict:
    xml, binary = _time_log(states)
    entries = {
        "TASKDATA/TASKDATA.XML": _task_data(section_widths_mm, boom_max_mm),
        "TASKDATA/TLG00001.XML": xml,
        "TASKDATA/TLG00001.BIN": binary,
    }
    [file] = _converted(client, core_user, zip_entries(entries), "spread.zip").values()
    return file


def _second(point: dict) -> int:
    start = datetime(2024, 5, 2, 10, tzinfo=UTC)
    stamp = datetime.fromisoformat(point["timestamp"].replace("Z", "+00:00"))
    return round((stamp - start) / timedelta(seconds=1))


# Condensed work state: 2 bits a section, section 1 lowest; 0 off, 1 on, 2 error, 3 not installed.
ALL_ON, FIRST_AND_THIRD, NONE_ON, SECOND_ON_THIRD_ERROR = 0b010101, 0b010001, 0, 0b100100
FIRST_TWO_ON_THIRD_NOT_INSTALLED = 0b110101


@pytest.mark.embedded
@pytest.mark.parametrize(
    ("section_widths_mm", "boom_max_mm", "widths"),
    [
        # The device description gives each section's width (2 m, 3 m, 5 m)
        (
            [2000, 3000, 5000],
            None,
            {
                ALL_ON: 10.0,
                FIRST_AND_THIRD: 7.0,
                NONE_ON: 0.0,
                SECOND_ON_THIRD_ERROR: 3.0,
                FIRST_TWO_ON_THIRD_NOT_INSTALLED: 5.0,
            },
        ),
        # It names three sections but no widths: each is a third of the boom's 12 m maximum width (a section the
        # state calls not installed is still one of the three the device names)
        (
            [None, None, None],
            12_000,
            {
                ALL_ON: 12.0,
                FIRST_AND_THIRD: 8.0,
                NONE_ON: 0.0,
                SECOND_ON_THIRD_ERROR: 4.0,
                FIRST_TWO_ON_THIRD_NOT_INSTALLED: 8.0,
            },
        ),
    ],
)
def test_point_width_is_the_sum_of_the_sections_on(api_client, core_user, section_widths_mm, boom_max_mm, widths):
    # Given 50 points, ten in each section state, whose boom logs a 10 m working width throughout
    states = [ALL_ON] * 10 + [FIRST_AND_THIRD] * 10 + [NONE_ON] * 10 + [SECOND_ON_THIRD_ERROR] * 10
    states += [FIRST_TWO_ON_THIRD_NOT_INSTALLED] * 10
    # When uploaded
    file = _upload_spreader(api_client, core_user, states, section_widths_mm, boom_max_mm)
    # Then every point keeps its place, with the width of its sections that are on and the area of that width
    points = file["points"]
    assert len(points) == len(states)
    for point in points:
        width = widths[states[_second(point)]]
        assert point["equipmentWidth"] == pytest.approx(width)
        if point.get("distance") is not None:
            assert point["area"] == pytest.approx(point["distance"] * width)
    summary = file["summary"]
    areas = [p["area"] for p in points if p.get("area") is not None]
    assert summary["totalArea"]["value"] == pytest.approx(sum(areas))
    # and what was applied is the rate over that area only
    assert summary["totalApplied"]["value"] == pytest.approx(150 * sum(areas) / 10_000)


@pytest.mark.embedded
def test_a_work_state_that_never_shows_a_section_on_is_not_used(api_client, core_user):
    # Given a log whose condensed work state is 0 throughout while the boom works at 10 m (AllFieldsMoved does so)
    file = _upload_spreader(api_client, core_user, [NONE_ON] * 20, [2000, 3000, 5000])
    # Then the points keep the boom's logged width, as without a work state
    assert {p["equipmentWidth"] for p in file["points"]} == {10.0}
    assert file["summary"]["totalArea"]["value"] > 0


@pytest.mark.embedded
def test_points_with_every_section_off_cover_nothing(api_client, core_user):
    # Given 10 points with every section on, 40 with every section off (44 m of headland turn), then 10 on again
    states = [ALL_ON] * 10 + [NONE_ON] * 40 + [ALL_ON] * 10
    file = _upload_spreader(api_client, core_user, states, [2000, 3000, 5000])
    # Then the points are all there, but the covered area leaves out the stretch driven with every section off
    assert len(file["points"]) == 60
    covered = shape(file["geometry"])
    assert covered.contains(Point(8.0, 52.0 + 5 * 1e-5))
    assert not covered.contains(Point(8.0, 52.0 + 30 * 1e-5))


@pytest.mark.embedded
def test_the_sections_the_device_names_share_its_width_even_one_the_state_calls_not_installed(api_client, core_user):
    # Given three named sections without widths on a 12 m boom, the third always "not installed" in the state
    file = _upload_spreader(api_client, core_user, [FIRST_TWO_ON_THIRD_NOT_INSTALLED] * 10, [None, None, None], 12_000)
    # Then each named section is a third of the boom, and the two on make 8 m
    assert {p["equipmentWidth"] for p in file["points"]} == {8.0}
