"""Daily weather of a field at its centroid, from a pluggable source.

A source is anything with `daily(latitude=, longitude=, start=, end=)` returning `DailyWeather`. The
default speaks the Open-Meteo historical archive protocol at `settings.WEATHER_BASE_URL`; another source
can be named with the optional setting `WEATHER_SOURCE` (dotted path of a class taking no arguments).
"""

import json
import logging
import math
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Protocol

import requests
from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from platform_site.api.errors import DomainError, ServiceUnavailableError
from platform_site.api.filters import utc_timestamp
from platform_site.api.serializers import format_timestamp
from platform_site.api.urlsafety import deadline_session
from platform_site.outbound import call_deadline, json_object, read_at_most
from platform_site.text import ECHO_MAX, clip

from .geometry import centroid_lonlat, from_geos
from .models import Field

logger = logging.getLogger(__name__)

MAX_DAYS = 366
ANSWER_MAX_BYTES = 4 << 20  # 366 days of the six variables are about 30 KB
DAILY_VARIABLES = (
    "rain_sum",
    "temperature_2m_max",
    "temperature_2m_mean",
    "temperature_2m_min",
    "snowfall_sum",
    "shortwave_radiation_sum",
)
# Open-Meteo variable -> (property of the spec, unit of the spec). Open-Meteo's units are the same.
PROPERTIES = {
    "rain_sum": ("rainSum", "mm"),
    "temperature_2m_max": ("maxTemperature", "°C"),
    "temperature_2m_mean": ("meanTemperature", "°C"),
    "temperature_2m_min": ("minTemperature", "°C"),
    "snowfall_sum": ("snowfallSum", "cm"),
    "shortwave_radiation_sum": ("shortwaveRadiationSum", "MJ/m²"),
}


class WeatherSourceUnavailable(ServiceUnavailableError):
    error_key = "weatherSourceUnavailable"


class WeatherRequestRejected(DomainError):
    """The source refused the request itself (e.g. days outside its archive): asking again will not help."""

    error_key = "weatherRequestRejected"


@dataclass(frozen=True)
class DailyWeather:
    """Days and, per Open-Meteo variable name, one value (or None) per day."""

    days: list[date]
    values: dict[str, list[float | None]]


class WeatherSource(Protocol):
    def daily(self, *, latitude: float, longitude: float, start: date, end: date) -> DailyWeather: ...


class OpenMeteoArchiveSource:
    """The Open-Meteo historical archive API (`/v1/archive`): one GET with the six daily variables, UTC."""

    def __init__(self, base_url: str | None = None, timeout: float | None = None):
        self.base_url = base_url or settings.WEATHER_BASE_URL
        self.timeout = timeout if timeout is not None else settings.WEATHER_TIMEOUT_SECONDS

    def daily(self, *, latitude: float, longitude: float, start: date, end: date) -> DailyWeather:
        params = {
            "latitude": f"{latitude:.6f}",
            "longitude": f"{longitude:.6f}",
            "start_date": start.isoformat(),
            "end_date": end.isoformat(),
            "daily": ",".join(DAILY_VARIABLES),
            "timezone": "UTC",
        }
        try:
            # The timeout bounds each read; the session's deadline, the whole call (a source sending its answer a
            # byte at a time held the request as long as it liked).
            with deadline_session(call_deadline(self.timeout)) as session:
                response = session.get(
                    self.base_url, params=params, timeout=self.timeout, stream=True, allow_redirects=False
                )
                raw = read_at_most(response, ANSWER_MAX_BYTES)
        except requests.RequestException as exc:
            logger.warning("weather source unreachable: %s", exc)
            raise WeatherSourceUnavailable("The weather source cannot be reached; try again later.") from None
        if raw is None:
            raise WeatherSourceUnavailable(f"The weather source answered more than {ANSWER_MAX_BYTES >> 20} MiB.")
        if response.status_code != 200:
            logger.warning("weather source answered %s: %r", response.status_code, raw[:300])
            if response.status_code == 400 and (reason := _refusal(raw)):
                raise WeatherRequestRejected(f"The weather source cannot answer for these days: {reason}")
            raise WeatherSourceUnavailable(f"The weather source answered with status {response.status_code}.")
        try:
            daily = json.loads(raw)["daily"]
            days = [date.fromisoformat(day[:10]) for day in daily["time"]]
            values = {name: [_number(v) for v in daily[name]] for name in DAILY_VARIABLES}
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            logger.warning("weather source answered an unexpected document: %s", type(exc).__name__)
            raise WeatherSourceUnavailable("The weather source answered an unexpected document.") from None
        if any(len(v) != len(days) for v in values.values()):
            raise WeatherSourceUnavailable("The weather source answered an unexpected document.")
        if days != [start + timedelta(days=n) for n in range((end - start).days + 1)]:
            raise WeatherSourceUnavailable("The weather source answered for other days than those asked for.")
        return DailyWeather(days=days, values=values)


