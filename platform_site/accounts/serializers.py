from django.core.validators import EmailValidator
from rest_framework import serializers

from platform_site.api.serializers import (
    ApiModelSerializer,
    ApiSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictUUIDField,
)

from .models import CoreUser


class AuthenticateSerializer(ApiSerializer):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=256, trim_whitespace=False)
    rememberMe = StrictBooleanField(required=False, default=False)


class TokenSerializer(serializers.Serializer):
    id_token = serializers.CharField()


class CoreUserSerializer(ApiModelSerializer):
    """A core user: `id`, `name`, `email`, `phone`, `address`, `externalId`."""

    externalId = StrictCharField(
        source="external_id", max_length=255, required=False, allow_null=True, allow_blank=False
    )
    email = StrictCharField(max_length=254, required=False, allow_blank=True, validators=[EmailValidator()])

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
