"""Admin with map widgets. Boundaries are immutable: the admin shows them, it does not change them.

A boundary's geometry is drawn on a map with no drawing or editing tools, and its form field is disabled, so
Django ignores whatever a crafted POST sends for it. A field's current boundary (`boundary`) is read-only
too: a field's shape changes only through the services (new boundary, events, auto-merge). Fields are not added
here (a field needs a geometry), and what ties a field, farm or grower to its core user, its farm, its merged
field or its provider is read-only: moving one to another core user here would cross tenants."""

from django.contrib import admin
from django.contrib.gis.admin.options import GeoModelAdminMixin
from django.contrib.gis.db.models import GeometryField
from django.contrib.gis.forms import OSMWidget

from .models import Boundary, Farm, Field, FieldFile, Grower


class ReadOnlyMapWidget(OSMWidget):
    """The geometry on an OpenStreetMap map without the draw/modify interactions or the "Delete all Features"
    link; its serialized value has no form name, so the browser posts nothing for it."""

    template_name = "fields/readonly_map.html"


class ImmutableGeometryAdminMixin(GeoModelAdminMixin):
    """Geometry columns shown on a read-only map, their form fields disabled (a posted value is ignored)."""

    gis_widget = ReadOnlyMapWidget

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        if isinstance(db_field, GeometryField):
            formfield.disabled = True
            formfield.required = False
        return formfield


BOUNDARY_READONLY_FIELDS = ["id", "field", "status", "provider_status", "provider_boundary_id", "area_ha", "created_at"]


class BoundaryInline(ImmutableGeometryAdminMixin, admin.StackedInline):
    model = Boundary
    fields = ["id", "status", "provider_status", "provider_boundary_id", "area_ha", "geometry", "created_at"]
    readonly_fields = [name for name in BOUNDARY_READONLY_FIELDS if name != "field"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Field)
class FieldAdmin(admin.ModelAdmin):
    list_display = ["public_id", "name", "core_user", "type", "provider_name", "created_at"]
    list_filter = ["type", "provider_name"]
    search_fields = ["public_id", "id", "name", "provider_field_id"]
    readonly_fields = [
        "core_user",
        "type",
        "farm",
        "boundary",
        "merged_field",
        "provider_name",
        "provider_id",
        "provider_field_id",
        "provider_field_name",
        "provider_boundary_id",
        "organization_id",
    ]
    inlines = [BoundaryInline]

    def has_add_permission(self, request):
        return False


@admin.register(Boundary)
class BoundaryAdmin(ImmutableGeometryAdminMixin, admin.ModelAdmin):
    """Read-only: boundaries are created and retired by the services, never here."""

    list_display = ["id", "field", "status", "provider_status", "area_ha", "created_at"]
    list_filter = ["status", "provider_status"]
    search_fields = ["id", "field__public_id", "field__id"]
    fields = [*BOUNDARY_READONLY_FIELDS, "geometry"]
    readonly_fields = BOUNDARY_READONLY_FIELDS

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Farm)
class FarmAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "core_user", "grower", "provider_name"]
    readonly_fields = ["core_user", "grower"]

    def has_add_permission(self, request):
        return False


@admin.register(Grower)
class GrowerAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "core_user", "provider_name"]
    readonly_fields = ["core_user"]

    def has_add_permission(self, request):
        return False


@admin.register(FieldFile)
class FieldFileAdmin(admin.ModelAdmin):
    list_display = ["file_id", "field", "created_at"]
    readonly_fields = ["file_id", "field"]

    def has_add_permission(self, request):
        return False
