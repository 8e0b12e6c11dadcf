"""Signals for the apps above fields (conversion, operations): sent inside the transaction that changes the links."""

from django.dispatch import Signal

# Files left fields that were deleted, or were taken by a merged field (the files of a field that joined it, of a
# merged field it absorbed: `fields.services.merge`): their `fields` changed without their being converted again.
# kwargs: file_ids (the files' ids as text), taken_by (the pk of the merged field that took them, or None).
field_files_relinked = Signal()
