"""Weather of a field: a real HTTP server on loopback answers as the Open-Meteo archive API does."""

import json
import os
import subprocess
import sys
import time
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from fields import weather
from fields.services import boundary_provider_sync
from tests.fields.helpers import create_field, field_url, provider_field, rect
from tests.receiver import serve_on_loopback, unused_port
from tests.tenancy import assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

FIELD = rect(10.0, 50.0, 10.02, 50.01)  # centroid (10.01, 50.005)


class FakeOpenMeteo:
    """Answers `/v1/archive` like Open-Meteo: daily arrays for the requested days, or `status` errors."""

    def __init__(self):
        self.status = 200
        self.requests: list[dict] = []
        self.answer: bytes | None = None  # sent instead of the document, as is
        self.byte_every: float | None = None  # seconds between the bytes of the answer (a server sending slowly)
        self.bytes_sent = 0
        self.redirect_to: str | None = None  # answered with a 302 there instead
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                outer.requests.append({"path": url.path, **query})
                if outer.redirect_to is not None:
                    self.send_response(302)
                    self.send_header("Location", outer.redirect_to + "?" + url.query)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if outer.status != 200:
                    body = {"error": True, "reason": "Parameter 'start_date' is out of allowed range"}
                else:
                    body = outer.document(query)
                payload = outer.answer if outer.answer is not None else json.dumps(body).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if outer.byte_every is None:
                    self.wfile.write(payload)
                    outer.bytes_sent += len(payload)
                    return
                try:
                    for index in range(len(payload)):
                        self.wfile.write(payload[index : index + 1])
                        self.wfile.flush()
                        outer.bytes_sent += 1
                        time.sleep(outer.byte_every)
                except OSError:  # the client hung up
                    pass

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


class SunnyDays:
    """Another weather source, as `WEATHER_SOURCE` names one: 12.5 mm of rain and nothing else, every day."""

    def daily(self, *, latitude, longitude, start, end):
        days = [start + timedelta(days=n) for n in range((end - start).days + 1)]
        values = {name: [12.5 if name == "rain_sum" else None] * len(days) for name in weather.DAILY_VARIABLES}
        return weather.DailyWeather(days, values)


def test_another_source_is_plugged_in_with_the_weather_source_variable(api_client, core_user, settings):
    """`WEATHER_SOURCE` was documented as a variable, but only a Django setting of that name was read."""
    env = {**os.environ, "WEATHER_SOURCE": "tests.fields.test_weather.SunnyDays"}
    read = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
         "print(settings.WEATHER_SOURCE)"],
        env=env, capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    settings.WEATHER_SOURCE = read.stdout.strip()
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-03-01", "endTime": "2024-03-02"})
    assert response.status_code == 200, response.content
    assert [day["value"] for day in response.json()["properties"]["rainSum"]["values"]] == [12.5, 12.5]


def test_366_days_are_allowed(api_client, core_user, open_meteo):
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-12-31"})
    assert response.status_code == 200
    assert len(response.json()["properties"]["rainSum"]["values"]) == 366


def test_one_day_is_a_range_starting_and_ending_on_it(api_client, core_user, open_meteo):
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-02-29", "endTime": "2024-02-29"})
    assert response.status_code == 200
    assert [v["time"] for v in response.json()["properties"]["rainSum"]["values"]] == ["2024-02-29T00:00:00"]


def test_the_weather_of_a_field_whose_outline_its_provider_deleted_is_400(api_client, core_user, open_meteo):
    """No active boundary, no place to ask the weather of: `fieldWithoutBoundary` (docs/fields.md), and the source
    is not asked."""
    field = provider_field(core_user, FIELD)
    boundary_provider_sync(field=field, provider_boundary_id="pb", deleted=True)
    response = api_client.get(
        weather_url(core_user, field.public_id), {"startTime": "2024-03-01", "endTime": "2024-03-01"}
    )
    assert_problem(response, 400, "fieldWithoutBoundary")
    assert open_meteo.requests == []


