"""Catalogs (beta) endpoints, included at `/services/beta/api/`: a core user's products and
varieties, the owner-wide unique names with file counts, and the product search."""

from django import forms
from django.db.models import Case, Count, Prefetch, Subquery, Value, When
from django.utils.functional import cached_property
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from platform_site.api import wording
from platform_site.api.sorting import parse_sort, sort_schema
from platform_site.api.viewsets import (
    CoreUserScopedViewSet,
    OwnerScopedViewSet,
    list_query_check,
    owned_core_user_or_404,
)

from .filtersets import OwnerProductFilterSet, ProductFilterSet, ProductSearchFilterSet, VarietyFilterSet
from .models import Product, ProductFile, Variety, VarietyFile
from .normalize import normalize_name
from .serializers import (
    ProductSearchQuerySerializer,
    ProductSerializer,
    ProductSummarySerializer,
    VarietySerializer,
    VarietySummarySerializer,
)

RECORD_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "name": "name",
    "normalizedName": "normalized_name",
    "createdTime": "created_time",
    "updatedTime": "updated_time",
}
SUMMARY_SORT_FIELDS = {"normalizedName": "normalized_name", "fileCount": "file_count"}
_summary_sort = sort_schema(SUMMARY_SORT_FIELDS)
SUMMARY_SORT = OpenApiParameter(
    "sort", _summary_sort["schema"], description=_summary_sort["description"], explode=_summary_sort["explode"]
)


class ProductViewSet(mixins.ListModelMixin, CoreUserScopedViewSet):
    """GET /users/{coreUserId}/products: the core user's product records."""

    operation_summaries = {
        "list": "List a core user's products",
    }

    queryset = Product.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = ProductSerializer
    filterset_class = ProductFilterSet
    sort_fields = RECORD_SORT_FIELDS
    default_sort = ("normalized_name",)

    def get_queryset(self):
        return Product.objects.filter(core_user=self.core_user).prefetch_related(
            Prefetch("files", queryset=ProductFile.objects.only("product_id", "core_file_id"))
        )


class ProductSearchViewSet(CoreUserScopedViewSet):
    """GET /users/{coreUserId}/products/search: at most `maxResults` (<= 20) products whose name
    contains `search`, names that start with it first; optionally only those of `coreFileId`."""

    operation_summaries = {
        "list": "Search a core user's products by name",
    }

    queryset = Product.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = ProductSerializer
    filterset_class = ProductSearchFilterSet
    filter_backends = [DjangoFilterBackend]
    pagination_class = None
    list_query_serializer_class = ProductSearchQuerySerializer  # checked with the filters (api.viewsets)

    def get_queryset(self):
        return Product.objects.filter(core_user=self.core_user).prefetch_related(
            Prefetch("files", queryset=ProductFile.objects.only("product_id", "core_file_id"))
        )

    @extend_schema(parameters=[ProductSearchQuerySerializer])  # `maxResults` with the bounds it is validated with
    def list(self, request, *args, **kwargs):
        products = self.filter_queryset(self.get_queryset())  # (the whole query checked first, `maxResults` too)
        query = ProductSearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        prefix = normalize_name(request.query_params.get("search", ""))
        # Ranked and cut in the query: only the products answered are read, with their files.
        first = Case(When(normalized_name__startswith=prefix, then=Value(0)), default=Value(1))
        products = products.order_by(first, "normalized_name", "id")
        return Response(ProductSerializer(products[: query.validated_data["maxResults"]], many=True).data)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("coreUserId", OpenApiTypes.UUID, required=True, description="The core user to search."),
            ProductSearchQuerySerializer,
        ]
    )
)
class ProductSearchByQueryViewSet(ProductSearchViewSet):
    """GET /products/search?coreUserId=...: the same search, for the spec's `/beta/products/search`
    spelling, with the core user in the query string."""

    operation_summaries = {
        "list": "Search a core user's products by name (core user in the query)",
    }

    @cached_property
    def core_user(self):
        if getattr(self, "swagger_fake_view", False) or self.action == "metadata":
            return None  # (OPTIONS describes the route, for any core user)
        # Read as the `coreUserId` filter of every list reads it (any spelling of a UUID, spaces around it taken
        # away); one that is missing or no UUID is answered with every other error of the query, a UUID naming no
        # core user of the owner is a 404, as in the path.
        try:
            core_user_id = forms.UUIDField().clean(self.request.query_params.get("coreUserId"))
        except forms.ValidationError as exc:
            missing = exc.code == "required"
            errors = {"coreUserId": ["This query parameter is required." if missing else wording.NOT_A_UUID]}
            try:
                list_query_check(self, self.request)
            except ValidationError as others:
                errors.update(others.detail)
            raise ValidationError(errors) from None
        return owned_core_user_or_404(self.owner, str(core_user_id))


