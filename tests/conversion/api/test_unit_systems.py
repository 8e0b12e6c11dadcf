"""Units on request (supplement: "metric by default; imperial on request where the source is imperial"):
`unitSystem=imperial` on a file's or an operation's summary and units map gives the units the source used, the
summary's measures converted into them; a metric source answers the same either way."""

import zipfile

import pytest
from django.db import transaction

from conversion.models import File
from fields.services import field_create
from operations.models import Operation
from tests.operations.helpers import grid_box, grid_table, processed_file
from tests.tenancy import assert_problem
from tests.units import ACRE_M2, BUSHEL_L, FOOT_M, POUND_KG

from .conftest import BATCH_URL, FILES_URL, upload, zip_folder

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

HARVEST = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip"


def _processed_file(api_client, core_user, data: bytes) -> str:
    answer = upload(api_client, core_user.pk, data)
    assert answer.status_code == 201, answer.content
    batch = api_client.get(f"{BATCH_URL}/{answer.json()['id']}").json()
    assert batch["status"] == "PROCESSED", batch
    (file_id,) = batch["files"]
    return file_id


def _get(api_client, url: str, **params) -> dict:
    response = api_client.get(url, params)
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.fixture
def harvest(api_client, core_user, samples_dir) -> str:
    """John Deere's harvest export (ft, lb/ac, bu/ac), uploaded and converted."""
    return _processed_file(api_client, core_user, (samples_dir / HARVEST).read_bytes())


def test_a_file_from_an_imperial_source_answers_in_its_units_on_request(api_client, harvest):
    url = f"{FILES_URL}/{harvest}"
    metric_units, imperial_units = (
        _get(api_client, f"{url}/units"),
        _get(api_client, f"{url}/units", unitSystem="imperial"),
    )
    assert metric_units["dryVolumePerArea"] == "L/ha" and metric_units["distance"] == "m"
    assert _get(api_client, f"{url}/units", unitSystem="metric") == metric_units
    assert imperial_units == {
        **metric_units,
        "area": "ac",
        "distance": "ft",
        "elevation": "ft",
        "equipmentWidth": "ft",
        "wetMass": "lb",
        "wetMassPerArea": "lb/ac",
        "dryMass": "lb",
        "dryMassPerArea": "lb/ac",
        "wetVolume": "bu",
        "wetVolumePerArea": "bu/ac",
        "dryVolume": "bu",
        "dryVolumePerArea": "bu/ac",
    }

    metric = _get(api_client, f"{url}/summary")["properties"]
    imperial = _get(api_client, f"{url}/summary", unitSystem="imperial")["properties"]
    per_unit = {"ac": ACRE_M2, "ft": FOOT_M, "lb": POUND_KG, "bu": BUSHEL_L, "lb/ac": POUND_KG / ACRE_M2 * 1e4,
                "bu/ac": BUSHEL_L / ACRE_M2 * 1e4}  # fmt: skip
    for total, unit in [("totalArea", "ac"), ("totalDistance", "ft"), ("totalWetMass", "lb"), ("totalDryVolume", "bu")]:
        assert imperial[total]["unit"] == unit
        assert imperial[total]["value"] == pytest.approx(metric[total]["value"] / per_unit[unit], rel=1e-9)
    for name in ("dryVolumePerArea", "wetMassPerArea", "elevation"):
        unit = imperial_units[name]
        assert imperial[name]["unit"] == unit
        for key in ("avg", "min", "max"):
            assert imperial[name][key] == pytest.approx(metric[name][key] / per_unit[unit], rel=1e-9)
    # Measures in no other unit, and everything else, are as stored.
    assert imperial["harvestMoisture"] == metric["harvestMoisture"]
    assert {k: v for k, v in imperial.items() if k not in imperial_units and not k.startswith("total")} == {
        k: v for k, v in metric.items() if k not in imperial_units and not k.startswith("total")
    }


def test_a_file_processed_before_the_imperial_map_was_kept_gets_it_from_its_points(api_client, harvest):
    url = f"{FILES_URL}/{harvest}"
    kept = _get(api_client, f"{url}/units", unitSystem="imperial")
    File.objects.filter(pk=harvest).update(imperial_units=None)
    assert _get(api_client, f"{url}/units", unitSystem="imperial") == kept
    assert _get(api_client, f"{url}/summary", unitSystem="imperial")["properties"]["totalDryVolume"]["unit"] == "bu"


def test_a_metric_source_answers_the_same_in_either_system(api_client, core_user, load_from_stream, tmp_path):
    with zipfile.ZipFile(load_from_stream / "SingleDPD.zip") as archive:
        archive.extractall(tmp_path)
    file_id = _processed_file(api_client, core_user, zip_folder(tmp_path))
    url = f"{FILES_URL}/{file_id}"
    assert _get(api_client, f"{url}/units", unitSystem="imperial") == _get(api_client, f"{url}/units")
    assert _get(api_client, f"{url}/summary", unitSystem="imperial") == _get(api_client, f"{url}/summary")


def test_an_operation_answers_in_the_units_of_its_sources_on_request(api_client, core_user):
    field_create(core_user=core_user, geometry=grid_box(), name="North")
    with transaction.atomic():
        processed_file(core_user, grid_table())
    operation = Operation.objects.get()
    url = f"/services/operations/api/operations/{operation.pk}"
    # Its sources are metric: the same either way; and the parameter is read there too.
    assert _get(api_client, f"{url}/units", unitSystem="imperial") == _get(api_client, f"{url}/units")
    assert _get(api_client, f"{url}/summary", unitSystem="imperial") == _get(api_client, f"{url}/summary")
    assert_problem(api_client.get(f"{url}/units", {"unitSystem": "us"}), 400, "validation")


@pytest.mark.parametrize("value", ["Imperial", "us", "SI", "imperial,metric"])
def test_an_unknown_unit_system_is_400(api_client, harvest, value):
    for output in ("units", "summary"):
        body = assert_problem(
            api_client.get(f"{FILES_URL}/{harvest}/{output}", {"unitSystem": value}), 400, "validation"
        )
        assert body["fieldErrors"] == [{"field": "unitSystem", "message": "Must be one of: metric, imperial."}]