@pytest.mark.parametrize(
    ("sent", "day"),
    [
        ("2024-03-30T23:30:00-05:00", "2024-03-31"),  # 04:30 UTC the next day
        ("2024-03-31T08:00:00+14:00", "2024-03-30"),  # 18:00 UTC the day before
        ("2024-03-31t10:00z", "2024-03-31"),  # (RFC 3339 lets `t` and `z` be lower case)
    ],
)
def test_a_date_time_is_taken_for_its_utc_day(api_client, core_user, open_meteo, sent, day):
    """A date-time with an offset was taken for the date written in it, a day off in UTC, where the days are UTC
    days and a list's timestamp filters read it in UTC; lower-case `t` and `z` were refused."""
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": sent, "endTime": sent})
    assert response.status_code == 200, response.content
    assert [v["time"] for v in response.json()["properties"]["rainSum"]["values"]] == [f"{day}T00:00:00"]


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
        {"startTime": "2024-03-31X10:00", "endTime": "2024-03-31"},  # (a joint of date and time but T or a space)
        {"startTime": "2024-03-31\u200910:00", "endTime": "2024-03-31"},
    ],
)
def test_bad_dates_are_400_and_the_source_is_not_asked(api_client, core_user, open_meteo, params):
    field = create_field(api_client, core_user, FIELD)
    assert_problem(api_client.get(weather_url(core_user, field["id"]), params), 400, "validation")
    assert open_meteo.requests == []


@pytest.mark.parametrize(
    ("params", "named"),
    [({}, ["startTime", "endTime"]), ({"startTime": "2024-13-01", "endTime": "2024-02-30"}, ["startTime", "endTime"])],
)
def test_both_bad_dates_are_named_in_one_answer(api_client, core_user, open_meteo, params, named):
    """Only startTime was named; a client that fixed it learned of endTime next."""
    field = create_field(api_client, core_user, FIELD)
    body = assert_problem(api_client.get(weather_url(core_user, field["id"]), params), 400, "validation")
    assert [error["field"] for error in body["fieldErrors"]] == named and body["detail"].endswith("(and 1 more)")


@pytest.mark.parametrize("status", [500, 502, 429])
def test_an_error_of_the_source_is_503(api_client, core_user, open_meteo, status):
    field = create_field(api_client, core_user, FIELD)
    open_meteo.status = status
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 503, "weatherSourceUnavailable")


def test_a_source_answering_with_a_redirect_is_503_and_the_redirect_is_not_followed(api_client, core_user, open_meteo):
    """The weather source was the one outbound call that followed redirects, wherever they led (loopback, a cloud's
    metadata address): a source answers with the days asked for or it is unavailable."""
    elsewhere = FakeOpenMeteo()
    try:
        open_meteo.redirect_to = elsewhere.url
        field = create_field(api_client, core_user, FIELD)
        query = {"startTime": "2024-01-01", "endTime": "2024-01-02"}
        body = assert_problem(
            api_client.get(weather_url(core_user, field["id"]), query), 503, "weatherSourceUnavailable"
        )
        assert body["detail"] == "The weather source answered with status 302."
        assert len(open_meteo.requests) == 1 and elsewhere.requests == []
    finally:
        elsewhere.server.shutdown()
        elsewhere.server.server_close()


def test_days_the_source_refuses_are_400_with_its_reason(api_client, core_user, open_meteo):
    """The archive answers 400 `{"error": true, "reason": ...}` for days it does not hold (before 1940, the last
    few days): a client error that no retry mends, so not a 503."""
    field = create_field(api_client, core_user, FIELD)
    open_meteo.status = 400
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "1900-01-01", "endTime": "1900-01-02"})
    body = assert_problem(response, 400, "weatherRequestRejected")
    assert body["detail"].endswith("Parameter 'start_date' is out of allowed range")


def test_an_unreachable_source_is_503(api_client, core_user, settings):
    port = unused_port()
    settings.WEATHER_BASE_URL = f"http://127.0.0.1:{port}/v1/archive"
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 503, "weatherSourceUnavailable")


def test_weather_of_an_unknown_field_is_404(api_client, core_user, open_meteo):
    response = api_client.get(weather_url(core_user, "nope"), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 404, "notFound")


def _document(start: str, end: str) -> dict:
    return FakeOpenMeteo.document(
        {
            "start_date": start,
            "end_date": end,
            "daily": ",".join(weather.DAILY_VARIABLES),
            "latitude": 0,
            "longitude": 0,
        }
    )


def _with_first_rain(value) -> bytes:
    document = _document("2024-01-01", "2024-01-02")
    document["daily"]["rain_sum"][0] = value
    return json.dumps(document).encode()  # NaN and Infinity as Python's json writes them


def _other_days() -> bytes:
    return json.dumps(_document("1999-01-01", "1999-01-02")).encode()