class VarietyViewSet(mixins.ListModelMixin, CoreUserScopedViewSet):
    """GET /users/{coreUserId}/varieties: the core user's varieties with their crops."""

    operation_summaries = {
        "list": "List a core user's varieties",
    }

    queryset = Variety.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = VarietySerializer
    filterset_class = VarietyFilterSet
    sort_fields = RECORD_SORT_FIELDS
    default_sort = ("normalized_name",)

    def get_queryset(self):
        return Variety.objects.filter(core_user=self.core_user).prefetch_related(
            Prefetch("files", queryset=VarietyFile.objects.only("variety_id", "core_file_id", "crop"))
        )


class _OwnerSummaryViewSet(mixins.ListModelMixin, OwnerScopedViewSet):
    """Unique normalised names across all core users of the owner, with their related file count;
    sorted by `normalizedName` or `fileCount`, paged like every list."""

    model: type[Product] | type[Variety]
    filter_backends = [DjangoFilterBackend]
    sort_fields = SUMMARY_SORT_FIELDS  # applied by `summaries` (the sort is of the summaries, not of the rows)

    def get_queryset(self):
        return self.model.objects.filter(core_user__owner=self.owner)

    def summaries(self):
        names = self.filter_queryset(self.get_queryset()).values("normalized_name")
        ordering = parse_sort(self.request.query_params.getlist("sort"), self.sort_fields)
        return (
            self.model.objects.filter(core_user__owner=self.owner, normalized_name__in=Subquery(names))
            .values("normalized_name")
            .annotate(file_count=Count("files__core_file_id", distinct=True))
            .order_by(*ordering, "normalized_name")
        )

    def decorate(self, rows: list[dict]) -> list[dict]:
        return rows

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.summaries())
        return self.get_paginated_response(self.get_serializer(self.decorate(page), many=True).data)


@extend_schema_view(list=extend_schema(operation_id="beta_products_summary_list", parameters=[SUMMARY_SORT]))
class OwnerProductViewSet(_OwnerSummaryViewSet):
    """GET /users/products?coreFileId=&normalizedName=: unique products of the owner's core users."""

    operation_summaries = {
        "list": "List the owner's unique product names, with their file counts",
    }

    model = Product
    serializer_class = ProductSummarySerializer
    filterset_class = OwnerProductFilterSet


@extend_schema_view(list=extend_schema(operation_id="beta_varieties_summary_list", parameters=[SUMMARY_SORT]))
class OwnerVarietyViewSet(_OwnerSummaryViewSet):
    """GET /users/varieties: the owner's existing varieties, with crops and related file count."""

    operation_summaries = {
        "list": "List the owner's unique variety names, with their crops and file counts",
    }

    model = Variety
    serializer_class = VarietySummarySerializer
    filterset_class = None

    def decorate(self, rows: list[dict]) -> list[dict]:
        names = [row["normalized_name"] for row in rows]
        crops: dict[str, set[str]] = {name: set() for name in names}
        links = (
            VarietyFile.objects.filter(variety__core_user__owner=self.owner, variety__normalized_name__in=names)
            .exclude(crop="")
            .values_list("variety__normalized_name", "crop")
            .distinct()
        )
        for name, crop in links:
            crops[name].add(crop)
        return [{**row, "crops": sorted(crops[row["normalized_name"]])} for row in rows]
