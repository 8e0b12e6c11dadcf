"""Operations are built by the services from the files that cover a field; the admin shows them."""

from django.contrib import admin

from platform_site.accounts.admin import ServiceOwnedAdmin, ServiceOwnedInline

from .models import Operation, OperationCrop, OperationField


class OperationFieldInline(ServiceOwnedInline, admin.TabularInline):
    model = OperationField


@admin.register(Operation)
class OperationAdmin(ServiceOwnedAdmin):
    list_display = ["id", "core_user", "operation_type", "provider", "status", "start_time", "end_time"]
    list_filter = ["operation_type", "status", "provider"]
    inlines = [OperationFieldInline]


@admin.register(OperationCrop)
class OperationCropAdmin(ServiceOwnedAdmin):
    list_display = ["id", "operation", "field", "file", "created_time"]
