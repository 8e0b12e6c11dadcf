"""Weather of a field: a real HTTP server on loopback answers as the Open-Meteo archive API does."""

import json
import socket
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

import pytest

from tests.fields.helpers import create_field, field_url, rect
from tests.receiver import serve_on_loopback
from tests.tenancy import assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

FIELD = rect(10.0, 50.0, 10.02, 50.01)  # centroid (10.01, 50.005)


class FakeOpenMeteo:
    """Answers `/v1/archive` like Open-Meteo: daily arrays for the requested days, or `status` errors."""

    def __init__(self):
        self.status = 200
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                outer.requests.append({"path": url.path, **query})
                if outer.status != 200:
                    body = {"error": True, "reason": "Parameter 'start_date' is out of allowed range"}
                else:
                    body = outer.document(query)
                payload = json.dumps(body).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server, base_url = serve_on_loopback(Handler)
        self.url = f"{base_url}/v1/archive"

    @staticmethod
    def document(query: dict) -> dict:
        start, end = date.fromisoformat(query["start_date"]), date.fromisoformat(query["end_date"])
        days = [(start + timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]
        variables = query["daily"].split(",")
        daily = {"time": days}
        for index, name in enumerate(variables):
            daily[name] = [round(index + i * 0.5, 2) for i in range(len(days))]
        daily["snowfall_sum"][0] = None  # Open-Meteo answers null for missing values
        return {
            "latitude": float(query["latitude"]),
            "longitude": float(query["longitude"]),
            "generationtime_ms": 0.1,
            "utc_offset_seconds": 0,
            "timezone": "GMT",
            "timezone_abbreviation": "GMT",
            "elevation": 120.0,
            "daily_units": {
                "time": "iso8601",
                "rain_sum": "mm",
                "temperature_2m_max": "°C",
                "temperature_2m_mean": "°C",
                "temperature_2m_min": "°C",
                "snowfall_sum": "cm",
                "shortwave_radiation_sum": "MJ/m²",
            },
            "daily": daily,
        }


@pytest.fixture
def open_meteo(settings):
    fake = FakeOpenMeteo()
    settings.WEATHER_BASE_URL = fake.url
    settings.WEATHER_TIMEOUT_SECONDS = 2
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def weather_url(core_user, field_id):
    return f"{field_url(core_user, field_id)}/weather"


def test_weather_is_the_specs_feature(api_client, core_user, open_meteo):
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-03-01", "endTime": "2024-03-03"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["type"] == "Feature"
    assert body["geometry"]["type"] == "Point"
    assert body["geometry"]["coordinates"] == pytest.approx([10.01, 50.005])
    properties = body["properties"]
    units = {name: value["unit"] for name, value in properties.items() if name != "processedTime"}
    assert units == {
        "rainSum": "mm",
        "maxTemperature": "°C",
        "meanTemperature": "°C",
        "minTemperature": "°C",
        "snowfallSum": "cm",
        "shortwaveRadiationSum": "MJ/m²",
    }
    assert properties["rainSum"]["values"] == [
        {"time": "2024-03-01T00:00:00", "value": 0.0},
        {"time": "2024-03-02T00:00:00", "value": 0.5},
        {"time": "2024-03-03T00:00:00", "value": 1.0},
    ]
    assert [v["value"] for v in properties["shortwaveRadiationSum"]["values"]] == [5.0, 5.5, 6.0]
    assert properties["snowfallSum"]["values"][0]["value"] is None
    assert properties["processedTime"].endswith("Z")
    # The request speaks the Open-Meteo archive protocol.
    (sent,) = open_meteo.requests
    assert sent["path"] == "/v1/archive"
    assert (sent["start_date"], sent["end_date"], sent["timezone"]) == ("2024-03-01", "2024-03-03", "UTC")
    assert sent["daily"] == (
        "rain_sum,temperature_2m_max,temperature_2m_mean,temperature_2m_min,snowfall_sum,shortwave_radiation_sum"
    )
    assert (float(sent["latitude"]), float(sent["longitude"])) == pytest.approx((50.005, 10.01))


def test_366_days_are_allowed(api_client, core_user, open_meteo):
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-12-31"})
    assert response.status_code == 200
    assert len(response.json()["properties"]["rainSum"]["values"]) == 366


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"startTime": "2024-01-01"},
        {"endTime": "2024-01-01"},
        {"startTime": "yesterday", "endTime": "2024-01-01"},
        {"startTime": "2024-02-30", "endTime": "2024-03-01"},
        {"startTime": "2024-03-02", "endTime": "2024-03-01"},
        {"startTime": "2023-01-01", "endTime": "2024-01-02"},
    ],
)
def test_bad_dates_are_400_and_the_source_is_not_asked(api_client, core_user, open_meteo, params):
    field = create_field(api_client, core_user, FIELD)
    assert_problem(api_client.get(weather_url(core_user, field["id"]), params), 400, "validation")
    assert open_meteo.requests == []


@pytest.mark.parametrize("status", [500, 502, 429])
def test_an_error_of_the_source_is_503(api_client, core_user, open_meteo, status):
    field = create_field(api_client, core_user, FIELD)
    open_meteo.status = status
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 503, "weatherSourceUnavailable")


def test_days_the_source_refuses_are_400_with_its_reason(api_client, core_user, open_meteo):
    """The archive answers 400 `{"error": true, "reason": ...}` for days it does not hold (before 1940, the last
    few days): a client error that no retry mends, so not a 503."""
    field = create_field(api_client, core_user, FIELD)
    open_meteo.status = 400
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "1900-01-01", "endTime": "1900-01-02"})
    body = assert_problem(response, 400, "weatherRequestRejected")
    assert body["detail"].endswith("Parameter 'start_date' is out of allowed range")


def test_an_unreachable_source_is_503(api_client, core_user, settings):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.WEATHER_BASE_URL = f"http://127.0.0.1:{port}/v1/archive"
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 503, "weatherSourceUnavailable")


def test_weather_of_an_unknown_field_is_404(api_client, core_user, open_meteo):
    response = api_client.get(weather_url(core_user, "nope"), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 404, "notFound")
