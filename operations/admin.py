"""Operations are built by the services from the files that cover a field; the admin shows them."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from platform_site.accounts.admin import LatestRowsInline, ServiceOwnedAdmin, ServiceOwnedInline

from .models import Operation, OperationCrop, OperationField


class OperationFieldInline(ServiceOwnedInline, admin.TabularInline):
    model = OperationField


@admin.register(Operation)
class OperationAdmin(ServiceOwnedAdmin):
    list_display = ["id", "core_user", "operation_type", "provider", "status", "start_time", "end_time"]
    list_filter = ["operation_type", "status", "provider"]
    inlines = [OperationFieldInline]
    exclude = ["files"]
    readonly_fields = ["latest_files"]

    # Of an operation's files, the page names the latest, as many as other pages show of their files: all of them
    # (as the many-to-many field lists them) took 0.6 s and 144 KB at 5,000.
    FILES_SHOWN = LatestRowsInline.shown

    @admin.display(description="files")
    def latest_files(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        files = obj.files.order_by("-created_time", "-pk")
        count = files.count()
        latest = format_html_join(", ", "{} ({})", files.values_list("file_name", "id")[: self.FILES_SHOWN])
        if count <= self.FILES_SHOWN:
            return latest or "-"
        return format_html("{} of them; the latest {}: {}", count, self.FILES_SHOWN, latest)


@admin.register(OperationCrop)
class OperationCropAdmin(ServiceOwnedAdmin):
    list_display = ["id", "operation", "field", "file", "created_time"]
