"""Magic links: time-limited, revocable links that let an end user connect providers or upload machine
files without a token of ours. The token itself is never stored, only its SHA-256 (a leaked database
does not open links). Deleting a link keeps the row (`deleted_at`) so its page can say "revoked" (410)
rather than "unknown" (404).

Batches uploaded through a link are kept as plain ids (`batch_id`): conversion owns them."""

import uuid

from django.db import models
from django.utils import timezone

from platform_site.accounts.models import CoreUser


class MagicLink(models.Model):
    """One link of a core user: several providers (PROVIDER), one provider (AUTHENTICATION), or the upload
    of machine files (FILEUPLOAD), branded by `settings`."""

    class Widget(models.TextChoices):
        PROVIDER = "PROVIDER"
        AUTHENTICATION = "AUTHENTICATION"
        FILEUPLOAD = "FILEUPLOAD"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="magic_links")
    widget = models.CharField(max_length=16, choices=Widget.choices)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    allowed_providers = models.JSONField(default=list, blank=True)
    provider = models.CharField(max_length=32, null=True, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    expires_at = models.DateTimeField()
    # (Not `auto_now_add`, which takes its own instant on save: `expires_at` is counted from this one.)
    created_at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    usage_count = models.PositiveIntegerField(default=0)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["widget", "created_at"])]

    def __str__(self):
        return f"{self.widget} link {self.id}"

    @property
    def expired(self) -> bool:
        """Past its `expires_at` (a revoked link is `deleted_at`, apart)."""
        return self.expires_at <= timezone.now()

    @property
    def providers(self) -> list[str]:
        """The providers the page offers, in the order given."""
        if self.widget == self.Widget.AUTHENTICATION:
            return [self.provider] if self.provider else []
        return list(self.allowed_providers or [])


class LinkTombstone(models.Model):
    """What is left of a link deleted with its core user: its token's hash, so that its page says 410 "no longer
    valid", as a deleted link's does (supplement: deleted links show a clear page with 410), rather than 404 "does
    not exist", until `kept_until` (`services.TOMBSTONE_KEPT` past the later of the link's expiry and the deletion)."""

    token_hash = models.CharField(max_length=64, primary_key=True)
    kept_until = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"deleted link {self.token_hash[:8]}"


class LinkAuthorization(models.Model):
    """One OAuth 2.0 authorization request started from a link: its `state` (stored hashed, single use,
    short-lived), the PKCE verifier, and the browser that started it (hash of a cookie nonce), so that a
    callback is only accepted for the link, provider and browser that asked."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    link = models.ForeignKey(MagicLink, on_delete=models.CASCADE, related_name="authorizations")
    provider = models.CharField(max_length=32)
    state_hash = models.CharField(max_length=64, unique=True)
    browser_hash = models.CharField(max_length=64)
    code_verifier = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.provider} authorization of link {self.link_id}"


class LinkUpload(models.Model):
    """A batch uploaded through a link: the link's page may show the status of these batches only."""

    link = models.ForeignKey(MagicLink, on_delete=models.CASCADE, related_name="uploads")
    batch_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"batch {self.batch_id} via link {self.link_id}"
