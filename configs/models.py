"""Configurations: one per API owner, and optionally one per core user holding only the entries it
overrides; a missing entry is inherited from the owner's."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from platform_site.db.fields import UpdatedTimeField


class Configuration(models.Model):
    """Entries of an API owner (`core_user` empty) or of one core user (only the overridden ones)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="configurations")
    core_user = models.OneToOneField(
        "accounts.CoreUser", null=True, blank=True, on_delete=models.CASCADE, related_name="configuration"
    )
    entries = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner"], condition=Q(core_user__isnull=True), name="configuration_one_per_owner"
            )
        ]

    def __str__(self):
        return f"configuration of {self.core_user_id or self.owner}"
