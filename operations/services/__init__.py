"""The operations service's business rules, one module per concern; import them from here.

- `grouping`: files grouped into operations, the automerged file built, the fields covered, the sweep.
- `crop`: an operation cropped to a field.
"""

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
    "on_file_processed",
    "operation_batch_builds",
    "operation_build",
    "operation_crop",
    "operation_crop_process",
    "operation_file_group",
    "operation_window",
    "operations_sweep",
]
