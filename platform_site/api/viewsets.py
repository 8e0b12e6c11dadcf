"""Tenant-scoped viewsets. Every queryset is scoped to the authenticated API owner; another
owner's id answers 404 exactly like a missing one."""

import re
from urllib.parse import quote

from django import forms
from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import IntegerField, QuerySet, UUIDField
from django.utils.functional import cached_property
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from platform_site.accounts.models import CoreUser
from platform_site.api import idempotency, wording
from platform_site.api.errors import NOT_FOUND
from platform_site.api.lookups import row_get
from platform_site.api.pagination import PagePagination
from platform_site.api.schema import ApiAutoSchema
from platform_site.api.serializers import choices_named
from platform_site.api.sorting import parse_sort
from platform_site.text import ECHO_MAX


def get_or_404(queryset: QuerySet, **lookup):
    """`queryset.get(**lookup)`, with a missing row or a malformed id (not a UUID...) as a 404. A numeric id given
    as text must be written as the id is (`/farms/7`): `+7`, `07`, ` 7` or `٧` (an Arabic-Indic seven) named farm
    7 too, as Python reads them all as 7."""
    if not all(_canonical_id(queryset.model, name, value) for name, value in lookup.items()):
        raise NotFound(NOT_FOUND)
    try:
        return queryset.get(**lookup)
    except (queryset.model.DoesNotExist, DjangoValidationError, ValueError, TypeError):
        raise NotFound(NOT_FOUND) from None


# A UUID as the API writes it (either case): Python also reads `{...}`, `urn:uuid:...` and 32 bare hex digits, which
# gave one resource many URLs (a cache or a proxy rule keyed on the path saw another resource).
CANONICAL_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _canonical_id(model, name: str, value) -> bool:
    """False for text given for an integer column that is not its plain decimal writing, or for a UUID column
    that is not a UUID's 8-4-4-4-12 writing."""
    if not isinstance(value, str):
        return True
    try:
        field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    except FieldDoesNotExist:
        return True
    if field.is_relation:
        field = field.target_field
    if isinstance(field, UUIDField):
        return CANONICAL_UUID.fullmatch(value) is not None
    if not isinstance(field, IntegerField):
        return True
    # (Compared as text: Python refuses to read a number of over 4,300 digits, a 500 for a long enough id.)
    return value.isascii() and value.isdigit() and (value == "0" or not value.startswith("0"))


# The one query parameter meant to be given more than once (`sort=name&sort=id,desc`).
REPEATABLE_QUERY_PARAMETERS = frozenset({"sort"})


def query_parameters_check(request) -> None:
    """Any other parameter given twice is a 400: which value counts was the last one's, silently
    (`?coreUserId=A&coreUserId=B` answered for B)."""
    repeated = sorted(
        name
        for name, values in request.query_params.lists()
        if len(values) > 1 and name not in REPEATABLE_QUERY_PARAMETERS
    )
    if repeated:
        raise ValidationError({name: ["Given more than once: give it once."] for name in repeated})


def list_query_check(view, request) -> None:
    """Every error of a list's query in one 400: its filters, `sort`, `page` and `size`. Each is checked again where
    it is applied; checked only there, the first group at fault was answered alone, and a client with a wrong filter
    and a wrong page learned of the page only once it had fixed the filter."""
    checks = []
    filterset_class = getattr(view, "filterset_class", None)
    if filterset_class is not None and DjangoFilterBackend in view.filter_backends:

        def filters():
            filterset = filterset_class(request.query_params, queryset=filterset_class._meta.model.objects.none())
            for field in filterset.form.fields.values():
                wording.reword_form_field(field)
                if isinstance(field, forms.ChoiceField) and (names := choices_named(v for v, _ in field.choices)):
                    # (Django's "Select a valid choice. x is not one of the available choices." named none)
                    field.error_messages["invalid_choice"] = (
                        f"%(value).{ECHO_MAX}s is not one of: {names.replace('%', '%%')}."
                    )
            if not filterset.is_valid():
                raise translate_validation(filterset.errors)

        checks.append(filters)
    query_serializer_class = getattr(view, "list_query_serializer_class", None)
    if query_serializer_class is not None:
        checks.append(lambda: query_serializer_class(data=request.query_params).is_valid(raise_exception=True))
    sort_fields = getattr(view, "sort_fields", None)
    if sort_fields is not None:
        checks.append(lambda: parse_sort(request.query_params.getlist("sort"), sort_fields))
    paginator = view.paginator
    if isinstance(paginator, PagePagination):
        checks.append(lambda: paginator.page_and_size(request, view))
    errors = {}
    for check in checks:
        try:
            check()
        except ValidationError as exc:
            errors.update(exc.detail)
    if errors:
        raise ValidationError(errors)


def deleted_response(deleted: bool) -> Response:
    """A DELETE's answer: 204 for the request that deleted the resource; 404, as for a resource that is gone, for
    one that found it and then lost the race to a concurrent deletion (twenty at once answered twenty 204s, where
    one after the other the second is a 404)."""
    if not deleted:
        raise NotFound(NOT_FOUND)
    return Response(status=status.HTTP_204_NO_CONTENT)


