"""What `OPTIONS` answers."""

from rest_framework.metadata import SimpleMetadata


class ApiMetadata(SimpleMetadata):
    """DRF's `OPTIONS` answer (name, description, renders, parses) without `actions`: to describe the body of a PUT
    DRF reads the object of the URL, which `PUT /users` (the id is in the body) and `PUT .../boundary` do not have
    (a 500). The OpenAPI schema (`/api/schema/`) describes every body."""

    def determine_actions(self, request, view):
        return {}
