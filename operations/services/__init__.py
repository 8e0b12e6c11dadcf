"""The operations service's business rules, one module per concern; import them from here.

- `grouping`: files grouped into operations, the automerged file built, the fields covered, the sweep.
- `crop`: an operation cropped to a field.
- `coverage`: the fields an operation covers, recorded at its build and kept in step with field deletions and merges.
"""

from .coverage import on_field_files_relinked
from .crop import operation_crop, operation_crop_process
from .grouping import (
    on_batch_ended,
    on_file_processed,
    operation_batch_builds,
    operation_build,
    operation_file_group,
    operation_window,
    operations_sweep,
)

__all__ = [
    "on_batch_ended",
    "on_field_files_relinked",
    "on_file_processed",
    "operation_batch_builds",
    "operation_build",
    "operation_crop",
    "operation_crop_process",
    "operation_file_group",
    "operation_window",
    "operations_sweep",
]
