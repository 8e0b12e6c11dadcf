"""Cropping an operation to a field: a new file holding only the operation's points inside the field's active
boundary (supplement "Operations"), asked for through the API and completed by a task."""

from django.db import transaction

from conversion import merging, outputs
from conversion.crop import table_crop
from conversion.models import File, FileOrigin, FileStatus
from fields.geometry import from_geos
from fields.models import Boundary, Field
from platform_site.accounts.services import core_user_lock
from platform_site.api.errors import NOT_FOUND, ConflictError, DomainError, NotFoundError
from platform_site.celery import send_on_commit

from ..models import Operation, OperationCrop
from .grouping import _tasks


def _field_error(message: str) -> DomainError:
    return DomainError(message, field_errors=[{"field": "fieldId", "message": message}])


@transaction.atomic
def operation_crop(*, operation: Operation, field_id: str | None = None) -> OperationCrop:
    """A new file (origin `merged`, source: the operation's automerged file) holding only the operation's points
    inside the field's active boundary, returned at once (processing) and completed by a task.

    Without `field_id` the field is the operation's field of largest coverage among those with an active
    boundary. 409 `operationProcessing` while the operation is being (re)built, 409 `operationFailed` when its last
    build failed (nothing to crop until a new file rebuilds it); 400 when it covers no field with an active
    boundary, or the field is not the core user's or has no active boundary."""
    # The core user before the operation and the field, in the lock order of the user's writes: a field's deletion
    # (core user, field, then the operations that covered it) would otherwise wait for the crop's operation while
    # the crop waited for its field. Gone meanwhile (its user deleted while this waited): 404, as if never there.
    locked = Operation.objects.select_for_update(of=("self",)).select_related("merged_file", "core_user")
    operation = locked.filter(pk=operation.pk).first() if core_user_lock(operation.core_user_id) else None
    if operation is None:
        raise NotFoundError(NOT_FOUND)
    source = operation.merged_file
    # FAILED is a last build that failed, or a build the sweep gave up on (its version never built): a joining file
    # makes it PROCESSING again.
    if operation.status == Operation.Status.FAILED:
        raise ConflictError("The operation failed to build: it has no points to crop.", error_key="operationFailed")
    if source is None or source.status != FileStatus.PROCESSED or operation.built_version < operation.version:
        raise ConflictError(
            "The operation is still being processed; crop it once it is processed.", error_key="operationProcessing"
        )
    if field_id is None:
        # The field of largest coverage that can be cropped to: one whose boundary is no longer active (deleted on
        # the provider, made inactive) was named in a 400 on `fieldId`, which the client had not sent.
        link = (
            operation.field_links.filter(field__boundary__status=Boundary.Status.ACTIVE)
            .select_related("field")
            .order_by("-coverage", "field__public_id")
            .first()
        )
        if link is None:
            raise _field_error("The operation covers no field with an active boundary: give a fieldId.")
        field_id = link.field.public_id
    # The field is locked (as its changes lock it) as it is found, its boundary read after: deleted meanwhile, it is
    # unknown (the crop's record failed its foreign keys at commit, a 500); its deletion waits for the crop.
    field = (
        Field.objects.select_for_update(no_key=True).filter(core_user=operation.core_user, public_id=field_id).first()
    )
    if field is None:
        raise _field_error(f"Unknown field {field_id} for this user.")
    if field.boundary is None or field.boundary.status != Boundary.Status.ACTIVE:
        raise _field_error(f"Field {field_id} has no active boundary.")
    file = File.objects.create(
        core_user=operation.core_user,
        file_name=f"Operation {operation.pk} in field {field.public_id}"[:255],
        file_format=source.file_format,
        provider=source.provider,
        origin=FileOrigin.MERGED,
        operation_type=operation.operation_type,
        status=FileStatus.PROCESSING,
    )
    file.sources.add(source)
    crop = OperationCrop.objects.create(
        operation=operation, source_file=source, file=file, field=field, boundary=field.boundary
    )
    crop_id = str(crop.pk)
    send_on_commit(_tasks().operation_crop_process, crop_id)
    return crop


def operation_crop_process(crop_id: str) -> File | None:
    """Task body: write the cropped points of the operation into the crop's file (idempotent). While the
    operation is being rebuilt (a file joined after the crop was asked for, or while its points were cropped) the
    crop waits: the build sends it again when it ends (`_waiting_resend`; `merging.derived_file_process`). A crop
    whose field was deleted before it was made fails, saying so."""
    crop = OperationCrop.objects.select_related("boundary", "field").filter(pk=crop_id).first()
    if crop is None:
        return None

    def build(_file: File):
        if crop.boundary is None:
            raise ValueError("the field was deleted before its crop was made")
        source = File.objects.get(pk=crop.source_file_id)
        if source.status != FileStatus.PROCESSED or not source.points_name:
            raise ValueError("the operation's merged file is not available")
        cropped = table_crop(outputs.load_points(source), from_geos(crop.boundary.geometry))
        if len(cropped) == 0:
            raise ValueError(f"no point of the operation lies inside field {crop.field.public_id}")
        return cropped

    return merging.derived_file_process(crop.file_id, build)
