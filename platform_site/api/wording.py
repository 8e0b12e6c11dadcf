"""One wording for each kind of value refused, wherever it was sent: a body key (DRF), a list filter (Django forms)
or a paging parameter. Left to themselves, DRF and Django word the same error their own ways ("A valid integer is
required." in a body, "Enter a whole number." in a filter, "Ensure this value is greater than or equal to 1." beside
our "Must be at least 0."), and a client met several in one API."""

from functools import cache

from django import forms
from django.core import validators as django_validators
from rest_framework import serializers

NOT_AN_INTEGER = "Must be an integer."
NOT_A_NUMBER = "Must be a number."
NOT_A_UUID = "Must be a UUID."
NOT_A_STRING = "Must be a string."
NOT_A_BOOLEAN = "Must be true or false."
NOT_A_LIST = "Must be a JSON array."


def at_least(limit) -> str:
    return f"Must be at least {limit}."


def at_most(limit) -> str:
    return f"Must be at most {limit}."


# A number field's range messages, for a class's `default_error_messages` (DRF words its validators with them)
RANGE_MESSAGES = {"min_value": at_least("{min_value}"), "max_value": at_most("{max_value}")}


def length(word: str, limit: int, unit: str) -> str:
    """A length limit's wording, `Must have at most 255 characters.` (`word` "at least" or "at most", `unit`
    "character" or "item")."""
    return f"Must have {word} {limit} {unit}{'' if limit == 1 else 's'}."


# DRF's "invalid" of each kind of scalar, put in place only where the field says what its class does: an EmailField
# or URLField is a CharField whose "invalid" is about the text's form, and keeps it.
_INVALID = (
    (serializers.IntegerField, NOT_AN_INTEGER),
    (serializers.FloatField, NOT_A_NUMBER),
    (serializers.DecimalField, NOT_A_NUMBER),
    (serializers.UUIDField, NOT_A_UUID),
    (serializers.BooleanField, NOT_A_BOOLEAN),
    (serializers.CharField, NOT_A_STRING),
)


# The error key of each of Django's limit validators, under which a DRF field may be given a message of its own
_VALIDATOR_KEYS = {
    django_validators.MinValueValidator: "min_value",
    django_validators.MaxValueValidator: "max_value",
    django_validators.MinLengthValidator: "min_length",
    django_validators.MaxLengthValidator: "max_length",
}


def _library_message(field: serializers.Field, key: str):
    """DRF's own message under `key` for a field of this class (None when DRF has none)."""
    return _class_library_message(type(field), key)


@cache
def _class_library_message(field_class: type, key: str):
    # (a class's, found once: every serializer of every request rewords its fields)
    for klass in field_class.__mro__:
        if klass.__module__.startswith("rest_framework.") and key in vars(klass).get("default_error_messages", {}):
            return klass.default_error_messages[key]
    return None


def _reworded(validator, field):
    """`validator` again with our wording, or itself when we have none for it or the field was given a message of
    its own under that key. A new instance: a validator handed to a field may be a model field's own, shared with
    the admin's forms."""
    key = _VALIDATOR_KEYS.get(type(validator))
    if key is None or field.error_messages.get(key) != _library_message(field, key):
        return validator
    limit = validator.limit_value
    unit = "item" if isinstance(field, serializers.ListField | serializers.MultipleChoiceField) else "character"
    message = {
        "min_value": at_least(limit),
        "max_value": at_most(limit),
        "min_length": length("at least", limit, unit),
        "max_length": length("at most", limit, unit),
    }[key]
    return type(validator)(limit, message=message)


def reword(field: serializers.Field) -> None:
    """Give a serializer field (and a list's items) our wording of its type and range errors."""
    for kind, message in _INVALID:
        if isinstance(field, kind):
            if field.error_messages.get("invalid") == kind.default_error_messages["invalid"]:
                field.error_messages["invalid"] = message
            break
    if isinstance(field, serializers.ListField | serializers.ListSerializer):
        for key, message in (("not_a_list", NOT_A_LIST), ("empty", length("at least", 1, "item"))):
            if field.error_messages.get(key) == _library_message(field, key):
                field.error_messages[key] = message
        if isinstance(field, serializers.ListField):
            reword(field.child)
    if field.validators:
        field.validators = [_reworded(validator, field) for validator in field.validators]


_FORM_INVALID = (
    (forms.FloatField, NOT_A_NUMBER),  # (before IntegerField: Django's FloatField and DecimalField are IntegerFields)
    (forms.DecimalField, NOT_A_NUMBER),
    (forms.IntegerField, NOT_AN_INTEGER),
    (forms.UUIDField, NOT_A_UUID),
)


def reword_form_field(field: forms.Field) -> None:
    """Give a filter's form field the same wording. Django puts a field's own `min_value` / `max_value` message in
    place of its validators' (`Field.run_validators`), with the limit as `%(limit_value)s`."""
    for kind, message in _FORM_INVALID:
        if isinstance(field, kind):
            field.error_messages["invalid"] = message
            field.error_messages["min_value"] = at_least("%(limit_value)s")
            field.error_messages["max_value"] = at_most("%(limit_value)s")
            break
