"""Admin with map widgets. Boundaries are immutable: the admin shows them, it does not change them.

A boundary's geometry is drawn on a Leaflet map with no drawing or editing tools. The rows are the services'
(`ServiceOwnedAdmin`): a field's name is changed and a field deleted here through `services.field_update` /
`services.field_delete`, with their rules and events (a provider field is neither: its provider owns it); nothing
else is added or changed here."""

import shapely
from django import forms
from django.conf import settings
from django.contrib import admin
from django.template.loader import render_to_string
from shapely.geometry import MultiPolygon

from platform_site.accounts.admin import LatestRowsInline, ServiceOwnedAdmin, latest_rows_display

from . import services
from .geometry import from_geos, to_geojson
from .models import Boundary, Farm, Field, FieldFile, Grower

MAP_MEDIA = forms.Media(css={"all": ["leaflet/leaflet.css"]}, js=["leaflet/leaflet.js"])


class ImmutableGeometryAdminMixin:
    """A boundary's geometry on a read-only map (`geometry_map`): the page of a row the admin cannot change shows its
    fields as text, and the shape as a map reads better than its WKT."""

    @admin.display(description="geometry")
    def geometry_map(self, obj):
        if obj is None or obj.geometry is None:
            return "-"
        name = f"geometry_{obj.pk.hex}"  # one map per boundary on a field's page
        # (the API's GeoJSON, every position exact: GDAL's, `geometry.geojson`, rounded them to 15 decimals)
        shape = from_geos(obj.geometry)
        data = {"shape": to_geojson(shape), "tiles": settings.ADMIN_MAP_TILES_URL}
        context = {"id": f"id_{name}", "data_id": f"id_{name}_data", "data": data, "description": describe(shape)}
        return render_to_string("fields/readonly_map.html", context)

    @property
    def media(self):
        return super().media + MAP_MEDIA


def describe(shape: MultiPolygon) -> str:
    """A MultiPolygon in words: its polygons, holes and positions, and the longitudes and latitudes it spans (the
    map's text alternative)."""
    polygons = shape.geoms
    holes = sum(len(polygon.interiors) for polygon in polygons)
    west, south, east, north = shape.bounds
    parts = [_count(len(polygons), "polygon")] + ([_count(holes, "hole")] if holes else [])
    return (
        f"{' with '.join(parts)}, {_count(shapely.get_num_coordinates(shape), 'position')}, from longitude "
        f"{west:.6f} to {east:.6f} and latitude {south:.6f} to {north:.6f}."
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


BOUNDARY_READONLY_FIELDS = ["id", "field", "status", "provider_status", "provider_boundary_id", "area_ha", "created_at"]


class BoundaryInline(ImmutableGeometryAdminMixin, LatestRowsInline, admin.StackedInline):
    """A field's latest boundaries, the newest (the active one) first: a field of 151 boundaries drew 151 maps in 159
    queries. The others are on the boundary list, filtered by the field (`FieldAdmin.all_boundaries` links to it)."""

    model = Boundary
    latest_order = ("-created_at", "-id")
    fields = ["id", "status", "provider_status", "provider_boundary_id", "area_ha", "geometry_map", "created_at"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("field")  # (not read again by each boundary's title)


# Everything a field shows but its name (a column added to the model is shown, not editable).
FIELD_READONLY_FIELDS = [field.name for field in Field._meta.concrete_fields if field.name != "name"]


@admin.register(Field)
class FieldAdmin(ServiceOwnedAdmin):
    list_display = ["public_id", "name", "core_user", "type", "provider_name", "created_at"]
    list_filter = ["type", "provider_name"]
    search_fields = ["public_id", "id", "name", "provider_field_id"]
    fields = ["name", *FIELD_READONLY_FIELDS, "all_boundaries"]
    readonly_fields = [*FIELD_READONLY_FIELDS, "all_boundaries"]
    inlines = [BoundaryInline]

    all_boundaries = latest_rows_display(BoundaryInline, "boundaries")

    def has_change_permission(self, request, obj=None):
        # The name, through the service; a provider field is its provider's.
        return (obj is None or not obj.is_provider_field) and admin.ModelAdmin.has_change_permission(self, request, obj)

    def save_model(self, request, obj, form, change):
        if "name" in form.changed_data:
            services.field_update(field=Field.objects.get(pk=obj.pk), changes={"name": obj.name})

    def deletable(self, obj) -> bool:
        return not obj.is_provider_field

    def service_delete(self, obj) -> None:
        services.field_delete(field=obj)


@admin.register(Boundary)
class BoundaryAdmin(ImmutableGeometryAdminMixin, ServiceOwnedAdmin):
    """Boundaries are created and retired by the services, never here."""

    list_display = ["id", "field", "status", "provider_status", "area_ha", "created_at"]
    list_filter = ["status", "provider_status"]
    search_fields = ["id", "field__public_id", "field__id"]
    fields = [*BOUNDARY_READONLY_FIELDS, "geometry_map"]
    readonly_fields = fields


@admin.register(Farm)
class FarmAdmin(ServiceOwnedAdmin):
    list_display = ["id", "name", "core_user", "grower", "provider_name"]
    list_select_related = ["core_user", "grower"]  # (Django's own follows no nullable key: a grower query per row)


@admin.register(Grower)
class GrowerAdmin(ServiceOwnedAdmin):
    list_display = ["id", "name", "core_user", "provider_name"]


@admin.register(FieldFile)
class FieldFileAdmin(ServiceOwnedAdmin):
    list_display = ["file_id", "field", "created_at"]
