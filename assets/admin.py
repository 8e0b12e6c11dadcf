"""Admin views of the assets, for operators of the platform. The rows are the services' (`ServiceOwnedAdmin`):
pooling derives their keys from names, serials and VINs, and their changes are events. A machine the API created
(USER_CREATED) can be deleted here, through `services.machine_delete` (event machineDeleted). A page shows the latest
files of its machine, implement or operator and links to them all (`LatestRowsInline`)."""

from django.contrib import admin

from platform_site.accounts.admin import LatestRowsInline, ServiceOwnedAdmin, latest_rows_display

from . import services
from .models import Implement, ImplementFile, Machine, MachineFile, Operator, OperatorFile, OriginType


class MachineFileInline(LatestRowsInline, admin.TabularInline):
    model = MachineFile
    fields = ("core_file_id", "origin_type", "start_time", "end_time", "distance_value", "distance_unit")
    readonly_fields = fields
    show_change_link = True


@admin.register(Machine)
class MachineAdmin(ServiceOwnedAdmin):
    list_display = ("id", "name", "origin_type", "provider", "serial_number", "vin", "core_user", "created_time")
    list_filter = ("origin_type", "provider")
    search_fields = ("id", "name", "serial_number", "vin", "provider_machine_id", "core_user__id")
    inlines = [MachineFileInline]
    readonly_fields = ("all_files",)
    all_files = latest_rows_display(MachineFileInline, "files")

    def deletable(self, obj) -> bool:
        return obj.origin_type == OriginType.USER_CREATED

    def service_delete(self, obj) -> None:
        services.machine_delete(machine=obj)


@admin.register(MachineFile)
class MachineFileAdmin(ServiceOwnedAdmin):
    list_display = ("id", "machine", "core_file_id", "origin_type", "start_time", "end_time", "distance_value")
    list_filter = ("origin_type",)
    search_fields = ("id", "core_file_id", "machine__id", "machine__name")


class ImplementFileInline(LatestRowsInline, admin.TabularInline):
    model = ImplementFile


@admin.register(Implement)
class ImplementAdmin(ServiceOwnedAdmin):
    list_display = ("id", "name", "origin_type", "provider", "serial_number", "core_user", "updated_time")
    list_filter = ("origin_type", "provider")
    search_fields = ("id", "name", "serial_number", "provider_implement_id", "core_user__id")
    inlines = [ImplementFileInline]
    readonly_fields = ("all_files",)
    all_files = latest_rows_display(ImplementFileInline, "files")


class OperatorFileInline(LatestRowsInline, admin.TabularInline):
    model = OperatorFile


@admin.register(Operator)
class OperatorAdmin(ServiceOwnedAdmin):
    list_display = ("id", "name", "origin_type", "provider", "status", "core_user", "updated_time")
    list_filter = ("origin_type", "provider", "status")
    search_fields = ("id", "name", "license", "provider_operator_id", "core_user__id")
    inlines = [OperatorFileInline]
    readonly_fields = ("all_files",)
    all_files = latest_rows_display(OperatorFileInline, "files")


@admin.register(ImplementFile)
class ImplementFileAdmin(ServiceOwnedAdmin):
    list_display = ("id", "implement", "core_file_id", "created_time")
    search_fields = ("core_file_id", "implement__id")


@admin.register(OperatorFile)
class OperatorFileAdmin(ServiceOwnedAdmin):
    list_display = ("id", "operator", "core_file_id", "created_time")
    search_fields = ("core_file_id", "operator__id")
