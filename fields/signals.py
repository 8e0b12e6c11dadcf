"""Signals for the apps above fields (conversion, operations): sent inside the transaction that changes the links."""

from django.dispatch import Signal

# Files left fields that were deleted, or moved to the merged field that absorbed the one they covered
# (`fields.services.merge`): their `fields` changed without their being converted again. kwargs: file_ids (the
# files' ids as text), absorbed_into (the pk of the merged field that absorbed another and took its files, or None).
field_files_relinked = Signal()
