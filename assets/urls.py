"""Assets (beta) routes, included at `/services/beta/api/`."""

from django.urls import path

from .views import ImplementViewSet, MachineFileViewSet, MachineViewSet, OperatorViewSet

machines = MachineViewSet.as_view({"get": "list", "post": "create"})
machine = MachineViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})
machine_files = MachineFileViewSet.as_view({"get": "list"})
implements = ImplementViewSet.as_view({"get": "list"})
implement = ImplementViewSet.as_view({"get": "retrieve"})
operators = OperatorViewSet.as_view({"get": "list"})
operator = OperatorViewSet.as_view({"get": "retrieve"})

urlpatterns = [
    path("users/<str:coreUserId>/machines", machines, name="machine-list"),
    path("users/<str:coreUserId>/machines/<str:pk>", machine, name="machine-detail"),
    path("users/<str:coreUserId>/machines/<str:machineId>/files", machine_files, name="machinefile-list"),
    path("users/<str:coreUserId>/implements", implements, name="implement-list"),
    path("users/<str:coreUserId>/implements/<str:pk>", implement, name="implement-detail"),
    path("users/<str:coreUserId>/operators", operators, name="operator-list"),
    path("users/<str:coreUserId>/operators/<str:pk>", operator, name="operator-detail"),
]
