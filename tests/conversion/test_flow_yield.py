"""Yield from flow when only the flow is logged (FORMATS.md 2.6 and 5.2): wet mass per area = flow / (speed x
width), and from it the same per-point masses, dry values, volumes and totals as when the yield is logged."""

import shutil
from xml.etree import ElementTree

import numpy as np
import pytest

from conversion import standardize
from conversion.crops import crop_standard
from conversion.readers import Dataset, PointTable, get_reader

pytestmark = pytest.mark.embedded

VALID_TIMELOGS = "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"


def test_flow_speed_and_width_give_the_yield_and_its_totals():
    # Given a harvest logging mass flow (kg/s), speed (m/s) and width (m), and no yield; two points stand still,
    # one has no speed, one no width
    flow = [2.0, 3.0, 2.5, 4.0, 1.0, 2.0, 1.5]
    speed = [2.0, 2.5, 0.0, np.nan, 2.0, 2.0, 1.8]
    width = [9.0, 9.0, 9.0, 9.0, np.nan, 0.0, 9.0]
    distance = [2.0, 2.5, 0.0, 1.0, 2.0, 2.0, 1.8]
    moisture = [20.0, 14.0, 20.0, 20.0, 20.0, 20.0, 25.0]
    n = len(flow)
    table = PointTable(
        name="combine",
        operation_type="harvested",
        columns={
            "timestamp": np.datetime64("2024-09-01T10:00:00", "ms") + np.arange(n) * np.timedelta64(1000, "ms"),
            "lon": 10.0 + np.arange(n) * 0.00002,
            "lat": np.full(n, 54.0),
            "cropFlow": np.array(flow),
            "speed": np.array(speed),
            "equipmentWidth": np.array(width),
            "distance": np.array(distance),
            "harvestMoisture": np.array(moisture),
        },
        units={
            "cropFlow": "kg/s",
            "speed": "m/s",
            "equipmentWidth": "m",
            "distance": "m",
            "harvestMoisture": "percentage",
        },
        crops=["corn"],
    )

    derived = standardize.derive(table)

    # Then each point covering ground has kg/ha = kg/s / (m/s x m) x 10,000 m2/ha; the others have none
    expected = [f / (s * w) * 1e4 if s > 0 and w > 0 else None for f, s, w in zip(flow, speed, width, strict=True)]
    got = [None if np.isnan(v) else v for v in derived.columns["wetMassPerArea"].tolist()]
    assert got == pytest.approx(expected, rel=1e-12)
    assert derived.units["wetMassPerArea"] == "kg/ha"
    # And its mass is rate x area, its dry mass that at the crop's standard moisture, as for a logged yield
    ms = crop_standard("corn").standard_moisture
    covered = [i for i, rate in enumerate(expected) if rate is not None]
    for i in covered:
        wet_kg = expected[i] * distance[i] * width[i] / 1e4
        assert derived.columns["wetMass"][i] == pytest.approx(wet_kg, rel=1e-12)
        dry_kg = wet_kg * (100 - moisture[i]) / (100 - ms) if moisture[i] > ms else wet_kg
        assert derived.columns["dryMass"][i] == pytest.approx(dry_kg, rel=1e-12)
    # And cleaning drops the points without a yield, the totals summing the others
    cleaned, report = standardize.standardize(table)
    assert report.reasons == {"wetMassPerArea <= 0 or missing": n - len(covered)}
    props = standardize.summary(cleaned)["properties"]
    wet_total = sum(expected[i] * distance[i] * width[i] / 1e4 for i in covered)
    assert props["totalWetMass"] == {"value": pytest.approx(wet_total, rel=1e-12), "unit": "kg"}
    assert props["totalDryVolume"]["value"] > 0


@pytest.fixture(scope="module")
def harvest_runs(samples_dir, tmp_path_factory) -> dict[str, PointTable]:
    """Task SAV (TSK1) of ValidTimeLogs as logged (yield DDI 0x0054 and flow DDI 0x0057), and the same logs with
    0x0054 made a proprietary DDI (0xE054), so that only the flow tells the yield."""
    logged = samples_dir / VALID_TIMELOGS
    flow_only = tmp_path_factory.mktemp("flow") / "ValidTimeLogs"
    shutil.copytree(logged, flow_only)
    header = flow_only / "TLG00001.xml"
    text = header.read_text()
    assert text.count('A="0054"') == 1
    header.write_text(text.replace('A="0054"', 'A="E054"'))
    runs = {}
    for name, folder in (("logged", logged), ("flow only", flow_only)):
        tables = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
        runs[name] = next(t for t in tables if t.name == "SAV")
    return runs


def test_isoxml_harvest_logging_only_the_flow_gives_the_yields_totals(harvest_runs):
    logged, flow_only = harvest_runs["logged"], harvest_runs["flow only"]
    assert "wetMassPerArea" not in flow_only.columns and "cropFlow" in flow_only.columns

    totals = [standardize.summary(standardize.standardize(t)[0])["properties"] for t in (logged, flow_only)]

    # Then the cleaned points give about the wet mass the logged yield gives (flow and yield are logged apart)
    assert totals[1]["totalWetMass"]["value"] == pytest.approx(totals[0]["totalWetMass"]["value"], rel=0.01)
    assert totals[1]["totalArea"]["value"] == pytest.approx(totals[0]["totalArea"]["value"], rel=0.01)


def test_isoxml_flow_yield_estimates_the_tasks_recorded_total(samples_dir, harvest_runs):
    # The task's own total: DLV 0x005A (yield total mass, kg) of its TIM in TASKDATA.XML
    task = ElementTree.parse(samples_dir / VALID_TIMELOGS / "TASKDATA.XML").getroot().find("TSK[@A='TSK1']")
    recorded_kg = float(task.find("TIM/DLV[@A='005A']").get("B"))

    props = standardize.summary(standardize.derive(harvest_runs["flow only"]))["properties"]

    # Rate x (track distance x width) over every point estimates what the machine's own counter summed within a few
    # percent, as the logged yield does.
    assert props["totalWetMass"]["unit"] == "kg"
    assert props["totalWetMass"]["value"] == pytest.approx(recorded_kg, rel=0.05)