def _refusal(raw: bytes) -> str | None:
    """The `reason` of the archive's answer to a request it refuses (`{"error": true, "reason": "..."}`)."""
    body = json_object(raw)
    reason = body.get("reason") if body.get("error") is True else None
    return " ".join(reason.split())[:300] if isinstance(reason, str) and reason.strip() else None


def _number(value) -> float | None:
    """A daily value: a finite JSON number, or null (a day the archive has no value for)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    number = float(value)  # OverflowError past the largest double
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {value!r}")
    return number


def weather_source() -> WeatherSource:
    """The configured source (the `WEATHER_SOURCE` setting, a dotted path; empty: the Open-Meteo archive's)."""
    dotted = settings.WEATHER_SOURCE
    return import_string(dotted)() if dotted else OpenMeteoArchiveSource()


def parse_day(value: str | None, name: str) -> date:
    """An ISO 8601 date (`YYYY-MM-DD`; a date-time is accepted and its UTC date used, read as a list's timestamp
    filters read one: `utc_timestamp`); 400 otherwise."""
    if not value:
        raise DomainError(f"{name} is required (YYYY-MM-DD).", field_errors=[{"field": name, "message": "Required."}])
    try:
        return utc_timestamp(value).date()
    except (ValueError, OverflowError):
        raise DomainError(
            f"{name} must be an ISO 8601 date (YYYY-MM-DD), not {clip(repr(value), ECHO_MAX)}.",
            field_errors=[{"field": name, "message": "Not an ISO 8601 date."}],
        ) from None


def weather_range(start_time: str | None, end_time: str | None) -> tuple[date, date]:
    """Validated [start, end]: start <= end, at most 366 days. Both dates' errors are answered together (the
    first was answered alone, as a list's query parameters are not)."""
    days, refused = [], []
    for value, name in ((start_time, "startTime"), (end_time, "endTime")):
        try:
            days.append(parse_day(value, name))
        except DomainError as exc:
            refused.append(exc)
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        errors = [error for exc in refused for error in exc.field_errors]
        raise DomainError(f"{refused[0].detail}{more}", field_errors=errors)
    start, end = days
    if start > end:
        raise DomainError(
            "startTime must not be after endTime.", field_errors=[{"field": "startTime", "message": "After endTime."}]
        )
    if (end - start) + timedelta(days=1) > timedelta(days=MAX_DAYS):
        raise DomainError(
            f"At most {MAX_DAYS} days per request.",
            field_errors=[{"field": "endTime", "message": f"More than {MAX_DAYS} days after startTime."}],
        )
    return start, end


def field_weather(*, field: Field, start: date, end: date, source: WeatherSource | None = None) -> dict:
    """The spec's weather Feature of `field`: centroid Point, six daily properties with units, processedTime."""
    if field.boundary_id is None:
        raise DomainError("The field has no active boundary, so it has no location.", error_key="fieldWithoutBoundary")
    centroid = centroid_lonlat(from_geos(field.boundary.geometry))
    weather = (source or weather_source()).daily(latitude=centroid.y, longitude=centroid.x, start=start, end=end)
    properties: dict = {}
    for variable, (name, unit) in PROPERTIES.items():
        properties[name] = {
            "values": [
                {"time": f"{day.isoformat()}T00:00:00", "value": value}
                for day, value in zip(weather.days, weather.values[variable], strict=True)
            ],
            "unit": unit,
        }
    properties["processedTime"] = format_timestamp(timezone.now())
    return {
        "type": "Feature",
        "geometry": {"type": "Point", "coordinates": [centroid.x, centroid.y]},
        "properties": properties,
    }
