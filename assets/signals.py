"""Signals for the apps above assets (conversion): sent inside the transaction that changes the machine."""

from django.dispatch import Signal

# A machine was deleted: the files pooled into it no longer name it. kwargs: machine_id (text), core_user.
machine_deleted = Signal()
