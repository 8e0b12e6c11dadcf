"""Magic link and provider application endpoints under `/services/widgets/api/`: configuration only;
the rules live in `services.py`. The end-user pages are in `pages.py`."""

from django.db import transaction
from django.urls import reverse
from drf_spectacular.drainage import isolate_view_method
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.response import Response

from platform_site.accounts import services as accounts_services
from platform_site.accounts.models import ProviderApplication
from platform_site.api.errors import DomainError
from platform_site.api.urlsafety import UnsafeUrl
from platform_site.api.viewsets import OwnerScopedViewSet, deleted_response, get_or_404, owned_core_user_or_404

from . import serializers as s
from . import services
from .filtersets import MagicLinkFilterSet
from .models import MagicLink

LINK_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "createdAt": "created_at",
    "expiresAt": "expires_at",
    "lastAccessedAt": "last_accessed_at",
    "usageCount": "usage_count",
}


class MagicLinkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """Links of one kind (`widget`) of the owner's core users: list, read, create (for an existing core
    user, or with the core user created from `externalId`), revoke. Revoked links are gone from here."""

    widget: str = ""
    create_serializer_class: type[s.LinkCreateSerializer] = s.LinkCreateSerializer
    create_with_user_serializer_class: type[s.LinkCreateSerializer] = s.LinkCreateSerializer
    queryset = MagicLink.objects.none()
    serializer_class = s.MagicLinkSerializer
    # No `Idempotency-Key`: the answer holds the link's token, which is never stored (only its hash), so it cannot
    # be kept to answer a retry; a retry makes another link (the first, never seen, expires or can be revoked).
    keyed_actions = frozenset()
    filterset_class = MagicLinkFilterSet
    sort_fields = LINK_SORT_FIELDS
    default_sort = ("-created_at",)

    def get_queryset(self):
        return MagicLink.objects.filter(
            core_user__owner=self.owner, widget=self.widget, deleted_at__isnull=True
        ).select_related("core_user")

    def _created(self, link, token):
        body = s.MagicLinkCreatedSerializer(
            {
                "id": link.id,
                "core_user_id": link.core_user_id,
                "link": services.link_url(token),
                "expires_at": link.expires_at,
            }
        ).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(responses={201: s.MagicLinkCreatedSerializer})
    def create(self, request):
        data = self.create_with_user_serializer_class(data=request.data)
        data.is_valid(raise_exception=True)
        link, token = services.magic_link_create_with_user(owner=self.owner, **data.user_values(), **data.link_values())
        return self._created(link, token)

    @extend_schema(responses={201: s.MagicLinkCreatedSerializer})
    def create_for_user(self, request, coreUserId=None):  # noqa: N803 (URL keyword as the spec names it)
        core_user = owned_core_user_or_404(self.owner, coreUserId)
        data = self.create_serializer_class(data=request.data)
        data.is_valid(raise_exception=True)
        link, token = services.magic_link_create(core_user=core_user, **data.link_values())
        response = self._created(link, token)
        # (the link is read at `/magic-link/{kind}/{id}`, not under the core user's address it was posted to)
        detail = request.resolver_match.url_name.removesuffix("-user") + "-detail"
        response["Location"] = request.build_absolute_uri(reverse(detail, kwargs={"pk": link.id}))
        return response

    def destroy(self, request, pk=None):
        return deleted_response(services.magic_link_delete(link=self.get_object()))


def link_summaries(one: str, many: str) -> dict[str, str]:
    """The OpenAPI summaries of one kind's operations (`one`: "a provider link", `many`: "provider links")."""
    return {
        "list": f"List {many}",
        "retrieve": f"Get {one}",
        "create": f"Create {one} for an externalId (its core user found or created)",
        "create_for_user": f"Create {one} for a core user",
        "destroy": f"Revoke {one}",
    }


