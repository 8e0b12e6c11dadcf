"""What the accounts app tells the apps above it (they import this; it imports none of them)."""

from django.dispatch import Signal

# Sent inside the transaction of a core user's deletion, before the cascade (keyword argument `core_user`): an app
# whose rows of the user are costly to cascade (read whole because their deletion has receivers) deletes them first.
core_user_deleting = Signal()
