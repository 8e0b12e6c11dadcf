"""Magic link and provider application bodies, in the spec's camelCase."""

import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import EmailValidator
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from platform_site.accounts.models import ConnectableProvider, ProviderApplication
from platform_site.api.schema import document_extra_properties, document_one_of
from platform_site.api.serializers import (
    ApiSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    TimestampField,
    format_timestamp,
)
from platform_site.validators import SCOPE_MAX_LENGTH, validate_http_url, validate_scope_token

from .models import MagicLink
from .services import EXPIRES_IN_DEFAULT, EXPIRES_IN_MAX, EXPIRES_IN_MIN, oauth_redirect_uri

# With their labels, as the models give them: OpenAPI then names one enum for both (ConnectableProviderEnum).
PROVIDER_CHOICES = ConnectableProvider.choices
COLOR = re.compile(r"#[0-9A-Fa-f]{6}")


class HttpUrlField(serializers.URLField):
    """An absolute http(s) URL (no ftp, no javascript:). Not trimmed: a URL with whitespace around it is refused,
    as a webhook's is, not quietly changed."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        value = super().to_internal_value(data)
        try:
            validate_http_url(value)  # (the admin's rule too)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.messages) from None
        return value


@extend_schema_field({"type": "string", "pattern": rf"^\s*{COLOR.pattern}\s*$", "example": "#F5F5F5"})
class HexColorField(StrictCharField):
    """`#RRGGBB` (spaces around it trimmed), answered in upper case."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not COLOR.fullmatch(value):
            raise serializers.ValidationError("A hexadecimal color such as #F5F5F5 is required.")
        return value.upper()


class MagicLinkSettingsSerializer(ApiSerializer):
    """Magic link settings (spec "Magic link settings")."""

    backgroundColor = HexColorField(required=False)
    companyLogo = HttpUrlField(required=False, max_length=2000)
    companyName = StrictCharField(required=False, allow_blank=True, max_length=255)
    headerImage = HttpUrlField(required=False, max_length=2000)
    showLeafUserName = StrictBooleanField(required=False)
    disconnectedEnabled = StrictBooleanField(required=False)


def expires_in_field():
    return StrictIntegerField(
        required=False, default=EXPIRES_IN_DEFAULT, min_value=EXPIRES_IN_MIN, max_value=EXPIRES_IN_MAX
    )


class LinkCreateSerializer(ApiSerializer):
    """Common to every creation: `expiresIn` (seconds) and `settings`."""

    widget: str = ""
    expiresIn = expires_in_field()
    settings = MagicLinkSettingsSerializer(required=False)

    def validate(self, attrs):
        if self.widget == MagicLink.Widget.FILEUPLOAD and "disconnectedEnabled" in attrs.get("settings", {}):
            raise serializers.ValidationError(
                {"settings": {"disconnectedEnabled": ["Only provider and authentication links can disconnect."]}}
            )
        return attrs

    def link_values(self) -> dict:
        """The keyword arguments of `magic_link_create`."""
        data = self.validated_data
        values = {"widget": self.widget, "expires_in": data["expiresIn"], "settings": data.get("settings") or {}}
        if "allowedProviders" in data:
            values["allowed_providers"] = list(dict.fromkeys(data["allowedProviders"]))
        if data.get("provider") is not None:
            if self.widget == MagicLink.Widget.PROVIDER:
                values["allowed_providers"] = [data["provider"]]
            else:
                values["provider"] = data["provider"]
        return values


class UserCreationMixin(serializers.Serializer):
    """Creation with the core user: `externalId` (required), `name` and `email` (default: the externalId)."""

    externalId = StrictCharField(max_length=255)
    name = StrictCharField(required=False, max_length=255)
    email = StrictCharField(required=False, max_length=254, validators=[EmailValidator()])

    def user_values(self) -> dict:
        data = self.validated_data
        return {"external_id": data["externalId"], "name": data.get("name"), "email": data.get("email")}


class ProviderLinkCreateSerializer(LinkCreateSerializer):
    widget = MagicLink.Widget.PROVIDER
    allowedProviders = serializers.ListField(child=serializers.ChoiceField(choices=PROVIDER_CHOICES), allow_empty=False)


