"""Catalogs (beta): the products and varieties a core user's machine files mention, each with the
files (`core_file_id`, a plain UUID: files live in `conversion`, a layer above) it was seen in."""

import uuid

from django.db import models
from django.utils import timezone

from platform_site.accounts.models import CoreUser

from .normalize import CROP_MAX


class Product(models.Model):
    """A product (seed treatment, herbicide, fertiliser...) of a core user, one per normalised name;
    `name` keeps the spelling first seen."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="products")
    name = models.CharField(max_length=255)
    normalized_name = models.CharField(max_length=255, db_index=True)
    created_time = models.DateTimeField(default=timezone.now)
    updated_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["core_user", "normalized_name"], name="product_unique_per_core_user"),
        ]

    def __str__(self):
        return self.name


class ProductFile(models.Model):
    """A converted file that mentions a product."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="files")
    core_file_id = models.UUIDField(db_index=True)
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "core_file_id"], name="productfile_unique")]

    def __str__(self):
        return f"{self.product_id} in {self.core_file_id}"


class Variety(models.Model):
    """A seed variety (hybrid) of a core user, one per normalised name; its crops are those of the
    files it was seen in."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="varieties")
    name = models.CharField(max_length=255)
    normalized_name = models.CharField(max_length=255, db_index=True)
    created_time = models.DateTimeField(default=timezone.now)
    updated_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["core_user", "normalized_name"], name="variety_unique_per_core_user"),
        ]
        verbose_name_plural = "varieties"

    def __str__(self):
        return self.name


class VarietyFile(models.Model):
    """A converted file that mentions a variety, with the crop it was planted or harvested as
    (lower-case, empty when the file does not say)."""

    variety = models.ForeignKey(Variety, on_delete=models.CASCADE, related_name="files")
    core_file_id = models.UUIDField(db_index=True)
    crop = models.CharField(max_length=CROP_MAX, blank=True, default="", db_index=True)
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["variety", "core_file_id", "crop"], name="varietyfile_unique"),
        ]

    def __str__(self):
        return f"{self.variety_id} in {self.core_file_id}"
