"""`sort=prop[,prop...][,asc|desc]`, repeatable, the first value first; an allow-list per resource.

A view declares `sort_fields = {"camelCaseName": "model_field", ...}` and optionally
`default_sort = ("model_field", ...)`. An unknown property is a 400. The primary key always ends
the ordering so that pages are stable. Records without the sorted value come last in either direction, on
both databases (PostgreSQL would put them first in descending order, SQLite first in ascending).
"""

import re

from django.core.exceptions import FieldDoesNotExist
from django.db.models import F
from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend

from platform_site.text import ECHO_MAX, clip


def parse_sort(values: list[str], allowed: dict[str, str]) -> list[str]:
    """Translate `sort` query values into Django `order_by` terms; raise 400 on anything unknown."""
    ordering: list[str] = []
    for value in values:
        if not value.strip():
            continue  # `sort=` is no sort, as an empty filter is no filter (it was a 400)
        parts = [part.strip() for part in value.split(",") if part.strip()]
        direction = ""
        if parts and parts[-1].lower() in ("asc", "desc"):
            direction = "-" if parts.pop().lower() == "desc" else ""
        if not parts:
            raise ValidationError({"sort": [f"'{value}' names no property."]})
        for prop in parts:
            if prop not in allowed:
                sent = clip(repr(prop), ECHO_MAX)
                if not allowed:  # ("Allowed: none." said it less plainly)
                    raise ValidationError({"sort": [f"This list cannot be sorted (sort property {sent})."]})
                choices = ", ".join(sorted(allowed))
                raise ValidationError({"sort": [f"Unknown sort property {sent}. Allowed: {choices}."]})
            ordering.append(direction + allowed[prop])
    return ordering


def sort_pattern(allowed) -> str:
    """The `sort` values `parse_sort` takes, as a regular expression (OpenAPI `pattern`, ECMA-262 as Python reads it):
    an empty value, or allowed properties joined by commas (empty parts and spaces around parts ignored), then maybe
    `asc` or `desc` in any case."""
    prop = "(?:" + "|".join(re.escape(name) for name in sorted(allowed)) + ")"
    part = r"\s*,(?:\s*,)*\s*"  # one comma at least, with empty parts between
    direction = "(?:[aA][sS][cC]|[dD][eE][sS][cC])"
    return rf"^\s*$|^(?:\s*,)*\s*{prop}(?:{part}{prop})*(?:{part}{direction})?\s*(?:,\s*)*$"


def sort_schema(allowed) -> dict:
    """OpenAPI of the `sort` query parameter over `allowed` (camelCase names): its schema and description."""
    return {
        "description": "prop[,asc|desc], repeatable. Properties: " + ", ".join(sorted(allowed)),
        "schema": {"type": "array", "items": {"type": "string", "pattern": sort_pattern(allowed)}},
        "explode": True,
    }


def _nulls_last(model, term: str):
    """`term` with NULLs last when its field can hold NULL. Only then: `DESC NULLS LAST` on a NOT NULL column keeps
    PostgreSQL from reading a page off the column's index backwards (a full scan: 0.1 ms became 250 ms for the
    first page of a million files)."""
    name = term.removeprefix("-")
    try:
        nullable = "__" not in name and model._meta.get_field(name).null
    except FieldDoesNotExist:
        nullable = False
    if not nullable:
        return term
    return F(name).desc(nulls_last=True) if term.startswith("-") else F(name).asc(nulls_last=True)


class SortFilter(BaseFilterBackend):
    """Applies `sort` to list endpoints of views that declare `sort_fields`."""

    def filter_queryset(self, request, queryset, view):
        allowed = getattr(view, "sort_fields", None)
        if allowed is None or not hasattr(queryset, "order_by"):
            return queryset
        ordering = parse_sort(request.query_params.getlist("sort"), allowed)
        ordering = ordering or list(getattr(view, "default_sort", ()))
        return queryset.order_by(*(_nulls_last(queryset.model, term) for term in ordering), "pk")

    def get_schema_operation_parameters(self, view):
        allowed = getattr(view, "sort_fields", None)
        if not allowed:
            return []
        return [{"name": "sort", "in": "query", "required": False, **sort_schema(allowed)}]
