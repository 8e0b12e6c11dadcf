from django.contrib import admin

from .models import Operation, OperationCrop, OperationField


class OperationFieldInline(admin.TabularInline):
    model = OperationField
    extra = 0
    raw_id_fields = ["field"]


@admin.register(Operation)
class OperationAdmin(admin.ModelAdmin):
    list_display = ["id", "core_user", "operation_type", "provider", "status", "start_time", "end_time"]
    list_filter = ["operation_type", "status", "provider"]
    raw_id_fields = ["core_user", "merged_file", "files"]
    inlines = [OperationFieldInline]


@admin.register(OperationCrop)
class OperationCropAdmin(admin.ModelAdmin):
    list_display = ["id", "operation", "field", "file", "created_time"]
    raw_id_fields = ["operation", "source_file", "file", "field", "boundary"]
