"""Signals for the apps above conversion (operations): sent inside the transaction that changes the file."""

from django.dispatch import Signal

# A file became processed (and was attached to its fields); kwargs: file.
file_processed = Signal()
# A batch ended, processed or failed: none of its files is converted any more; kwargs: batch.
batch_ended = Signal()
