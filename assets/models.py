"""Assets (beta): machines, the files a machine was seen in, implements and operators of a core user.

A machine file stores the converted file's id (`core_file_id`) as a plain UUID: files live in
`conversion`, a layer above, and foreign keys only point downwards (ARCHITECTURE.md).
"""

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from platform_site.accounts.models import CoreUser
from platform_site.db.fields import UpdatedTimeField


class OriginType(models.TextChoices):
    """Where an asset comes from: made through the API, pooled from machine files or from a provider."""

    USER_CREATED = "USER_CREATED"
    FILE_POOLED = "FILE_POOLED"
    PROVIDER_POOLED = "PROVIDER_POOLED"


class Provider(models.TextChoices):
    """Data sources (spec naming): third-party platforms, the service itself, unknown uploads."""

    PROVIDER_A = "ProviderA"
    PROVIDER_B = "ProviderB"
    PROVIDER_C = "ProviderC"
    PROVIDER_D = "ProviderD"
    PROVIDER_E = "ProviderE"
    PROVIDER_F = "ProviderF"
    PROVIDER_G = "ProviderG"
    SERVICE_OWN = "ServiceOwn"
    OTHER = "Other"


class Machine(models.Model):
    """A tractor, combine or sprayer of a core user. Only USER_CREATED machines may change through the
    API; `serial_key` / `vin_key` / `name_key` are the normalised identity that pooling matches on."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="machines")
    name = models.CharField(max_length=255, blank=True, default="")
    provider = models.CharField(max_length=32, choices=Provider.choices, null=True, blank=True)
    provider_machine_id = models.CharField(max_length=255, null=True, blank=True)
    provider_organization_id = models.CharField(max_length=255, null=True, blank=True)
    origin_type = models.CharField(max_length=20, choices=OriginType.choices)
    serial_number = models.CharField(max_length=255, null=True, blank=True)
    vin = models.CharField(max_length=64, null=True, blank=True)
    model = models.CharField(max_length=255, null=True, blank=True)
    make = models.CharField(max_length=255, null=True, blank=True)
    category = models.CharField(max_length=255, null=True, blank=True)
    model_year = models.IntegerField(null=True, blank=True)
    serial_key = models.CharField(max_length=255, blank=True, default="", editable=False)
    vin_key = models.CharField(max_length=64, blank=True, default="", editable=False)
    name_key = models.CharField(max_length=800, blank=True, default="", editable=False)
    created_time = models.DateTimeField(default=timezone.now, db_index=True)
    updated_time = UpdatedTimeField(created="created_time")

    class Meta:
        constraints = [
            # Pooling never makes two FILE_POOLED machines with the same serial number, VIN or
            # (without either) the same name/make/model: the database says so, not only the code.
            models.UniqueConstraint(
                fields=["core_user", "serial_key"],
                condition=Q(origin_type="FILE_POOLED") & ~Q(serial_key=""),
                name="machine_pooled_serial_unique",
            ),
            models.UniqueConstraint(
                fields=["core_user", "vin_key"],
                condition=Q(origin_type="FILE_POOLED") & ~Q(vin_key=""),
                name="machine_pooled_vin_unique",
            ),
            models.UniqueConstraint(
                fields=["core_user", "name_key"],
                condition=Q(origin_type="FILE_POOLED", serial_key="", vin_key="") & ~Q(name_key=""),
                name="machine_pooled_name_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["core_user", "serial_key"]),
            models.Index(fields=["core_user", "vin_key"]),
        ]

    def __str__(self):
        return self.name or self.serial_number or self.vin or str(self.id)


class MachineFile(models.Model):
    """A converted file (`core_file_id`) in which a machine worked: time span, distance and fuel."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="files")
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="machine_files")
    core_file_id = models.UUIDField(db_index=True)
    origin_type = models.CharField(max_length=20, choices=OriginType.choices, default=OriginType.FILE_POOLED)
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)
    distance_value = models.FloatField(null=True, blank=True)
    distance_unit = models.CharField(max_length=16, blank=True, default="")
    fuel_consumption_value = models.FloatField(null=True, blank=True)
    fuel_consumption_unit = models.CharField(max_length=16, blank=True, default="")
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["machine", "core_file_id"], name="machinefile_machine_file_unique"),
        ]

    def __str__(self):
        return f"{self.machine_id} in {self.core_file_id}"


class Implement(models.Model):
    """A planter, sprayer boom or header attached to a machine; read-only through the API."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="implements")
    name = models.CharField(max_length=255, blank=True, default="")
    provider = models.CharField(max_length=32, choices=Provider.choices, null=True, blank=True)
    provider_implement_id = models.CharField(max_length=255, null=True, blank=True)
    provider_organization_id = models.CharField(max_length=255, null=True, blank=True)
    origin_type = models.CharField(max_length=20, choices=OriginType.choices)
    serial_number = models.CharField(max_length=255, null=True, blank=True)
    model = models.CharField(max_length=255, null=True, blank=True)
    make = models.CharField(max_length=255, null=True, blank=True)
    category = models.CharField(max_length=255, null=True, blank=True)
    serial_key = models.CharField(max_length=255, blank=True, default="", editable=False)
    name_key = models.CharField(max_length=800, blank=True, default="", editable=False)
    created_time = models.DateTimeField(default=timezone.now, db_index=True)
    updated_time = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["core_user", "serial_key"],
                condition=Q(origin_type="FILE_POOLED") & ~Q(serial_key=""),
                name="implement_pooled_serial_unique",
            ),
            models.UniqueConstraint(
                fields=["core_user", "name_key"],
                condition=Q(origin_type="FILE_POOLED", serial_key="") & ~Q(name_key=""),
                name="implement_pooled_name_unique",
            ),
        ]

    def __str__(self):
        return self.name or self.serial_number or str(self.id)


class ImplementFile(models.Model):
    """A converted file in which an implement was seen."""

    implement = models.ForeignKey(Implement, on_delete=models.CASCADE, related_name="files")
    core_file_id = models.UUIDField(db_index=True)
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["implement", "core_file_id"], name="implementfile_unique"),
        ]

    def __str__(self):
        return f"{self.implement_id} in {self.core_file_id}"


class Operator(models.Model):
    """A person who drove a machine; read-only through the API."""

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE"
        INACTIVE = "INACTIVE"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    core_user = models.ForeignKey(CoreUser, on_delete=models.CASCADE, related_name="operators")
    name = models.CharField(max_length=255, blank=True, default="")
    provider = models.CharField(max_length=32, choices=Provider.choices, null=True, blank=True)
    provider_operator_id = models.CharField(max_length=255, null=True, blank=True)
    provider_organization_id = models.CharField(max_length=255, null=True, blank=True)
    origin_type = models.CharField(max_length=20, choices=OriginType.choices)
    license = models.CharField(max_length=255, null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    name_key = models.CharField(max_length=255, blank=True, default="", editable=False)
    created_time = models.DateTimeField(default=timezone.now)
    updated_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["core_user", "name_key"],
                condition=Q(origin_type="FILE_POOLED") & ~Q(name_key=""),
                name="operator_pooled_name_unique",
            ),
        ]

    def __str__(self):
        return self.name or str(self.id)


class OperatorFile(models.Model):
    """A converted file in which an operator was seen."""

    operator = models.ForeignKey(Operator, on_delete=models.CASCADE, related_name="files")
    core_file_id = models.UUIDField(db_index=True)
    created_time = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["operator", "core_file_id"], name="operatorfile_unique"),
        ]

    def __str__(self):
        return f"{self.operator_id} in {self.core_file_id}"
