"""What `OPTIONS` answers."""

from rest_framework.metadata import SimpleMetadata

from platform_site.api.renderers import answered_media_types


class ApiMetadata(SimpleMetadata):
    """DRF's `OPTIONS` answer (name, description, renders, parses) without `actions`: to describe the body of a PUT
    DRF reads the object of the URL, which `PUT /users` (the id is in the body) and `PUT .../boundary` do not have
    (a 500). The OpenAPI schema (`/api/schema/`) describes every body."""

    def determine_actions(self, request, view):
        return {}

    def determine_metadata(self, request, view):
        """`renders`: what a GET of the URL answers (a download its file type), where DRF listed the view's
        renderer classes (JSON and the browsable page, for a PNG)."""
        metadata = super().determine_metadata(request, view)
        if hasattr(view, "get_renderers"):
            action = getattr(view, "action", None)
            # OPTIONS is no action of a viewset: the renderers are those of the URL's GET
            view.action = (getattr(view, "action_map", None) or {}).get("get", action)
            try:
                metadata["renders"] = answered_media_types(view.get_renderers())
            finally:
                view.action = action
        return metadata
