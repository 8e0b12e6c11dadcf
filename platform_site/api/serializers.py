"""Base serializer pieces shared by every app: strict scalars, UTC timestamps with milliseconds,
and rejection of unknown body keys (a typo must not be silently ignored)."""

import json
import math
import uuid
from datetime import UTC, datetime
from functools import cache

from django.db import models
from rest_framework import serializers
from rest_framework.settings import api_settings

from platform_site.api import wording
from platform_site.api.errors import DomainError
from platform_site.text import ECHO_MAX, PLAIN_INTEGER
from platform_site.validators import CONTROL_CHARACTERS_MESSAGE, holds_control_characters


def format_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with milliseconds and `Z`, e.g. `2026-11-21T09:37:00.123Z`."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    # (`isoformat`, not `strftime("%Y")`: glibc writes the year 999 as `999`, not ISO's `0999`.)
    return value.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


class TimestampField(serializers.DateTimeField):
    """A DateTimeField that always renders `YYYY-MM-DDTHH:MM:SS.mmmZ`."""

    def to_representation(self, value):
        return format_timestamp(value)


class StrictBooleanField(serializers.BooleanField):
    """Only JSON `true` / `false`: no "yes", 1 or "true" strings."""

    default_error_messages = {"invalid": wording.NOT_A_BOOLEAN}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        self.fail("invalid", input=data)


class StrictFloatField(serializers.FloatField):
    """Only JSON numbers (not strings, not booleans, not NaN or infinity)."""

    default_error_messages = {"invalid": wording.NOT_A_NUMBER, **wording.RANGE_MESSAGES}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        try:
            number = float(data)  # an integer past the largest double (10**400) overflows: it was a 500
        except OverflowError:
            self.fail("invalid")
        if not math.isfinite(number):
            self.fail("invalid")
        return super().to_internal_value(number)


class StrictIntegerField(serializers.IntegerField):
    """Only JSON integers (a float with no fraction is accepted; strings and booleans are not)."""

    default_error_messages = {"invalid": wording.NOT_AN_INTEGER, **wording.RANGE_MESSAGES}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        if isinstance(data, float) and not data.is_integer():
            self.fail("invalid")
        return super().to_internal_value(int(data))


class StrictUUIDField(serializers.UUIDField):
    """Only a JSON string holding a UUID (DRF alone reads the number 1, and `true`, as UUIDs)."""

    default_error_messages = {"invalid": wording.NOT_A_UUID}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class QueryIntegerField(serializers.IntegerField):
    """An integer query parameter written in ASCII digits (`12`; not `1_0`, `1.0` or other scripts' digits)."""

    default_error_messages = {"invalid": wording.NOT_AN_INTEGER, **wording.RANGE_MESSAGES}

    def to_internal_value(self, data):
        if not PLAIN_INTEGER.fullmatch(str(data).strip()):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """Only JSON strings: a number is not silently turned into text."""

    default_error_messages = {"invalid": wording.NOT_A_STRING}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# Secrets are the client's bytes, whatever they are.
CONTROL_CHARACTERS_ALLOWED = frozenset({"password", "secret", "clientSecret"})


# A value no choice matches is answered with the choices, when they are at most this many (the `sort` error names
# its own): "\"square\" is not a valid choice." left the client to guess SQUARE.
CHOICES_NAMED_MAX = 40


def choices_named(choices) -> str | None:
    """The choices, as an error names them (`CHOICES_NAMED_MAX` at the most; the empty choice of a filter left
    out), or None when there are more."""
    names = [str(choice) for choice in choices if choice not in ("", None)]
    return ", ".join(names) if len(names) <= CHOICES_NAMED_MAX else None


def _name_the_choices(field) -> None:
    """A choice field (or a list of them) answers a value no choice matches with the choices, and echoes at most
    ECHO_MAX characters of the value."""
    target = field.child if isinstance(field, serializers.ListField) else field
    if isinstance(target, serializers.ChoiceField) and (names := choices_named(target.choices)):
        names = names.replace("{", "{{").replace("}", "}}")
        target.error_messages["invalid_choice"] = f'"{{input!s:.{ECHO_MAX}}}" is not one of: {names}.'


