"""Admin views of the catalogs, for operators of the platform. The rows are the services' (`ServiceOwnedAdmin`):
a product's or variety's normalized name is the key files are pooled by. A page shows the latest files that name it
and links to them all (`LatestRowsInline`)."""

from django.contrib import admin

from platform_site.accounts.admin import LatestRowsInline, ServiceOwnedAdmin, latest_rows_display

from .models import Product, ProductFile, Variety, VarietyFile


class ProductFileInline(LatestRowsInline, admin.TabularInline):
    model = ProductFile


class VarietyFileInline(LatestRowsInline, admin.TabularInline):
    model = VarietyFile


@admin.register(Product)
class ProductAdmin(ServiceOwnedAdmin):
    list_display = ("id", "name", "normalized_name", "core_user", "updated_time")
    search_fields = ("id", "name", "normalized_name", "core_user__id")
    inlines = [ProductFileInline]
    readonly_fields = ("all_files",)
    all_files = latest_rows_display(ProductFileInline, "files")


@admin.register(Variety)
class VarietyAdmin(ServiceOwnedAdmin):
    list_display = ("id", "name", "normalized_name", "core_user", "updated_time")
    search_fields = ("id", "name", "normalized_name", "core_user__id")
    inlines = [VarietyFileInline]
    readonly_fields = ("all_files",)
    all_files = latest_rows_display(VarietyFileInline, "files")


@admin.register(ProductFile)
class ProductFileAdmin(ServiceOwnedAdmin):
    list_display = ("id", "product", "core_file_id", "created_time")
    search_fields = ("core_file_id", "product__name")


@admin.register(VarietyFile)
class VarietyFileAdmin(ServiceOwnedAdmin):
    list_display = ("id", "variety", "core_file_id", "crop", "created_time")
    list_filter = ("crop",)
    search_fields = ("core_file_id", "variety__name", "crop")