class ProviderLinkWithUserCreateSerializer(UserCreationMixin, LinkCreateSerializer):
    """The spec names `provider` for this creation; `allowedProviders` is accepted too (one of the two)."""

    widget = MagicLink.Widget.PROVIDER
    provider = serializers.ChoiceField(choices=PROVIDER_CHOICES, required=False)
    allowedProviders = serializers.ListField(
        child=serializers.ChoiceField(choices=PROVIDER_CHOICES), allow_empty=False, required=False
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if ("provider" in attrs) == ("allowedProviders" in attrs):
            raise serializers.ValidationError({"provider": ["Give either provider or allowedProviders."]})
        return attrs


document_one_of(ProviderLinkWithUserCreateSerializer, ["provider", "allowedProviders"])


class AuthenticationLinkCreateSerializer(LinkCreateSerializer):
    widget = MagicLink.Widget.AUTHENTICATION
    provider = serializers.ChoiceField(choices=PROVIDER_CHOICES)


class AuthenticationLinkWithUserCreateSerializer(UserCreationMixin, AuthenticationLinkCreateSerializer):
    pass


@extend_schema_serializer(exclude_fields=["disconnectedEnabled"])
class FileUploadLinkSettingsSerializer(MagicLinkSettingsSerializer):
    """A file-upload link's settings, as documented: no `disconnectedEnabled` (only provider and authentication
    links disconnect). Sent all the same, the key is refused saying so (`LinkCreateSerializer.validate`)."""


class FileUploadLinkCreateSerializer(LinkCreateSerializer):
    widget = MagicLink.Widget.FILEUPLOAD
    settings = FileUploadLinkSettingsSerializer(required=False)


class FileUploadLinkWithUserCreateSerializer(UserCreationMixin, FileUploadLinkCreateSerializer):
    pass


class MagicLinkCreatedSerializer(serializers.Serializer):
    """`{id, coreUserId, link, expiresAt}`: the only time the link (its token) is shown."""

    id = serializers.UUIDField()
    coreUserId = serializers.UUIDField(source="core_user_id")
    link = serializers.CharField()
    expiresAt = TimestampField(source="expires_at")


class MagicLinkSerializer(serializers.ModelSerializer):
    """`{id, coreUserId, widget, expiresAt, createdAt, lastAccessedAt, usageCount, settings}` plus
    `allowedProviders` (provider links) or `provider` (authentication links). The link itself is not
    returned: only a hash of its token is kept."""

    class Meta:
        model = MagicLink
        fields = ["id"]

    def to_representation(self, link):
        body = {
            "id": str(link.id),
            "coreUserId": str(link.core_user_id),
            "widget": link.widget,
            "expiresAt": format_timestamp(link.expires_at),
            "createdAt": format_timestamp(link.created_at),
            "lastAccessedAt": format_timestamp(link.last_accessed_at),
            "usageCount": link.usage_count,
            "settings": link.settings,
        }
        if link.widget == MagicLink.Widget.PROVIDER:
            body["allowedProviders"] = link.allowed_providers
        elif link.widget == MagicLink.Widget.AUTHENTICATION:
            body["provider"] = link.provider
        return body


_TIMESTAMP = {"type": "string", "format": "date-time"}
document_extra_properties(
    MagicLinkSerializer,
    {
        "coreUserId": {"type": "string", "format": "uuid"},
        "widget": {"type": "string", "enum": MagicLink.Widget.values},
        "expiresAt": _TIMESTAMP,
        "createdAt": _TIMESTAMP,
        "lastAccessedAt": {**_TIMESTAMP, "type": ["string", "null"]},
        "usageCount": {"type": "integer"},
        "settings": {"type": "object", "additionalProperties": True, "description": "The link's settings."},
        # (Fields, mapped as declared ones are: they share ConnectableProviderEnum.)
        "allowedProviders": serializers.ListField(
            child=serializers.ChoiceField(choices=PROVIDER_CHOICES), help_text="Provider links only."
        ),
        "provider": serializers.ChoiceField(choices=PROVIDER_CHOICES, help_text="Authentication links only."),
    },
    required=("coreUserId", "widget", "expiresAt", "createdAt", "lastAccessedAt", "usageCount", "settings"),
)


class ProviderApplicationWriteSerializer(ApiSerializer):
    """`{provider, clientId, clientSecret, authorizeUrl, tokenUrl, scopes}`; on change the provider is
    fixed and a missing `clientSecret` keeps the stored one."""

    provider = serializers.ChoiceField(choices=PROVIDER_CHOICES)
    clientId = StrictCharField(max_length=512)
    clientSecret = StrictCharField(max_length=2000, trim_whitespace=False)
    authorizeUrl = HttpUrlField(max_length=2000)
    tokenUrl = HttpUrlField(max_length=2000)
    # Scope tokens (the admin's form takes them through `validate_scopes`, the same rules).
    scopes = serializers.ListField(
        child=StrictCharField(max_length=SCOPE_MAX_LENGTH, validators=[validate_scope_token]),
        required=False,
        default=list,
    )

    def __init__(self, *args, update: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if update:
            self.fields.pop("provider")
            self.fields["clientSecret"].required = False

    def values(self) -> dict:
        data = self.validated_data
        values = {
            "client_id": data["clientId"],
            "client_secret": data.get("clientSecret"),
            "authorize_url": data["authorizeUrl"],
            "token_url": data["tokenUrl"],
            "scopes": data["scopes"],
        }
        if "provider" in data:
            values["provider"] = data["provider"]
        return values


class ProviderApplicationUpdateSerializer(ProviderApplicationWriteSerializer):
    """The PUT body (OpenAPI documentation of `ProviderApplicationWriteSerializer(update=True)`): no `provider`,
    `clientSecret` optional."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, update=True, **kwargs)


class ProviderApplicationSerializer(serializers.ModelSerializer):
    """`{id, provider, clientId, authorizeUrl, tokenUrl, scopes, redirectUri, createdAt, updatedAt}`;
    `redirectUri` is what to register at the provider. The secret is never returned."""

    clientId = serializers.CharField(source="client_id")
    authorizeUrl = serializers.CharField(source="authorize_url")
    tokenUrl = serializers.CharField(source="token_url")
    redirectUri = serializers.SerializerMethodField()
    createdAt = TimestampField(source="created_at")
    updatedAt = TimestampField(source="updated_at")

    class Meta:
        model = ProviderApplication
        fields = ["id", "provider", "clientId", "authorizeUrl", "tokenUrl", "scopes", "redirectUri", "createdAt",
                  "updatedAt"]  # fmt: skip

    def get_redirectUri(self, application) -> str:  # noqa: N802
        return oauth_redirect_uri()


# `scopes` is a JSON column, always the list of scope tokens the write serializer took: its model field gives no shape.
document_extra_properties(
    ProviderApplicationSerializer, {"scopes": {"type": "array", "items": {"type": "string"}}}, required=("scopes",)
)


# (each write serializer's answer, defined after it: `RejectUnknownFieldsMixin.answered_by`)
LinkCreateSerializer.answered_by = MagicLinkSerializer
ProviderApplicationWriteSerializer.answered_by = ProviderApplicationSerializer
