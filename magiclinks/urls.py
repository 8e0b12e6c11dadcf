"""Magic link routes, included at `/services/widgets/api/` (spec "Magic links")."""

from django.urls import path

from .views import AuthenticationLinkViewSet, FileUploadLinkViewSet, ProviderApplicationViewSet, ProviderLinkViewSet

KINDS = [("provider", ProviderLinkViewSet), ("authentication", AuthenticationLinkViewSet),
         ("file-upload", FileUploadLinkViewSet)]  # fmt: skip

urlpatterns = []
for kind, viewset in KINDS:
    urlpatterns += [
        path(f"magic-link/{kind}", viewset.as_view({"get": "list", "post": "create"}), name=f"magiclink-{kind}-list"),
        path(
            f"magic-link/{kind}/<str:pk>",
            viewset.as_view({"get": "retrieve", "delete": "destroy"}),
            name=f"magiclink-{kind}-detail",
        ),
        path(
            f"magic-link/users/<str:coreUserId>/{kind}",
            viewset.as_view({"post": "create_for_user"}),
            name=f"magiclink-{kind}-user",
        ),
    ]

urlpatterns += [
    path(
        "provider-applications",
        ProviderApplicationViewSet.as_view({"get": "list", "post": "create"}),
        name="providerapplication-list",
    ),
    path(
        "provider-applications/<str:pk>",
        ProviderApplicationViewSet.as_view({"get": "retrieve", "put": "update", "delete": "destroy"}),
        name="providerapplication-detail",
    ),
]
