"""Batches (uploaded zips), the data sets found in them, and the files they became.

A batch holds the uploaded zip; the batch task finds its data sets (`BatchDataset`, one per ISOXML task data
folder, shapefile, GeoJSON or recognised proprietary folder) and creates one `File` per data set at once, so
every file id is known while it is still processing. A file task then converts its data set; a data set that
holds several operations (an ISOXML task data with several tasks) adds files of its own.

Files keep the ids of the fields they cover in `fields.FieldFile` (fields is a lower layer); the
machines they were pooled into are stored here as ids (`machine_ids`) in the order the file named them.
Everything a file produced lives in storage under `files/<id>/`; the row keeps the summary, units and the
status of each step.
"""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from assets.models import Provider
from platform_site.accounts.models import CoreUser
from platform_site.db.fields import UpdatedTimeField


class BatchStatus(models.TextChoices):
    RECEIVED = "RECEIVED"
    PROCESSED = "PROCESSED"
    FAILED = "FAILED"


# statusDetails texts, exactly as the spec writes them.
NO_VALID_FILES = "No valid files found"
INTERNAL_ERROR = "Leaf internal error. Please contact Support"
# The start of a message of what failed on the server's disk (full, read-only, I/O error): not the data's fault.
DISK_FAILED = f"{INTERNAL_ERROR} (the server's disk failed: "
UNABLE_TO_READ = "Files found but unable to read. Please check file format before re-trying or contact Support"


class Batch(models.Model):
    """One uploaded zip of a core user."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="batches")
    provider = models.CharField(max_length=32, choices=Provider.choices)
    file_name = models.CharField(max_length=255)
    size = models.BigIntegerField()
    upload = models.FileField(upload_to="batches/", max_length=255)
    status = models.CharField(max_length=16, choices=BatchStatus.choices, default=BatchStatus.RECEIVED)
    status_details = models.CharField(max_length=255, null=True, blank=True)
    # Why the batch failed, in plain words (zip bomb, truncated archive...); statusDetails keeps the spec's text.
    failure_reason = models.TextField(null=True, blank=True)
    upload_timestamp = models.DateTimeField(default=timezone.now, db_index=True)
    # When the batch task last started opening the zip, or the sweep last sent it again; the sweep judges from it.
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Sends of the opening task (the upload's, a retry's, each re-send by the sweep), whether or not it ran.
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-upload_timestamp", "id"]
        indexes = [models.Index(fields=["status", "upload_timestamp"])]

    def __str__(self):
        return f"{self.file_name} ({self.status})"


class UploadKey(models.Model):
    """The `Idempotency-Key` an upload was sent with, per API owner: a retry of the upload with that key answers its
    batch instead of storing the zip again (`services.batch_receive_once`). Honoured for `UPLOAD_KEY_LIFETIME`
    after the upload; the row goes with its batch, and an expired one is replaced when its key is used again."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="upload_key")
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="uploadkey_unique_per_owner")]

    def __str__(self):
        return self.key


class DatasetStatus(models.TextChoices):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    DONE = "DONE"
    FAILED = "FAILED"


