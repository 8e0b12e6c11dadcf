from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from platform_site.api.schema import document_extra_properties
from platform_site.api.serializers import (
    ApiModelSerializer,
    ApiSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictUUIDField,
)
from platform_site.validators import EMAIL_MAX, validate_email_address

from .models import CoreUser
from .services import PASSWORD_MAX, USERNAME_MAX


class AuthenticateSerializer(ApiSerializer):
    username = StrictCharField(max_length=USERNAME_MAX)
    password = StrictCharField(max_length=PASSWORD_MAX, trim_whitespace=False)
    rememberMe = StrictBooleanField(required=False, default=False)


class TokenSerializer(serializers.Serializer):
    id_token = serializers.CharField()


# A user made through a magic link without an e-mail has its externalId as e-mail (spec): the column holds either.
STORED_EMAIL_MAX = CoreUser._meta.get_field("email").max_length


class EmailOrBlankField(StrictCharField):
    """An email address or "". A core user made through a magic link without one has its externalId as email (the
    spec's rule), which need be no address: a PUT may send back the email the user has, whatever it is (the
    serializer's `context["current_email"]`: a read, changed and put back record is no 400 for a value the client
    never chose); any other value must be an address (`validate_email_address`, the admin's rule too)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("validators", [validate_email_address])
        super().__init__(**kwargs)

    def run_validators(self, value):
        if value and value == self.context.get("current_email"):
            return
        super().run_validators(value)


class EmailOrBlankFieldSchema(OpenApiSerializerFieldExtension):
    """OpenAPI: `format: email` alone refuses the empty email of users without one; an answer's may also be a
    magic link's externalId."""

    target_class = EmailOrBlankField

    def map_serializer_field(self, auto_schema, direction):
        address = {"type": "string", "format": "email", "maxLength": EMAIL_MAX}
        blank = {"type": "string", "maxLength": 0}
        if direction == "response":
            # (no `type` beside the `anyOf`: drf-spectacular would add the request's validators to it)
            external_id = {"type": "string", "maxLength": STORED_EMAIL_MAX}
            return {
                "description": 'An email address, or empty (`""`) for a core user without one. A core user made '
                "through a magic link without an email has its externalId here, which may be no address.",
                "anyOf": [address, blank, external_id],
            }
        return {
            "description": 'An email address, or empty (`""`) for a core user without one. A PUT may also send '
            "back the email the user has, whatever it is (a magic link's externalId).",
            "anyOf": [address, blank],
        }


class CoreUserSerializer(ApiModelSerializer):
    """A core user: `id`, `name`, `email`, `phone`, `address`, `externalId`."""

    externalId = StrictCharField(
        source="external_id", max_length=255, required=False, allow_null=True, allow_blank=False
    )
    email = EmailOrBlankField(required=False, allow_blank=True)

    class Meta:
        model = CoreUser
        fields = ["id", "name", "email", "phone", "address", "externalId"]
        read_only_fields = ["id"]
        extra_kwargs = {
            "name": {"required": False, "allow_blank": True},
            "phone": {"required": False, "allow_blank": True},
            "address": {"required": False, "allow_blank": True},
        }

    def to_internal_value(self, data):
        # The service assigns the id (`externalId` is the client's): a sent one was dropped without a word, and a
        # client retrying with "its" id made a second user.
        if isinstance(data, dict) and "id" in data and self.fields["id"].read_only:
            raise serializers.ValidationError(
                {"id": ["Read-only: the service assigns a core user's id; send yours as externalId."]}
            )
        return super().to_internal_value(data)


class CoreUserReplaceSerializer(CoreUserSerializer):
    """PUT /users: the id travels in the body."""

    id = StrictUUIDField()

    class Meta(CoreUserSerializer.Meta):
        read_only_fields = []


# Every key is answered (`""` or null when unset), though a request may leave any out.
document_extra_properties(CoreUserSerializer, required=("name", "email", "phone", "address", "externalId"))