def json_type(value) -> str:
    """The JSON type of a value as JSON decoded it, as an error names it ("an array", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


READ_ONLY = "Read-only: leave it out."


@cache
def _answer_keys(serializer_class) -> frozenset[str]:
    """The keys an answer of `serializer_class` has (none for None)."""
    return frozenset(serializer_class().fields) if serializer_class is not None else frozenset()


class RejectUnknownFieldsMixin:
    """A body key the resource does not have is a 400, not silently dropped; so is text holding control
    characters (but tab and line breaks) in any key but a secret. A value no choice matches is answered with the
    choices (`_name_the_choices`); type and range errors are worded as everywhere else (`wording`). A key that is
    not taken but is one the resource answers with (`answered_by`: its answer's serializer) is "Read-only", not
    unknown: a client that sent back what it read learns to leave it out."""

    answered_by: type[serializers.Serializer] | None = None

    def get_fields(self):
        fields = super().get_fields()
        for field in fields.values():
            _name_the_choices(field)
            wording.reword(field)
        return fields

    def validate_empty_values(self, data):
        if data is None and self.parent is None:
            # (DRF answered a `null` body "No data provided", as if none had been sent)
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [self._not_an_object(data)]})
        return super().validate_empty_values(data)

    @staticmethod
    def _not_an_object(data) -> str:
        return f"Expected a JSON object, not {json_type(data)}."

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            # (DRF's "Invalid data. Expected a dictionary, but got int." named Python's types)
            raise serializers.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: [self._not_an_object(data)]}, code="invalid"
            )
        answered = _answer_keys(type(self).answered_by)
        errors = {
            key: [READ_ONLY if key in answered else "Unknown field."] for key in sorted(set(data) - set(self.fields))
        }
        for key, value in data.items():
            if key not in errors and key not in CONTROL_CHARACTERS_ALLOWED and holds_control_characters(value):
                errors[key] = [CONTROL_CHARACTERS_MESSAGE]
        if not errors:
            return super().to_internal_value(data)
        # The other keys are checked too, so one answer names every error of the body (an unknown key hid them).
        known = data.copy()
        for key in errors:
            known.pop(key)
        try:
            super().to_internal_value(known)
        except serializers.ValidationError as exc:
            if isinstance(exc.detail, dict):
                errors = {**{key: detail for key, detail in exc.detail.items() if key not in errors}, **errors}
        except DomainError as exc:  # a field's own problem (`invalidGeometry`): answered with the keys refused here
            exc.field_errors = [
                *(exc.field_errors or []),
                *({"field": key, "message": str(message)} for key, messages in errors.items() for message in messages),
            ]
            raise
        raise serializers.ValidationError(errors)


def _same_json(sent, answered) -> bool:
    """Whether a JSON value sent is the value answered, JSON types kept apart (`true` is not `1`, nor `1.0` an
    integer id); a UUID in either case is itself."""
    if isinstance(answered, list):
        return isinstance(sent, list) and len(sent) == len(answered) and all(map(_same_json, sent, answered))
    if type(sent) is not type(answered):
        return False
    if isinstance(sent, str) and sent != answered:
        try:
            return uuid.UUID(sent) == uuid.UUID(answered)
        except ValueError:
            return False
    return sent == answered


def echo_validated(serializer_class, body, answered: dict, **context) -> dict:
    """The validated data of a PUT body that may echo the resource as a GET answered it (read, change, put back):
    the keys `serializer_class` does not take but `answered` has are left out when they hold the value answered, and
    are each a 400 "Read-only" when they do not (a changed `fieldIds` is never taken for done), with the body's
    other errors in the same answer."""
    echoed, errors = [], {}
    if isinstance(body, dict):
        writable = serializer_class().fields
        echoed = [key for key in body if key in answered and key not in writable]
        errors = {
            key: [f"Read-only: it is {json.dumps(answered[key])}; send that or leave the key out."]
            for key in echoed
            if not _same_json(body[key], answered[key])
        }
        body = {key: value for key, value in body.items() if key not in echoed}
    serializer = serializer_class(data=body, context=context)
    if serializer.is_valid() and not errors:
        return serializer.validated_data
    raise serializers.ValidationError({**errors, **serializer.errors})


class ApiSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """Plain input/output serializer with strict unknown-key handling."""


class ApiModelSerializer(RejectUnknownFieldsMixin, serializers.ModelSerializer):
    """Model serializer with our timestamp format and strict scalars."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: TimestampField,
        models.BooleanField: StrictBooleanField,
        models.FloatField: StrictFloatField,
        models.IntegerField: StrictIntegerField,
        models.BigIntegerField: StrictIntegerField,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
    }
