from django.core.validators import EmailValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from platform_site.api.schema import document_extra_properties
from platform_site.api.serializers import (
    ApiModelSerializer,
    ApiSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictUUIDField,
)

from .models import CoreUser
from .services import PASSWORD_MAX, USERNAME_MAX


class AuthenticateSerializer(ApiSerializer):
    username = StrictCharField(max_length=USERNAME_MAX)
    password = StrictCharField(max_length=PASSWORD_MAX, trim_whitespace=False)
    rememberMe = StrictBooleanField(required=False, default=False)


class TokenSerializer(serializers.Serializer):
    id_token = serializers.CharField()


@extend_schema_field(
    {
        "description": 'An email address, or empty (`""`) for a core user without one.',
        "anyOf": [{"type": "string", "format": "email", "maxLength": 254}, {"type": "string", "maxLength": 0}],
    }
)
class EmailOrBlankField(StrictCharField):
    """An email address or "" (OpenAPI: `format: email` alone refuses the empty one, which users without an
    email have)."""


class CoreUserSerializer(ApiModelSerializer):
    """A core user: `id`, `name`, `email`, `phone`, `address`, `externalId`."""

    externalId = StrictCharField(
        source="external_id", max_length=255, required=False, allow_null=True, allow_blank=False
    )
    email = EmailOrBlankField(max_length=254, required=False, allow_blank=True, validators=[EmailValidator()])

    class Meta:
        model = CoreUser
        fields = ["id", "name", "email", "phone", "address", "externalId"]
        read_only_fields = ["id"]
        extra_kwargs = {
            "name": {"required": False, "allow_blank": True},
            "phone": {"required": False, "allow_blank": True},
            "address": {"required": False, "allow_blank": True},
        }


class CoreUserReplaceSerializer(CoreUserSerializer):
    """PUT /users: the id travels in the body."""

    id = StrictUUIDField()

    class Meta(CoreUserSerializer.Meta):
        read_only_fields = []


# Every key is answered (`""` or null when unset), though a request may leave any out.
document_extra_properties(CoreUserSerializer, required=("name", "email", "phone", "address", "externalId"))