def link_creation_schema(create_serializer, with_user_serializer):
    """The request bodies of one kind's two creations, for the OpenAPI schema (the base class picks the
    serializers at run time). `isolate_view_method` keeps the base class's methods unannotated, as
    `extend_schema_view` does; that one only knows the standard methods and @actions."""

    def decorate(viewset):
        extend_schema(
            request=with_user_serializer,
            responses={201: s.MagicLinkCreatedSerializer},
            description="Creates the link and its core user, found or created by `externalId`.",
        )(isolate_view_method(viewset, "create"))
        extend_schema(request=create_serializer, responses={201: s.MagicLinkCreatedSerializer})(
            isolate_view_method(viewset, "create_for_user")
        )
        return viewset

    return decorate


@link_creation_schema(s.ProviderLinkCreateSerializer, s.ProviderLinkWithUserCreateSerializer)
class ProviderLinkViewSet(MagicLinkViewSet):
    """Provider links: the end user connects one or several providers."""

    operation_summaries = link_summaries("a provider link", "provider links")
    widget = MagicLink.Widget.PROVIDER
    create_serializer_class = s.ProviderLinkCreateSerializer
    create_with_user_serializer_class = s.ProviderLinkWithUserCreateSerializer


@link_creation_schema(s.AuthenticationLinkCreateSerializer, s.AuthenticationLinkWithUserCreateSerializer)
class AuthenticationLinkViewSet(MagicLinkViewSet):
    """Authentication links: the end user connects one provider."""

    operation_summaries = link_summaries("an authentication link", "authentication links")
    widget = MagicLink.Widget.AUTHENTICATION
    create_serializer_class = s.AuthenticationLinkCreateSerializer
    create_with_user_serializer_class = s.AuthenticationLinkWithUserCreateSerializer


@link_creation_schema(s.FileUploadLinkCreateSerializer, s.FileUploadLinkWithUserCreateSerializer)
class FileUploadLinkViewSet(MagicLinkViewSet):
    """File-upload links: the end user uploads a zip of machine files."""

    operation_summaries = link_summaries("a file-upload link", "file-upload links")
    widget = MagicLink.Widget.FILEUPLOAD
    create_serializer_class = s.FileUploadLinkCreateSerializer
    create_with_user_serializer_class = s.FileUploadLinkWithUserCreateSerializer


class ProviderApplicationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """The owner's OAuth applications at providers, needed before provider and authentication links."""

    operation_summaries = {
        "list": "List provider applications",
        "create": "Register a provider application",
        "retrieve": "Get a provider application",
        "update": "Replace a provider application",
        "destroy": "Delete a provider application",
    }

    queryset = ProviderApplication.objects.none()
    serializer_class = s.ProviderApplicationSerializer
    problem_responses = {
        "create": {409: "The owner already has an application for this provider (`providerAppExists`)."}
    }
    sort_fields = {"provider": "provider", "createdAt": "created_at"}
    default_sort = ("provider",)

    def get_queryset(self):
        return ProviderApplication.objects.filter(owner=self.owner)

    def _checked(self, data: s.ProviderApplicationWriteSerializer) -> dict:
        values = data.values()
        try:
            services.provider_url_check(values["token_url"])
        except UnsafeUrl as exc:
            raise DomainError(
                str(exc), error_key="providerUrlNotAllowed", field_errors=[{"field": "tokenUrl", "message": str(exc)}]
            ) from None
        return values

    @extend_schema(request=s.ProviderApplicationWriteSerializer, responses={201: s.ProviderApplicationSerializer})
    def create(self, request):
        data = s.ProviderApplicationWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        application = accounts_services.provider_application_create(owner=self.owner, **self._checked(data))
        return Response(s.ProviderApplicationSerializer(application).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ProviderApplicationUpdateSerializer, responses=s.ProviderApplicationSerializer)
    def update(self, request, pk=None):
        get_or_404(self.get_queryset(), pk=pk)  # a missing or foreign id is 404 whatever the body
        data = s.ProviderApplicationWriteSerializer(data=request.data, update=True)
        data.is_valid(raise_exception=True)
        values = self._checked(data)
        with transaction.atomic():
            application = get_or_404(self.get_queryset().select_for_update(), pk=pk)
            application = accounts_services.provider_application_update(application=application, **values)
        return Response(s.ProviderApplicationSerializer(application).data)

    def destroy(self, request, pk=None):
        return deleted_response(accounts_services.provider_application_delete(application=self.get_object()))
