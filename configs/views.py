from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from platform_site.api.parsers import replacement_document
from platform_site.api.viewsets import owned_core_user_or_404

from . import services
from .serializers import ConfigurationEntriesSerializer, ConfigurationSerializer, configuration_representation

CORE_USER_ID = OpenApiParameter(
    "coreUserId", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The core user's id (`coreUserId`)."
)


def _validated_entries(body) -> dict:
    data = ConfigurationEntriesSerializer(data=body)
    data.is_valid(raise_exception=True)
    return data.entries()


class OwnerConfigurationView(APIView):
    """GET / PATCH /configs: the API owner's configuration. It can be changed, never deleted."""

    operation_summaries = {
        "get": "Get the API owner's configuration",
        "patch": "Change the API owner's configuration",
    }

    @extend_schema(operation_id="configs_owner_retrieve", responses=ConfigurationSerializer)
    def get(self, request):
        entries = services.config_owner_entries(request.user)
        # The spec's owner read response has no fieldsAutoMerge; update responses do.
        return Response(configuration_representation(owner=request.user, entries=entries, include_auto_merge=False))

    @extend_schema(
        operation_id="configs_owner_update", request=ConfigurationEntriesSerializer, responses=ConfigurationSerializer
    )
    def patch(self, request):
        entries = services.config_owner_update(owner=request.user, entries=_validated_entries(request.data))
        return Response(configuration_representation(owner=request.user, entries=entries))


class CoreUserConfigurationView(APIView):
    """GET / POST / PATCH / DELETE /configs/{coreUserId}: a core user's configuration."""

    operation_summaries = {
        "get": "Get a core user's configuration, inherited entries included",
        "post": "Set a core user's own configuration",
        "patch": "Change a core user's own configuration",
        "delete": "Delete a core user's own configuration (inherit the owner's)",
    }

    replacement_actions = ("post",)  # OpenAPI: its body is required (`replacement_document`)

    def core_user(self, request, coreUserId):
        return owned_core_user_or_404(request.user, coreUserId)

    @extend_schema(
        operation_id="configs_core_user_retrieve", parameters=[CORE_USER_ID], responses=ConfigurationSerializer
    )
    def get(self, request, coreUserId):
        core_user = self.core_user(request, coreUserId)
        entries = services.config_resolve(core_user=core_user)
        return Response(configuration_representation(owner=request.user, core_user=core_user, entries=entries))

    @extend_schema(
        operation_id="configs_core_user_create",
        parameters=[CORE_USER_ID],
        request=ConfigurationEntriesSerializer,
        responses={200: ConfigurationSerializer, 201: ConfigurationSerializer},
        description="Sets the core user's own configuration (201 when it had none, 200 when it is replaced); "
        "entries not sent are inherited from the API owner's configuration.",
    )
    def post(self, request, coreUserId):
        core_user = self.core_user(request, coreUserId)
        entries, created = services.config_user_set(
            core_user=core_user, entries=_validated_entries(replacement_document(request)), replace=True
        )
        body = configuration_representation(owner=request.user, core_user=core_user, entries=entries)
        if not created:
            return Response(body)
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": request.build_absolute_uri()})

    @extend_schema(
        operation_id="configs_core_user_update",
        parameters=[CORE_USER_ID],
        request=ConfigurationEntriesSerializer,
        responses=ConfigurationSerializer,
    )
    def patch(self, request, coreUserId):
        core_user = self.core_user(request, coreUserId)
        entries, _ = services.config_user_set(
            core_user=core_user, entries=_validated_entries(request.data), replace=False
        )
        return Response(configuration_representation(owner=request.user, core_user=core_user, entries=entries))

    @extend_schema(
        operation_id="configs_core_user_delete",
        parameters=[CORE_USER_ID],
        responses={204: None},
        description="Deletes the core user's own configuration: it inherits every entry from the API owner's again.",
    )
    def delete(self, request, coreUserId):
        services.config_user_delete(core_user=self.core_user(request, coreUserId))
        return Response(status=status.HTTP_204_NO_CONTENT)
