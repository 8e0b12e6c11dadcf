"""Batches and files: receiving an upload, opening it, converting each data set, finishing the batch, retry, sweep.

The state machine (spec "Batch status", supplement "Files and batches"):
- `batch_receive` stores the streamed zip as a RECEIVED batch and enqueues `batch_open` after commit;
  `batch_receive_once` for an upload sent with an `Idempotency-Key` (a retry answers the batch the key made).
- `batch_open` extracts the zip safely, detects data sets, and creates one `BatchDataset` and one processing
  `File` per data set (failed at once for the proprietary formats nobody can read); each readable data set
  gets a `dataset_convert` task.
- `dataset_convert` reads, cleans and stores the outputs of its data set (`conversion.outputs`), attaches the
  files to fields, pools machines, records catalogs and emits the file events; the last data set to end
  finishes the batch (`_batch_finish_if_done`): PROCESSED when any file was converted, else FAILED with the
  spec's statusDetails.
- `batch_retry` sends only the failed data sets (or a batch that failed before any was found) round again;
  converted files stay as they are. `conversion_sweep` re-sends or fails whatever stayed in flight too long.

One module per stage; import them from here.
- `batches`: receiving an upload, opening a batch into data sets and files, finishing a batch, reading its state.
- `datasets`: converting one data set.
- `files`: the files of a data set, and a file's end (processed or failed) with its event.
- `recovery`: retry and sweep.
"""

from .batches import (
    UPLOAD_KEY_LIFETIME,
    batch_of_key,
    batch_open,
    batch_progress,
    batch_receive,
    batch_receive_once,
    batch_replayed,
    batch_status,
    ensure_extracted,
)
from .datasets import dataset_convert
from .files import FAILED_EVENTS, FINISHED_EVENTS, file_complete, file_fail, internal_error
from .recovery import STUCK_MESSAGE, batch_retry, conversion_sweep, derived_file_sweep, stuck_limit

__all__ = [
    "FAILED_EVENTS",
    "FINISHED_EVENTS",
    "STUCK_MESSAGE",
    "UPLOAD_KEY_LIFETIME",
    "batch_of_key",
    "batch_open",
    "batch_progress",
    "batch_receive",
    "batch_receive_once",
    "batch_replayed",
    "batch_retry",
    "batch_status",
    "conversion_sweep",
    "dataset_convert",
    "derived_file_sweep",
    "stuck_limit",
    "ensure_extracted",
    "file_complete",
    "file_fail",
    "internal_error",
]
