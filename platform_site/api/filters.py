"""Query filters shared by every list: timestamps (UTC, ISO 8601) and numbers. A value we cannot read is a 400
with a field error, never ignored and never a 500. Numbers are plain ASCII decimals: Python's `int()` and
`float()` would also read `1_000` or other scripts' digits, which no client means."""

import re
from datetime import UTC, datetime, time, timedelta

import django_filters
from django import forms
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import extend_schema_field

from platform_site.text import PLAIN_INTEGER, PLAIN_NUMBER, iso_time_text


class UtcDateTimeField(forms.Field):
    """ISO 8601 timestamp; without a timezone (the spec's form) it is UTC, a `Z` or offset is honoured.
    A bare date means its midnight UTC."""

    default_error_messages = {
        "invalid": "Enter an ISO 8601 timestamp, e.g. 2024-05-01T10:00:00 (UTC).",
        "range": "The timestamp is out of range: in UTC it must fall within the years 1 to 9999.",
    }

    def to_python(self, value):
        if value in (None, ""):
            return None
        try:
            return utc_timestamp(value)
        except OverflowError:
            raise forms.ValidationError(self.error_messages["range"], code="range") from None
        except ValueError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


def utc_timestamp(value: str) -> datetime:
    """An ISO 8601 timestamp as an aware datetime in UTC: without a timezone (the spec's form) it is UTC, a `Z` or
    offset is honoured, a bare date is its midnight UTC (`iso_time_text` says what is read). ValueError when it is
    none; OverflowError when it falls outside the years 1 to 9999 in UTC (0001-01-01T00:00:00+01:00)."""
    text = iso_time_text(value)
    parsed = None
    if text is not None:
        try:
            parsed = parse_datetime(text)
            if parsed is None and (day := parse_date(text)) is not None:
                parsed = datetime.combine(day, time.min)
        except ValueError:
            parsed = None
    if parsed is None:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


# The last whole millisecond a timestamp can hold.
LAST_MILLISECOND = datetime.max.replace(microsecond=999_000, tzinfo=UTC)


class UtcDateTimeFilter(django_filters.Filter):
    """A timestamp filter that reads a value written to the millisecond (as the API prints times) as that whole
    millisecond, since what is stored may carry microseconds: `exact` matches it, `gt` ("after") starts after it
    and `lte` ("ended by then") takes it in, so a value copied from a response finds its record, and "after the
    last `createdTime` seen" does not answer that record again. `gte` and `lt` need no widening."""

    field_class = UtcDateTimeField

    def filter(self, qs, value):
        if value is None or self.lookup_expr not in ("exact", "gt", "lte") or value.microsecond % 1000:
            return super().filter(qs, value)
        name = self.field_name
        last = value >= LAST_MILLISECOND  # (nothing comes after it)
        following = None if last else value + timedelta(milliseconds=1)
        if self.lookup_expr == "gt":
            return qs.none() if last else qs.filter(**{f"{name}__gte": following})
        if self.lookup_expr == "lte":
            return qs if last else qs.filter(**{f"{name}__lt": following})
        within = qs.filter(**{f"{name}__gte": value})
        return within if last else within.filter(**{f"{name}__lt": following})


class _PlainNumber:
    """A number field that reads only text matching `plain` (Python's own parser reads more)."""

    plain: re.Pattern

    def to_python(self, value):
        if value not in self.empty_values and not self.plain.fullmatch(str(value).strip()):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class PlainFloatField(_PlainNumber, forms.FloatField):
    """A finite double written in ASCII decimal (`12.5`, `-3`, `1e3`)."""

    plain = PLAIN_NUMBER


class PlainIntegerField(_PlainNumber, forms.IntegerField):
    """A whole number written in ASCII digits (`12`, `-3`; not `1.5`, `1e3` or `1_0`)."""

    plain = PLAIN_INTEGER


@extend_schema_field({"type": "number", "format": "double"})  # (drf-spectacular says "float" of a NumberFilter)
class FloatFilter(django_filters.NumberFilter):
    """A double (finite); `1e3`, `12.5` and `1e300` are numbers, `abc`, `nan`, `1e400` and `1_000` are 400."""

    field_class = PlainFloatField

    def get_max_validator(self):
        return None  # django-filter caps numbers at 1e50; a double goes to about 1.8e308


@extend_schema_field({"type": "integer", "format": "int64", "minimum": 1})
class IdFilter(django_filters.NumberFilter):
    """A numeric id: a whole number from 1 to the largest 64-bit integer; `1.5`, `abc`, `1e40` and `1_0` are 400."""

    field_class = PlainIntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)
