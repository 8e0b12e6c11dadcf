from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from platform_site.api.viewsets import owned_core_user_or_404

from . import services
from .serializers import ConfigurationEntriesSerializer, configuration_representation


def _validated_entries(request) -> dict:
    data = ConfigurationEntriesSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    return data.entries()


class OwnerConfigurationView(APIView):
    """GET / PATCH /configs: the API owner's configuration. It can be changed, never deleted."""

    @extend_schema(responses=ConfigurationEntriesSerializer)
    def get(self, request):
        entries = services.config_owner_entries(request.user)
        # The spec's owner read response has no fieldsAutoMerge; update responses do.
        return Response(configuration_representation(owner=request.user, entries=entries, include_auto_merge=False))

    @extend_schema(request=ConfigurationEntriesSerializer, responses=ConfigurationEntriesSerializer)
    def patch(self, request):
        entries = services.config_owner_update(owner=request.user, entries=_validated_entries(request))
        return Response(configuration_representation(owner=request.user, entries=entries))


class CoreUserConfigurationView(APIView):
    """GET / POST / PATCH / DELETE /configs/{coreUserId}: a core user's configuration."""

    def core_user(self, request, core_user_id):
        return owned_core_user_or_404(request.user, core_user_id)

    @extend_schema(responses=ConfigurationEntriesSerializer)
    def get(self, request, core_user_id):
        core_user = self.core_user(request, core_user_id)
        entries = services.config_resolve(core_user=core_user)
        return Response(configuration_representation(owner=request.user, core_user=core_user, entries=entries))

    @extend_schema(request=ConfigurationEntriesSerializer, responses=ConfigurationEntriesSerializer)
    def post(self, request, core_user_id):
        core_user = self.core_user(request, core_user_id)
        existed = services.config_user_has_own(core_user=core_user)
        entries = services.config_user_set(core_user=core_user, entries=_validated_entries(request), replace=True)
        body = configuration_representation(owner=request.user, core_user=core_user, entries=entries)
        return Response(body, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)

    @extend_schema(request=ConfigurationEntriesSerializer, responses=ConfigurationEntriesSerializer)
    def patch(self, request, core_user_id):
        core_user = self.core_user(request, core_user_id)
        entries = services.config_user_set(core_user=core_user, entries=_validated_entries(request), replace=False)
        return Response(configuration_representation(owner=request.user, core_user=core_user, entries=entries))

    def delete(self, request, core_user_id):
        services.config_user_delete(core_user=self.core_user(request, core_user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