class BatchDataset(models.Model):
    """A data set found in a batch: its format and where it sits inside the zip."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="datasets")
    position = models.PositiveIntegerField()
    format = models.CharField(max_length=64)  # ISOXML, SHAPEFILE, GEOJSON or a proprietary format's name
    # Relative to the extracted zip (posix); text, as a zip's folders may nest deeper than any fixed length.
    path = models.TextField()  # main file
    root = models.TextField()  # folder of the data set
    name = models.CharField(max_length=255)
    supported = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=DatasetStatus.choices, default=DatasetStatus.PENDING)
    message = models.TextField(null=True, blank=True)
    # Runs that began and did not end (a worker that died, a sweep's re-send); not a task's database retries.
    attempts = models.PositiveIntegerField(default=0)
    # The database retries (`platform_site.celery.DatabaseRetryTask`) of the task whose run last began it: a run of a
    # later retry of that task continues the same attempt; a run of the same one again is its redelivery (the worker
    # died), a new attempt.
    task_retries = models.PositiveIntegerField(default=0, db_default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    # Last sign of life of the task converting it (its start, then each file it finishes): the sweep judges from it.
    progress_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="batchdataset_position_unique")]

    def __str__(self):
        return f"{self.format} {self.path}"


class FileStatus(models.TextChoices):
    PROCESSING = "processing"
    PROCESSED = "processed"
    FAILED = "failed"


class FileOrigin(models.TextChoices):
    PROVIDER = "provider"
    AUTOMERGED = "automerged"
    MERGED = "merged"
    UPLOADED = "uploaded"


class OperationType(models.TextChoices):
    HARVESTED = "harvested"
    PLANTED = "planted"
    APPLIED = "applied"
    TILLAGE = "tillage"
    OTHER = "other"


# Steps of a file's conversion, as `GET /files/{id}/status` names them.
FILE_STEPS = ("rawGeojson", "standardGeojson", "summary", "units", "propertiesPNGs")


class File(models.Model):
    """An operation file: converted from an upload, merged from files, or cropped from an operation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="files")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, null=True, blank=True, related_name="files")
    dataset = models.ForeignKey(BatchDataset, on_delete=models.CASCADE, null=True, blank=True, related_name="files")
    # Position of the file among the operations its data set holds (0 for the first).
    part = models.PositiveIntegerField(default=0)
    file_name = models.CharField(max_length=255)
    file_format = models.CharField(max_length=64)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    provider_file_id = models.CharField(max_length=255, null=True, blank=True)
    provider_organization_id = models.CharField(max_length=255, null=True, blank=True)
    origin = models.CharField(max_length=16, choices=FileOrigin.choices, default=FileOrigin.UPLOADED)
    operation_type = models.CharField(max_length=16, choices=OperationType.choices, null=True, blank=True)
    status = models.CharField(max_length=16, choices=FileStatus.choices, default=FileStatus.PROCESSING)
    status_message = models.TextField(null=True, blank=True)
    created_time = models.DateTimeField(default=timezone.now, db_index=True)
    updated_time = UpdatedTimeField(created="created_time")
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)
    size_in_bytes = models.BigIntegerField(null=True, blank=True)
    # Covered area in square metres (the summary's totalArea), for the `minArea` filter.
    area = models.FloatField(null=True, blank=True)
    point_count = models.BigIntegerField(null=True, blank=True)
    # What the reader and the standardisation noted about the points (data left unread, values kept unconverted...),
    # in their order, cleaned and capped (`outputs.file_warnings`); replaced by each completion, [] when it fails.
    warnings = models.JSONField(default=list, db_default=[], blank=True)
    crops = models.JSONField(default=list, blank=True)
    # "|corn|soybeans|": the crops lower-case, for the `crop` filter on every database.
    crop_keys = models.CharField(max_length=1024, blank=True, default="", editable=False)
    varieties = models.JSONField(default=list, blank=True)
    products = models.JSONField(default=list, blank=True)
    machine_ids = models.JSONField(default=list, blank=True)
    sources = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="derived")
    summary = models.JSONField(null=True, blank=True)
    units = models.JSONField(null=True, blank=True)
    # The same map in the units the source used where it used imperial ones (`?unitSystem=imperial`); null for files
    # processed before it was kept (made from the stored points on first request).
    imperial_units = models.JSONField(null=True, blank=True)
    # {step: {"status": processed|failed|skipped|processing, "message": str|None}} for FILE_STEPS.
    steps = models.JSONField(default=dict, blank=True)
    # Storage names of what the file produced (relative to the storage root); empty until produced.
    original_name = models.CharField(max_length=512, blank=True, default="")
    points_name = models.CharField(max_length=512, blank=True, default="")
    raw_points_name = models.CharField(max_length=512, blank=True, default="")
    standard_geojson_name = models.CharField(max_length=512, blank=True, default="")
    raw_geojson_name = models.CharField(max_length=512, blank=True, default="")
    # [{"property", "ramp", "name" (storage), "extent", "legend", "width", "height", ...}] of the PNGs.
    images = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Re-sends of a merged or cropped file's task by the sweeps (its first send is not counted).
    sweep_attempts = models.PositiveSmallIntegerField(default=0, db_default=0)

    class Meta:
        ordering = ["-created_time", "id"]
        indexes = [
            models.Index(fields=["core_user", "status"]),
            models.Index(fields=["status", "started_at"]),
            models.Index(fields=["status", "updated_time"]),  # the sweeps: processing too long, processed not grouped
            models.Index(fields=["core_user", "updated_time"]),  # `updatedTime`: what changed since
        ]

    def __str__(self):
        return f"{self.file_name} ({self.status})"
