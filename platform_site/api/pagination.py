"""Paging: `page` (from 0) and `size` (default 20, clamped to the maximum); a JSON array body with
`X-Total-Count` and `Link` (first, prev, next, last) headers."""

import math

from django.conf import settings
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from platform_site.api.filters import PLAIN_INTEGER


def parse_int_param(request, name: str, *, default: int, minimum: int) -> int:
    """An integer query parameter; a non-integer or one below `minimum` is a 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        if not PLAIN_INTEGER.fullmatch(raw.strip()):
            raise ValueError(raw)
        value = int(raw)
    except ValueError:  # also past Python's 4300 digits
        raise ValidationError({name: [f"'{raw}' is not an integer."]}) from None
    if value < minimum:
        raise ValidationError({name: [f"Must be at least {minimum}."]})
    return value


class PagePagination(BasePagination):
    """Zero-based pages. Views may set `page_size_default` / `page_size_max`."""

    def paginate_queryset(self, queryset, request, view=None):
        default = getattr(view, "page_size_default", settings.PAGE_SIZE_DEFAULT)
        maximum = getattr(view, "page_size_max", settings.PAGE_SIZE_MAX)
        self.page = parse_int_param(request, "page", default=0, minimum=0)
        self.size = min(parse_int_param(request, "size", default=default, minimum=1), maximum)
        self.request = request
        self.count = len(queryset) if isinstance(queryset, list) else queryset.count()
        start = self.page * self.size
        if start >= self.count:  # past the end: no query (an offset past a bigint is a database error)
            return []
        return list(queryset[start : start + self.size])

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
