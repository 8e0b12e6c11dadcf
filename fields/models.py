"""Fields with an immutable history of boundaries, farms and growers of a core user."""

import uuid

from django.contrib.gis.db import models as gis_models
from django.db import models

from platform_site.accounts.models import CoreUser
from platform_site.db.fields import UpdatedTimeField


class Grower(models.Model):
    """A grower (for ProviderA growers, the provider's client). Long id, as the spec says."""

    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="growers")
    name = models.CharField(max_length=255, null=True, blank=True)
    provider_name = models.CharField(max_length=64, null=True, blank=True)
    provider_organization_id = models.CharField(max_length=255, null=True, blank=True)
    provider_company_id = models.CharField(max_length=255, null=True, blank=True)
    provider_user_id = models.CharField(max_length=255, null=True, blank=True)
    provider_grower_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    def __str__(self):
        return self.name or f"grower {self.pk}"


class Farm(models.Model):
    """A farm groups fields; it may belong to a grower of the same core user."""

    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="farms")
    name = models.CharField(max_length=255, null=True, blank=True)
    grower = models.ForeignKey(Grower, on_delete=models.SET_NULL, null=True, blank=True, related_name="farms")
    provider_id = models.IntegerField(null=True, blank=True)
    provider_name = models.CharField(max_length=64, null=True, blank=True)
    provider_farm_name = models.CharField(max_length=255, null=True, blank=True)
    provider_farm_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    def __str__(self):
        return self.name or f"farm {self.pk}"


class Field(models.Model):
    """A field of a core user. Its shape lives in `Boundary` rows (immutable history); `boundary` points
    at the current one. A MERGED field is the union of its `sources` (fields whose `merged_field` is it).

    Two ids: `public_id` is the field's `id` in the API (a client's, or generated), unique per core user, so two API
    owners (or two core users) may each have a field "1" and neither learns of the other's; `id`, the primary key
    the other tables point at, is ours and never shown (a new field's is a UUID; a field made before the ids were
    split keeps its public id as its key)."""

    class Type(models.TextChoices):
        ORIGINAL = "ORIGINAL"
        MERGED = "MERGED"

    id = models.CharField(primary_key=True, max_length=255)
    public_id = models.CharField(max_length=255)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="fields")
    name = models.CharField(max_length=255, blank=True, default="")
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.ORIGINAL)
    farm = models.ForeignKey(Farm, on_delete=models.SET_NULL, null=True, blank=True, related_name="fields")
    boundary = models.ForeignKey(
        "Boundary", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", db_index=True
    )
    merged_field = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="sources")
    provider_name = models.CharField(max_length=64, null=True, blank=True)
    provider_id = models.IntegerField(null=True, blank=True)
    provider_field_id = models.CharField(max_length=255, null=True, blank=True)
    provider_field_name = models.CharField(max_length=255, null=True, blank=True)
    provider_boundary_id = models.CharField(max_length=255, null=True, blank=True)
    organization_id = models.CharField(max_length=255, null=True, blank=True)
    legacy = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    class Meta:
        indexes = [models.Index(fields=["core_user", "type"]), models.Index(fields=["provider_name"])]
        constraints = [
            # public_id first: it also serves the owner-wide filters by field id (`GET /operations?fieldId=`).
            models.UniqueConstraint(fields=["public_id", "core_user"], name="field_public_id_unique_per_core_user"),
        ]

    def __str__(self):
        return self.name or self.public_id

    @property
    def is_provider_field(self) -> bool:
        return bool(self.provider_name)


class Boundary(models.Model):
    """One immutable shape of a field: geometry (WGS84, spatially indexed) and its geodesic area, computed
    once. Changes create a new boundary; the previous one becomes INACTIVE (or OUTDATED/DELETED_ON_PROVIDER)."""

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE"
        INACTIVE = "INACTIVE"
        OUTDATED_ON_PROVIDER = "OUTDATED_ON_PROVIDER"
        DELETED_ON_PROVIDER = "DELETED_ON_PROVIDER"

    class ProviderStatus(models.TextChoices):
        ACTIVE = "ACTIVE"
        INACTIVE = "INACTIVE"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    field = models.ForeignKey(Field, on_delete=models.CASCADE, related_name="boundaries")
    geometry = gis_models.MultiPolygonField(srid=4326, spatial_index=True)
    area_ha = models.FloatField()
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.ACTIVE)
    provider_status = models.CharField(max_length=16, choices=ProviderStatus.choices, null=True, blank=True)
    provider_boundary_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["field", "status"])]
        constraints = [
            models.UniqueConstraint(
                fields=["field"], condition=models.Q(status="ACTIVE"), name="boundary_one_active_per_field"
            )
        ]

    def __str__(self):
        return f"boundary {self.id} of field {self.field.public_id} ({self.status})"


class FieldFile(models.Model):
    """A machine/operation file (owned by the conversion app; we keep only its id) attached to a field."""

    field = models.ForeignKey(Field, on_delete=models.CASCADE, related_name="file_links")
    file_id = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["field", "file_id"], name="fieldfile_unique")]
        indexes = [models.Index(fields=["file_id"])]

    def __str__(self):
        return f"{self.file_id} on field {self.field.public_id}"
