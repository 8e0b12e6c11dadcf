from django.contrib import admin

from platform_site.accounts.admin import ServiceOwnedAdmin

from .models import OutboxTask


@admin.register(OutboxTask)
class OutboxTaskAdmin(ServiceOwnedAdmin):
    """Task sends waiting for the broker: shown, so an operator sees what an outage left; `outbox_send` sends them."""

    list_display = ("task_name", "args", "created_at", "lease_until")
    ordering = ("pk",)
