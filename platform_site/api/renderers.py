"""Downloads negotiate their own media type.

An endpoint answering a stored file (GeoJSON, PNG, zip) returns a FileResponse, which DRF does not render; but DRF
negotiates the `Accept` header first, against the JSON renderer only, so a client asking for the very media type
the endpoint serves (`Accept: image/png`, as generated clients and browsers do) got 406. A view lists its
downloads in `download_renderers` (action name: renderer) and mixes in `DownloadNegotiation`.
"""

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer


class _Download(JSONRenderer):
    """Accepts a download's media type. Only a problem ever reaches `render` (the file itself is not rendered):
    as JSON, under its own Content-Type, application/problem+json."""


class GeoJSONDownload(_Download):
    media_type = "application/geo+json"
    format = "geojson"


class PNGDownload(_Download):
    media_type = "image/png"
    format = "png"


class ZipDownload(_Download):
    media_type = "application/zip"
    format = "zip"


class DownloadNegotiation:
    """Adds the renderer of the current action's download to the view's renderers (JSON stays first: a client
    accepting anything still gets the file). A download has no browsable page: in debug mode (`make run`) DRF's
    BrowsableAPIRenderer took `Accept: text/html`, and the file was answered to a client that takes no such type."""

    download_renderers: dict[str, type[_Download]] = {}

    def get_renderers(self):
        renderers = super().get_renderers()
        download = self.download_renderers.get(getattr(self, "action", None))
        if download is None:
            return renderers
        return [*(r for r in renderers if not isinstance(r, BrowsableAPIRenderer)), download()]


class SchemaNegotiation(DefaultContentNegotiation):
    """The OpenAPI document's negotiation: `?format=json` or `?format=yaml` chooses it, as drf-spectacular documents,
    besides `Accept`. The API has no `?format=` override elsewhere (`URL_FORMAT_OVERRIDE: None`); an unknown format
    here is a 404 problem."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return super().select_renderer(request, renderers, format_suffix or request.query_params.get("format"))