def _one_day_short() -> bytes:
    return json.dumps(_document("2024-01-01", "2024-01-01")).encode()


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_with_first_rain(float("nan")), id="NaN"),
        pytest.param(_with_first_rain(float("inf")), id="Infinity"),
        pytest.param(_with_first_rain(10**400), id="past-the-largest-double"),
        pytest.param(_with_first_rain("3.2"), id="text"),
        pytest.param(b'{"daily":' + b"[" * 100_000, id="nested-100000-deep"),
        pytest.param(_other_days(), id="other-days"),
        pytest.param(_one_day_short(), id="one-day-short"),
        pytest.param(b"<html>busy</html>", id="not-json"),
    ],
)
def test_an_answer_that_is_not_the_days_asked_for_as_finite_numbers_is_503(api_client, core_user, open_meteo, answer):
    """NaN, Infinity, a number past the largest double and a document nested too deep were 500s; days other than
    those asked for were passed on as if they were them."""
    field = create_field(api_client, core_user, FIELD)
    open_meteo.answer = answer
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 503, "weatherSourceUnavailable")


def test_a_source_sending_its_answer_slowly_is_cut_at_the_deadline(api_client, core_user, open_meteo, settings):
    """The timeout bounded each read only: a source sending a byte within each timeout held the request as long as
    it liked. The whole call now has twice the timeout."""
    settings.WEATHER_TIMEOUT_SECONDS = 0.5
    open_meteo.byte_every = 0.05  # the answer (a few kilobytes) would take minutes; every read is well in time
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert_problem(response, 503, "weatherSourceUnavailable")
    assert 0 < open_meteo.bytes_sent < 200  # cut off after about a second of it


def test_an_answer_larger_than_the_limit_is_503_and_not_read_whole(api_client, core_user, open_meteo, monkeypatch):
    monkeypatch.setattr(weather, "ANSWER_MAX_BYTES", 4096)
    field = create_field(api_client, core_user, FIELD)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-12-31"})
    body = assert_problem(response, 503, "weatherSourceUnavailable")
    assert "answered more than" in body["detail"]


@pytest.mark.parametrize(
    ("east_part", "west_part", "longitude"),
    [
        # Equal parts either side of 180: the centroid is on it.
        ((179.95, 180.0), (-180.0, -179.95), 180.0),
        # More of the field east of 180 (the western hemisphere's side): the centroid is there.
        ((179.95, 180.0), (-180.0, -179.9), -179.975),
        # More of it west of 180.
        ((179.9, 180.0), (-180.0, -179.95), 179.975),
    ],
)
def test_a_field_split_at_the_antimeridian_has_its_weather_there(
    api_client, core_user, open_meteo, east_part, west_part, longitude
):
    """Its centroid was taken as the plain mean of its longitudes: near 0, on the other side of the Earth."""
    (east_west, east_east), (west_west, west_east) = east_part, west_part
    geometry = {
        "type": "MultiPolygon",
        "coordinates": [
            *rect(east_west, 50.0, east_east, 50.1)["coordinates"],
            *rect(west_west, 50.0, west_east, 50.1)["coordinates"],
        ],
    }
    field = create_field(api_client, core_user, geometry)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    assert response.status_code == 200, response.content
    point = response.json()["geometry"]["coordinates"]
    assert abs(point[0]) == pytest.approx(abs(longitude), abs=1e-6) and point[1] == pytest.approx(50.05)
    if abs(longitude) != 180.0:
        assert point[0] == pytest.approx(longitude, abs=1e-6)
    (sent,) = open_meteo.requests
    assert float(sent["longitude"]) == pytest.approx(point[0], abs=1e-6)


def test_a_field_whose_parts_lie_closer_together_across_the_prime_meridian_keeps_its_plain_centroid(
    api_client, core_user, open_meteo
):
    # 186 degrees from the westernmost to the easternmost part; 192 the other way round, across 180.
    parts = [rect(-170.0, 10.0, -169.0, 11.0), rect(-1.0, 10.0, 1.0, 11.0), rect(15.0, 10.0, 16.0, 11.0)]
    geometry = {"type": "MultiPolygon", "coordinates": [polygon for part in parts for polygon in part["coordinates"]]}
    field = create_field(api_client, core_user, geometry)
    response = api_client.get(weather_url(core_user, field["id"]), {"startTime": "2024-01-01", "endTime": "2024-01-02"})
    # The mean of the parts' centroids weighted by their (planar) areas 1, 2 and 1.
    assert response.json()["geometry"]["coordinates"] == pytest.approx([(-169.5 + 0.0 * 2 + 15.5) / 4, 10.5])
