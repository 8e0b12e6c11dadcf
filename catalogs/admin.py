"""Admin views of the catalogs, for operators of the platform."""

from django.contrib import admin

from .models import Product, ProductFile, Variety, VarietyFile


class ProductFileInline(admin.TabularInline):
    model = ProductFile
    extra = 0


class VarietyFileInline(admin.TabularInline):
    model = VarietyFile
    extra = 0


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "normalized_name", "core_user", "updated_time")
    search_fields = ("id", "name", "normalized_name", "core_user__id")
    raw_id_fields = ("core_user",)
    inlines = [ProductFileInline]


@admin.register(Variety)
class VarietyAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "normalized_name", "core_user", "updated_time")
    search_fields = ("id", "name", "normalized_name", "core_user__id")
    raw_id_fields = ("core_user",)
    inlines = [VarietyFileInline]


@admin.register(ProductFile)
class ProductFileAdmin(admin.ModelAdmin):
    list_display = ("id", "product", "core_file_id", "created_time")
    search_fields = ("core_file_id", "product__name")
    raw_id_fields = ("product",)


@admin.register(VarietyFile)
class VarietyFileAdmin(admin.ModelAdmin):
    list_display = ("id", "variety", "core_file_id", "crop", "created_time")
    list_filter = ("crop",)
    search_fields = ("core_file_id", "variety__name", "crop")
    raw_id_fields = ("variety",)
