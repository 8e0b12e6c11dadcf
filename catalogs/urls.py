"""Catalogs (beta) routes, included at `/services/beta/api/`. The owner-wide `users/products` and
`users/varieties` have two segments, so the `users/<coreUserId>/...` routes (three or more) never
capture them."""

from django.urls import path

from .views import (
    OwnerProductViewSet,
    OwnerVarietyViewSet,
    ProductSearchByQueryViewSet,
    ProductSearchViewSet,
    ProductViewSet,
    VarietyViewSet,
)

urlpatterns = [
    path("users/products", OwnerProductViewSet.as_view({"get": "list"}), name="product-summary-list"),
    path("users/varieties", OwnerVarietyViewSet.as_view({"get": "list"}), name="variety-summary-list"),
    path("users/<str:coreUserId>/products", ProductViewSet.as_view({"get": "list"}), name="product-list"),
    path(
        "users/<str:coreUserId>/products/search",
        ProductSearchViewSet.as_view({"get": "list"}),
        name="product-search",
    ),
    path("products/search", ProductSearchByQueryViewSet.as_view({"get": "list"}), name="product-search-by-query"),
    path("users/<str:coreUserId>/varieties", VarietyViewSet.as_view({"get": "list"}), name="variety-list"),
]
