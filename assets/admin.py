"""Admin views of the assets, for operators of the platform."""

from django.contrib import admin

from .models import Implement, ImplementFile, Machine, MachineFile, Operator, OperatorFile


class MachineFileInline(admin.TabularInline):
    model = MachineFile
    extra = 0
    fields = ("core_file_id", "origin_type", "start_time", "end_time", "distance_value", "distance_unit")
    readonly_fields = fields
    show_change_link = True


@admin.register(Machine)
class MachineAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "origin_type", "provider", "serial_number", "vin", "core_user", "created_time")
    list_filter = ("origin_type", "provider")
    search_fields = ("id", "name", "serial_number", "vin", "provider_machine_id", "core_user__id")
    raw_id_fields = ("core_user",)
    readonly_fields = ("serial_key", "vin_key", "name_key", "updated_time")
    inlines = [MachineFileInline]


@admin.register(MachineFile)
class MachineFileAdmin(admin.ModelAdmin):
    list_display = ("id", "machine", "core_file_id", "origin_type", "start_time", "end_time", "distance_value")
    list_filter = ("origin_type",)
    search_fields = ("id", "core_file_id", "machine__id", "machine__name")
    raw_id_fields = ("machine", "core_user")


class ImplementFileInline(admin.TabularInline):
    model = ImplementFile
    extra = 0


@admin.register(Implement)
class ImplementAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "origin_type", "provider", "serial_number", "core_user", "updated_time")
    list_filter = ("origin_type", "provider")
    search_fields = ("id", "name", "serial_number", "provider_implement_id", "core_user__id")
    raw_id_fields = ("core_user",)
    readonly_fields = ("serial_key", "name_key")
    inlines = [ImplementFileInline]


class OperatorFileInline(admin.TabularInline):
    model = OperatorFile
    extra = 0


@admin.register(Operator)
class OperatorAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "origin_type", "provider", "status", "core_user", "updated_time")
    list_filter = ("origin_type", "provider", "status")
    search_fields = ("id", "name", "license", "provider_operator_id", "core_user__id")
    raw_id_fields = ("core_user",)
    readonly_fields = ("name_key",)
    inlines = [OperatorFileInline]


@admin.register(ImplementFile)
class ImplementFileAdmin(admin.ModelAdmin):
    list_display = ("id", "implement", "core_file_id", "created_time")
    search_fields = ("core_file_id", "implement__id")
    raw_id_fields = ("implement",)


@admin.register(OperatorFile)
class OperatorFileAdmin(admin.ModelAdmin):
    list_display = ("id", "operator", "core_file_id", "created_time")
    search_fields = ("core_file_id", "operator__id")
    raw_id_fields = ("operator",)
