"""API owners are Django users (so the admin works for operators); core users are theirs."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from platform_site.db.fields import UpdatedTimeField

from .crypto import EncryptedTextField

EXTERNAL_ID_IN_USE = "Already used by another core user of this API owner."


class CoreUser(models.Model):
    """An end user (grower, agronomist) of an API owner. Every piece of data belongs to one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="core_users")
    name = models.CharField(max_length=255, blank=True, default="")
    # 255: a user made through a magic link without an e-mail gets its externalId (up to 255) as e-mail (spec).
    email = models.CharField(max_length=255, blank=True, default="")
    phone = models.CharField(max_length=64, blank=True, default="")
    address = models.CharField(max_length=512, blank=True, default="")
    external_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "external_id"],
                condition=Q(external_id__isnull=False),
                name="coreuser_external_id_unique_per_owner",
                violation_error_message=EXTERNAL_ID_IN_USE,
            )
        ]
        indexes = [models.Index(fields=["owner", "email"])]

    def __str__(self):
        return self.name or self.email or str(self.id)


class ConnectableProvider(models.TextChoices):
    """Providers an end user can connect to through OAuth 2.0 (spec "Magic links": ProviderA..ProviderF).
    The same names as `assets.models.Provider`, which this lower layer cannot import."""

    PROVIDER_A = "ProviderA"
    PROVIDER_B = "ProviderB"
    PROVIDER_C = "ProviderC"
    PROVIDER_D = "ProviderD"
    PROVIDER_E = "ProviderE"
    PROVIDER_F = "ProviderF"


class ProviderApplication(models.Model):
    """The OAuth 2.0 application an API owner registered at a provider. Its core users connect through
    it (magic links), and their tokens are exchanged and refreshed with it. The secret is encrypted."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_applications")
    provider = models.CharField(max_length=32, choices=ConnectableProvider.choices)
    client_id = models.CharField(max_length=512)
    client_secret = EncryptedTextField()
    authorize_url = models.URLField(max_length=2000)
    token_url = models.URLField(max_length=2000)
    scopes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "provider"], name="providerapplication_once_per_owner")]

    def __str__(self):
        return f"{self.provider} application of {self.owner}"


class ProviderCredential(models.Model):
    """A core user's access to a provider: the OAuth tokens (encrypted) and whether they still work.
    One per core user and provider; disconnecting deletes it."""

    class Status(models.TextChoices):
        AUTHENTICATED = "AUTHENTICATED"
        UNAUTHENTICATED = "UNAUTHENTICATED"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="provider_credentials")
    provider = models.CharField(max_length=32, choices=ConnectableProvider.choices)
    access_token = EncryptedTextField()
    refresh_token = EncryptedTextField(blank=True, default="")
    token_type = models.CharField(max_length=64, blank=True, default="")
    scope = models.CharField(max_length=2000, blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.AUTHENTICATED)
    status_message = models.TextField(blank=True, default="")
    authenticated_at = models.DateTimeField(null=True, blank=True)
    # The token server that issued the tokens (`oauth.token_server` of the application's token URL then); a refresh
    # goes there or nowhere. Empty: connected before it was recorded (taken as the application's at migration).
    token_server = models.CharField(max_length=300, blank=True, default="", db_default="")
    # A refresh under way holds the tokens until then (`services.provider_credential_refresh_claim`).
    refresh_claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["core_user", "provider"], name="providercredential_once_per_user")
        ]

    def __str__(self):
        return f"{self.provider} credentials of {self.core_user_id} ({self.status})"


class LoginFailure(models.Model):
    """Failed logins counted in one window, per `key` (a digest of a user name and a client address, or of an
    address alone: `platform_site.accounts.throttle`). In the database, so every process and server counts them."""

    key = models.CharField(max_length=64, unique=True)
    window_start = models.DateTimeField(db_index=True)
    count = models.PositiveIntegerField(default=0)

    def __str__(self):
        return f"{self.count} failed logins since {self.window_start:%Y-%m-%d %H:%M:%S}"
