"""Operations: the processed files of one core user, of one operation type, that cover the same field within a
time window (5 days; 21 for harvested), grouped into one operation.

An operation is backed by a `conversion.File` of origin `automerged` (`merged_file`) that carries the merged
standardGeojson, summary, units and images of its files; it is rebuilt whenever a file joins. `fields` keep the
fields that automerged file covers with the coverage (percent of the field's active boundary covered by the
operation). A crop (`POST /operations/cropOperationByField`) is recorded with the field and the boundary it used.
"""

import uuid

from django.db import models
from django.utils import timezone

from assets.models import Provider
from conversion.models import File, OperationType
from fields.models import Boundary, Field
from platform_site.accounts.models import CoreUser


class Operation(models.Model):
    """One field operation (a harvest, a planting...) made of one or more files."""

    class Status(models.TextChoices):
        PROCESSING = "processing"
        PROCESSED = "processed"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="operations")
    operation_type = models.CharField(max_length=16, choices=OperationType.choices)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROCESSING)
    start_time = models.DateTimeField(null=True, blank=True, db_index=True)
    end_time = models.DateTimeField(null=True, blank=True, db_index=True)
    created_time = models.DateTimeField(default=timezone.now)
    updated_time = models.DateTimeField(default=timezone.now, db_index=True)
    files = models.ManyToManyField(File, related_name="operations", blank=True)
    merged_file = models.OneToOneField(
        File, on_delete=models.SET_NULL, null=True, blank=True, related_name="automerged_operation"
    )
    # Incremented whenever the set of files changes; `built_version` is the last one the merged file shows.
    version = models.PositiveIntegerField(default=1)
    built_version = models.PositiveIntegerField(default=0)
    # How often the sweep re-sent the build of the current version (a lost task, a dead worker).
    sweep_attempts = models.PositiveSmallIntegerField(default=0, db_default=0)

    class Meta:
        ordering = ["-start_time", "id"]
        indexes = [models.Index(fields=["core_user", "operation_type", "start_time"])]

    def __str__(self):
        return f"{self.operation_type} operation {self.pk}"


class OperationField(models.Model):
    """A field the operation covers, with the percent of the field's active boundary covered."""

    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="field_links")
    field = models.ForeignKey(Field, on_delete=models.CASCADE, related_name="operation_links")
    coverage = models.FloatField()

    class Meta:
        ordering = ["-coverage", "field_id"]
        constraints = [models.UniqueConstraint(fields=["operation", "field"], name="operationfield_unique")]

    def __str__(self):
        return f"{self.operation_id} covers field {self.field.public_id} ({self.coverage:.1f} %)"


class OperationCrop(models.Model):
    """A cropOperationByField request: the new file holds the operation's points inside `boundary`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="crops")
    source_file = models.ForeignKey(File, on_delete=models.CASCADE, related_name="+")
    file = models.OneToOneField(File, on_delete=models.CASCADE, related_name="operation_crop")
    # Null once the field is deleted: a crop not made by then fails saying so (it stayed processing, its record gone
    # with the field, until the sweeps gave up hours later); one made keeps its file.
    field = models.ForeignKey(Field, on_delete=models.SET_NULL, null=True, related_name="+")
    boundary = models.ForeignKey(Boundary, on_delete=models.SET_NULL, null=True, related_name="+")
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_time", "id"]

    def __str__(self):
        return f"crop of {self.operation_id} to field {self.field.public_id}"
