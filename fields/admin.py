"""Admin with map widgets. Boundaries are immutable: the admin shows them, it does not change them."""

from django.contrib import admin
from django.contrib.gis.admin import GISModelAdmin
from django.contrib.gis.admin.options import GeoModelAdminMixin

from .models import Boundary, Farm, Field, FieldFile, Grower


class BoundaryInline(GeoModelAdminMixin, admin.StackedInline):
    model = Boundary
    fields = ["id", "status", "provider_status", "provider_boundary_id", "area_ha", "geometry", "created_at"]
    readonly_fields = ["id", "status", "provider_status", "provider_boundary_id", "area_ha", "created_at"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Field)
class FieldAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "core_user", "type", "provider_name", "created_at"]
    list_filter = ["type", "provider_name"]
    search_fields = ["id", "name", "provider_field_id"]
    raw_id_fields = ["core_user", "farm", "boundary", "merged_field"]
    inlines = [BoundaryInline]


@admin.register(Boundary)
class BoundaryAdmin(GISModelAdmin):
    list_display = ["id", "field", "status", "provider_status", "area_ha", "created_at"]
    list_filter = ["status", "provider_status"]
    search_fields = ["id", "field__id"]
    raw_id_fields = ["field"]
    readonly_fields = ["area_ha", "created_at"]


@admin.register(Farm)
class FarmAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "core_user", "grower", "provider_name"]
    raw_id_fields = ["core_user", "grower"]


@admin.register(Grower)
class GrowerAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "core_user", "provider_name"]
    raw_id_fields = ["core_user"]


@admin.register(FieldFile)
class FieldFileAdmin(admin.ModelAdmin):
    list_display = ["file_id", "field", "created_at"]
    raw_id_fields = ["field"]
