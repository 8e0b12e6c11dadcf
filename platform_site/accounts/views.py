from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from platform_site.api.errors import NOT_FOUND
from platform_site.api.viewsets import OwnerScopedViewSet, deleted_response, get_or_404

from . import services
from .filtersets import CoreUserFilterSet
from .models import CoreUser
from .serializers import AuthenticateSerializer, CoreUserReplaceSerializer, CoreUserSerializer, TokenSerializer

EXTERNAL_ID_TAKEN = "Another core user of the owner has this `externalId` (`externalIdTaken`)."


class AuthenticateView(APIView):
    """POST /api/authenticate {username, password, rememberMe} -> {id_token}."""

    operation_summaries = {
        "post": "Get a bearer token",
    }

    authentication_classes: list = []
    permission_classes = [AllowAny]
    problem_responses = {
        "post": {
            401: "Unknown username or wrong password (`invalidCredentials`).",
            429: "Too many failed logins of this user name from this address, or from this address: refused, a "
            "right password too, until `Retry-After` seconds have passed (`tooManyRequests`).",
        }
    }

    @extend_schema(request=AuthenticateSerializer, responses=TokenSerializer)
    def post(self, request):
        data = AuthenticateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token = services.owner_authenticate(
            username=data.validated_data["username"],
            password=data.validated_data["password"],
            remember_me=data.validated_data["rememberMe"],
            request=request,
        )
        return Response({"id_token": token})

    def finalize_response(self, request, response, *args, **kwargs):
        """Every answer `no-store` (RFC 6749 section 5.1, with `Pragma: no-cache` for HTTP/1.0 caches): a token in a
        cache (a proxy's, the browser's) is a login anyone reading it has; the refusals are no one's to keep either."""
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        response["Pragma"] = "no-cache"
        return response


class CoreUserViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """Core users of the authenticated API owner."""

    operation_summaries = {
        "list": "List core users",
        "create": "Create a core user",
        "replace": "Replace a core user (its id in the body)",
        "retrieve": "Get a core user",
        "destroy": "Delete a core user and all its data",
    }

    serializer_class = CoreUserSerializer
    filterset_class = CoreUserFilterSet
    problem_responses = {
        "create": {409: EXTERNAL_ID_TAKEN},
        # The id travels in the body, so the schema hook's rule (404 for an id in the path) does not see it.
        "replace": {404: "No core user of the owner has the body's `id` (`notFound`).", 409: EXTERNAL_ID_TAKEN},
        "destroy": {
            409: "The user's data kept changing while it was being deleted (`conflict`; PostgreSQL): send it again."
        },
    }
    sort_fields = {"id": "id", "name": "name", "email": "email", "externalId": "external_id"}
    default_sort = ("name",)

    def get_queryset(self):
        return CoreUser.objects.filter(owner=self.owner)

    def create(self, request):
        data = CoreUserSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        core_user = services.core_user_create(owner=self.owner, **data.validated_data)
        return Response(CoreUserSerializer(core_user).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CoreUserReplaceSerializer, responses=CoreUserSerializer)
    @action(detail=False, methods=["put"], url_path="", url_name="replace")
    def replace(self, request):
        with transaction.atomic():
            # The user is read (locked) before the body is judged: the email it has may be sent back unchanged
            # whatever it is (`EmailOrBlankField`). A body that names none is judged all the same: 400 before 404.
            core_user = self._body_user(request.data)
            data = CoreUserReplaceSerializer(
                data=request.data, context={"current_email": core_user.email if core_user is not None else None}
            )
            data.is_valid(raise_exception=True)
            values = dict(data.validated_data)
            if core_user is None or core_user.pk != values.pop("id"):
                raise NotFound(NOT_FOUND)
            core_user = services.core_user_replace(core_user=core_user, **values)
        return Response(CoreUserSerializer(core_user).data)

    def _body_user(self, body) -> CoreUser | None:
        """The owner's core user the body's `id` names, locked for the change; None if it names none (a missing,
        foreign or malformed id, or one that is no string)."""
        core_user_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(core_user_id, str):
            return None
        try:
            return get_or_404(self.get_queryset().select_for_update(), pk=core_user_id)
        except NotFound:
            return None

    def destroy(self, request, pk=None):
        return deleted_response(services.core_user_delete(core_user=self.get_object()))
