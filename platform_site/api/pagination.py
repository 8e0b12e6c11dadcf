"""Paging: `page` (from 0) and `size` (default 20, clamped to the maximum); a JSON array body with
`X-Total-Count` and `Link` (first, prev, next, last) headers."""

import math

from django.conf import settings
from django.db.models.query import ModelIterable
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from platform_site.api import wording
from platform_site.text import PLAIN_INTEGER

BEYOND_DIGITS = 19  # a number of more digits is past any page and any size (Python reads at most 4300 digits)


def parse_int_param(request, name: str, *, default: int, minimum: int) -> int:
    """An integer query parameter; a non-integer or one below `minimum` is a 400. One of more than BEYOND_DIGITS
    digits is read as 10**BEYOND_DIGITS: a page past the end, a size clamped, however long it is."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    text = raw.strip()
    if not PLAIN_INTEGER.fullmatch(text):
        raise ValidationError({name: [wording.NOT_AN_INTEGER]})
    digits = text.lstrip("+-").lstrip("0")
    value = int(digits or "0") if len(digits) <= BEYOND_DIGITS else 10**BEYOND_DIGITS
    if text.startswith("-"):
        value = -value
    if value < minimum:
        raise ValidationError({name: [wording.at_least(minimum)]})
    return value


def page_rows(queryset, start: int, size: int) -> list:
    """The rows `start` to `start + size` of the ordered `queryset`: their keys first, then those rows alone (a
    "deferred join"). Ordering and skipping `start` rows then read the sort columns, not every column of every row
    (a field's geometry): a deep page of 42,000 fields took seconds on SQLite. A row deleted between the two queries
    is left out of the page."""
    keys = list(queryset.values_list("pk", flat=True)[start : start + size])
    rows = {row.pk: row for row in queryset.order_by().filter(pk__in=keys)}
    return [rows[key] for key in keys if key in rows]


class PagePagination(BasePagination):
    """Zero-based pages. Views may set `page_size_default` / `page_size_max`."""

    def page_and_size(self, request, view) -> tuple[int, int]:
        """The page asked for and its size (clamped to the view's maximum); a 400 naming both when both are wrong."""
        size_default = getattr(view, "page_size_default", settings.PAGE_SIZE_DEFAULT)
        maximum = getattr(view, "page_size_max", settings.PAGE_SIZE_MAX)
        errors, values = {}, []
        for name, default, minimum in (("page", 0, 0), ("size", size_default, 1)):
            try:
                values.append(parse_int_param(request, name, default=default, minimum=minimum))
            except ValidationError as exc:
                errors.update(exc.detail)
        if errors:
            raise ValidationError(errors)
        page, size = values
        return page, min(size, maximum)

    def paginate_queryset(self, queryset, request, view=None):
        self.page, self.size = self.page_and_size(request, view)
        self.request = request
        self.count = len(queryset) if isinstance(queryset, list) else queryset.count()
        start = self.page * self.size
        if start >= self.count:  # past the end: no query (an offset past a bigint is a database error)
            return []
        if isinstance(queryset, list) or queryset._iterable_class is not ModelIterable:  # lists, values() rows
            return list(queryset[start : start + self.size])
        return page_rows(queryset, start, self.size)

    def page_headers(self) -> dict[str, str]:
        last = max(0, math.ceil(self.count / self.size) - 1)
        url = self.request.build_absolute_uri()

        def link(page: int, rel: str) -> str:
            target = replace_query_param(replace_query_param(url, "page", page), "size", self.size)
            return f'<{target}>; rel="{rel}"'

        links = [link(0, "first")]
        if self.page > 0:
            links.append(link(min(self.page - 1, last), "prev"))
        if self.page < last:
            links.append(link(self.page + 1, "next"))
        links.append(link(last, "last"))
        return {"X-Total-Count": str(self.count), "Link": ", ".join(links)}

    def get_paginated_response(self, data):
        return Response(data, headers=self.page_headers())

    def get_paginated_response_schema(self, schema):
        # The body is the page itself: `schema` is already the array of records (headers: api/schema.py).
        return schema

    def get_schema_operation_parameters(self, view):
        default = getattr(view, "page_size_default", settings.PAGE_SIZE_DEFAULT)
        maximum = getattr(view, "page_size_max", settings.PAGE_SIZE_MAX)
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "description": "Page number, from 0.",
                "schema": {"type": "integer", "minimum": 0},
            },
            {
                "name": "size",
                "in": "query",
                "required": False,
                # No `maximum`: a larger size is no error, the page is clamped.
                "description": f"Records a page (default {default}); a larger size is clamped to {maximum}.",
                "schema": {"type": "integer", "minimum": 1},
            },
        ]
