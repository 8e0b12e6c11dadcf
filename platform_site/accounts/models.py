"""API owners are Django users (so the admin works for operators); core users are theirs."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


class CoreUser(models.Model):
    """An end user (grower, agronomist) of an API owner. Every piece of data belongs to one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="core_users")
    name = models.CharField(max_length=255, blank=True, default="")
    email = models.CharField(max_length=254, blank=True, default="")
    phone = models.CharField(max_length=64, blank=True, default="")
    address = models.CharField(max_length=512, blank=True, default="")
    external_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "external_id"],
                condition=Q(external_id__isnull=False),
                name="coreuser_external_id_unique_per_owner",
            )
        ]
        indexes = [models.Index(fields=["owner", "email"])]

    def __str__(self):
        return self.name or self.email or str(self.id)
