"""Assets (beta) endpoints under `/services/beta/api/users/{coreUserId}/...`: configuration only;
the rules live in `services.py`."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.response import Response

from platform_site.api.sorting import SortFilter
from platform_site.api.viewsets import CoreUserScopedViewSet, deleted_response, get_or_404

from . import services
from .filtersets import ImplementFilterSet, MachineFileFilterSet, MachineFilterSet
from .models import Implement, Machine, MachineFile, Operator
from .serializers import (
    ImplementSerializer,
    MachineChangedSerializer,
    MachineFileSerializer,
    MachineSerializer,
    MachineWriteSerializer,
    OperatorSerializer,
)

MACHINE_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "name": "name",
    "provider": "provider",
    "providerOrganizationId": "provider_organization_id",
    "providerMachineId": "provider_machine_id",
    "serialNumber": "serial_number",
    "vin": "vin",
    "model": "model",
    "make": "make",
    "category": "category",
    "modelYear": "model_year",
}
MACHINE_FILE_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "machineId": "machine_id",
    "startTime": "start_time",
    "endTime": "end_time",
    "createdTime": "created_time",
    "coreFileId": "core_file_id",
}
IMPLEMENT_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "name": "name",
    "provider": "provider",
    "providerOrganizationId": "provider_organization_id",
    "providerImplementId": "provider_implement_id",
    "serialNumber": "serial_number",
    "model": "model",
    "make": "make",
    "category": "category",
}


class MachineViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """Machines of one core user; only USER_CREATED ones may be changed or deleted."""

    operation_summaries = {
        "list": "List a core user's machines",
        "create": "Create a machine",
        "retrieve": "Get a machine",
        "partial_update": "Change a machine (USER_CREATED only)",
        "destroy": "Delete a machine (USER_CREATED only)",
    }

    queryset = Machine.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = MachineSerializer
    problem_responses = dict.fromkeys(
        ("partial_update", "destroy"),
        {
            403: "The machine came from a provider or from files: only USER_CREATED ones change "
            "(`providerResourceReadOnly`)."
        },
    )
    filterset_class = MachineFilterSet
    sort_fields = MACHINE_SORT_FIELDS
    default_sort = ("created_time",)

    def get_queryset(self):
        return Machine.objects.filter(core_user=self.core_user)

    @extend_schema(request=MachineWriteSerializer, responses={201: MachineChangedSerializer})
    def create(self, request, *args, **kwargs):
        data = MachineWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        machine = services.machine_create(core_user=self.core_user, **data.validated_data)
        return Response(MachineChangedSerializer(machine).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MachineWriteSerializer, responses=MachineChangedSerializer)
    def partial_update(self, request, *args, **kwargs):
        machine = self.get_object()
        services.machine_check_writable(machine)  # 403 whatever the body
        data = MachineWriteSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        machine = services.machine_update(machine=machine, **data.validated_data)
        return Response(MachineChangedSerializer(machine).data)

    def destroy(self, request, *args, **kwargs):
        return deleted_response(services.machine_delete(machine=self.get_object()))


class MachineFileViewSet(mixins.ListModelMixin, CoreUserScopedViewSet):
    """The converted files a machine of the core user worked in."""

    operation_summaries = {
        "list": "List the files a machine worked in",
    }

    queryset = MachineFile.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = MachineFileSerializer
    filterset_class = MachineFileFilterSet
    sort_fields = MACHINE_FILE_SORT_FIELDS
    default_sort = ("start_time",)

    def get_queryset(self):
        machine = get_or_404(Machine.objects.filter(core_user=self.core_user), pk=self.kwargs["machineId"])
        return MachineFile.objects.filter(machine=machine)


class ImplementViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """Implements of one core user (read-only)."""

    operation_summaries = {
        "list": "List a core user's implements",
        "retrieve": "Get an implement",
    }

    queryset = Implement.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = ImplementSerializer
    filterset_class = ImplementFilterSet
    sort_fields = IMPLEMENT_SORT_FIELDS
    default_sort = ("created_time",)

    def get_queryset(self):
        return Implement.objects.filter(core_user=self.core_user)


class OperatorViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """Operators of one core user (read-only); the list takes only `page` and `size`."""

    operation_summaries = {
        "list": "List a core user's operators",
        "retrieve": "Get an operator",
    }

    queryset = Operator.objects.none()  # for the schema; get_queryset scopes to the core user
    serializer_class = OperatorSerializer
    filter_backends = [SortFilter]
    sort_fields: dict[str, str] = {}  # the spec names no sort value: any `sort` is a 400
    default_sort = ("created_time",)

    def get_queryset(self):
        return Operator.objects.filter(core_user=self.core_user)