def owned_core_user_or_404(owner, core_user_id) -> CoreUser:
    """The core user `core_user_id` of `owner`, or 404 (every `/users/{coreUserId}/...` request asks this)."""
    if not _canonical_id(CoreUser, "id", core_user_id):
        raise NotFound(NOT_FOUND)
    core_user = row_get(CoreUser, id=core_user_id, owner=owner.pk)
    if core_user is None:
        raise NotFound(NOT_FOUND)
    return core_user


class OwnerScopedViewSet(viewsets.GenericViewSet):
    """Base for resources of the authenticated API owner. Subclasses scope `get_queryset` with
    `self.owner` (or `self.core_user`); `get_object` turns malformed ids into 404s."""

    lookup_url_kwarg = "pk"
    schema = ApiAutoSchema()
    # The actions (POST) that create something, and so take an `Idempotency-Key` (`platform_site.api.idempotency`);
    # a POST that only asks (an intersection) ignores the header.
    keyed_actions: frozenset[str] = frozenset({"create"})

    @property
    def owner(self):
        return self.request.user

    def takes_key(self, request) -> bool:
        """Whether `request` is a POST of one of `keyed_actions` (known before `self.action` is set)."""
        return request.method == "POST" and self.action_map.get("post") in self.keyed_actions

    def dispatch(self, request, *args, **kwargs):
        # A keyed request runs in one transaction with the claim of its key and the keeping of its answer.
        if self.takes_key(request) and "HTTP_IDEMPOTENCY_KEY" in request.META:
            with transaction.atomic():
                return super().dispatch(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        query_parameters_check(request)
        # No id holds a NUL character, and PostgreSQL refuses one in a query parameter (a 500): such an id
        # names nothing, so it is a 404 before any query.
        if any("\x00" in value for value in self.kwargs.values() if isinstance(value, str)):
            raise NotFound(NOT_FOUND)
        if getattr(self, "swagger_fake_view", False) or self.action is None:
            return
        self.scope_check()
        if self.takes_key(request):
            key = idempotency.request_key(request)
            if key is not None:
                # (after the scope: another owner's core user is a 404 whatever the key)
                self._idempotent_request = idempotency.claim(
                    owner=self.owner, key=key, request=request, core_user=self.addressed_core_user()
                )

    def addressed_core_user(self) -> CoreUser | None:
        """The core user the URL names (`coreUserId`), if it names one."""
        core_user_id = self.kwargs.get("coreUserId")
        return None if core_user_id is None else owned_core_user_or_404(self.owner, core_user_id)

    def handle_exception(self, exc):
        if isinstance(exc, idempotency.Replayed):
            return exc.response
        return super().handle_exception(exc)

    def scope_check(self) -> None:
        """Raise 404 when the URL names a scope (a core user) that is not the owner's: before the query is read."""

    def finalize_response(self, request, response, *args, **kwargs):
        """A 201 of a create names what it made (`Location`, RFC 9110 15.3.2: without one, a client takes the
        collection it posted to for the resource): the collection's address and the new id, unless the view gave
        another."""
        response = super().finalize_response(request, response, *args, **kwargs)
        data = getattr(response, "data", None)
        if response.status_code == 201 and not response.has_header("Location") and self.action == "create":
            if isinstance(data, dict) and data.get("id") is not None:
                response["Location"] = created_location(request, request.path, data["id"])
        claimed = getattr(self, "_idempotent_request", None)
        if claimed is not None:
            self._idempotent_request = None
            idempotency.keep(claimed, response)
        return response

    def filter_queryset(self, queryset):
        # A list's whole query is checked as its rows are first filtered: after `get_queryset` has found what the URL
        # names (a machine, a field: a 404 before any 400, as before the check), before any of it is applied.
        if self.action == "list" and not getattr(self, "_list_query_checked", False):
            self._list_query_checked = True
            list_query_check(self, self.request)
        return super().filter_queryset(queryset)

    def get_object(self):
        obj = get_or_404(self.get_queryset(), **{self.lookup_field: self.kwargs[self.lookup_url_kwarg]})
        self.check_object_permissions(self.request, obj)
        return obj


def created_location(request, collection: str, resource_id) -> str:
    """The absolute address of resource `resource_id` of the collection at path `collection`."""
    return request.build_absolute_uri(f"{collection.rstrip('/')}/{quote(str(resource_id), safe=':')}")


class CoreUserScopedViewSet(OwnerScopedViewSet):
    """Base for resources under `/users/{coreUserId}/...`: the core user must be the owner's."""

    core_user_url_kwarg = "coreUserId"

    @cached_property
    def core_user(self) -> CoreUser:
        core_user_id = self.kwargs[self.core_user_url_kwarg]
        if not _canonical_id(CoreUser, "id", core_user_id):
            raise NotFound(NOT_FOUND)
        # The bearer authentication read it with the owner, in the same query.
        looked_up = getattr(self.request, "core_user_lookup", None)
        if looked_up is not None and looked_up[0] == core_user_id:
            if looked_up[1] is None:
                raise NotFound(NOT_FOUND)
            return looked_up[1]
        return owned_core_user_or_404(self.owner, core_user_id)

    def addressed_core_user(self) -> CoreUser:
        return self.core_user

    def scope_check(self) -> None:
        # Resolve the core user before anything else, so a foreign one is a 404 on every method the route has (one
        # it has not is a 405, whatever the id).
        self.core_user  # noqa: B018


class ReadOnlyOwnerViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """List and retrieve only."""
