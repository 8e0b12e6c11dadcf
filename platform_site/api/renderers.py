"""Downloads negotiate their own media type.

An endpoint answering a stored file (GeoJSON, PNG, zip) returns a FileResponse, which DRF does not render; but DRF
negotiates the `Accept` header first, against the JSON renderer only, so a client asking for the very media type
the endpoint serves (`Accept: image/png`, as generated clients and browsers do) got 406. A view lists its
downloads in `download_renderers` (action name: renderer) and mixes in `DownloadNegotiation`.
"""

from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.utils.mediatypes import _MediaType


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


def answered_media_types(renderers) -> list[str]:
    """What a view answers with these renderers (instances), for a 406 and `OPTIONS` to say: a download's file type
    (its JSON renderer writes its problems only), else every renderer's type, each once."""
    downloads = [r for r in renderers if isinstance(r, _Download)]
    return list(dict.fromkeys(r.media_type for r in downloads or renderers))


def _weight(media_range: _MediaType) -> float:
    """The range's `q` (1 without one, or with one that is no number)."""
    try:
        return float(media_range.params.get("q", "1"))
    except ValueError:
        return 1.0


class WeightedNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, with `Accept`'s weight 0 honoured (RFC 9110 section 12.4.2: "not acceptable"): a media
    type whose most specific range in `Accept` weighs 0 is not answered (`application/json;q=0`, `*/*;q=0`: 406),
    and a range of weight 0 chooses nothing. DRF read `q` as just another parameter, and answered JSON to
    `Accept: application/json;q=0`. Other weights keep DRF's choice (the most specific range first, then the
    view's renderers in order)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        ranges = [_MediaType(token) for token in super().get_accept_list(request)]
        if any(_weight(media_range) == 0 for media_range in ranges):
            offered = renderers
            renderers = [r for r in renderers if self._acceptable(_MediaType(r.media_type), ranges)]
            if any(isinstance(r, _Download) for r in offered) and not any(isinstance(r, _Download) for r in renderers):
                # A download answers its file whichever renderer is chosen (JSON renders its problems only): its
                # media type refused (`*/*, image/png;q=0`), it has nothing to answer.
                raise exceptions.NotAcceptable(available_renderers=offered)
        return super().select_renderer(request, renderers, format_suffix)

    def get_accept_list(self, request):
        return [token for token in super().get_accept_list(request) if _weight(_MediaType(token)) != 0]

    @staticmethod
    def _acceptable(media_type: _MediaType, ranges: list[_MediaType]) -> bool:
        matching = [media_range for media_range in ranges if media_type.match(media_range)]
        if not matching:
            return False
        most_specific = max(media_range.precedence for media_range in matching)
        return any(_weight(r) > 0 for r in matching if r.precedence == most_specific)


class SchemaNegotiation(WeightedNegotiation):
    """The OpenAPI document's negotiation: `?format=json` or `?format=yaml` chooses it, as drf-spectacular documents,
    besides `Accept`. The API has no `?format=` override elsewhere (`URL_FORMAT_OVERRIDE: None`); an unknown format
    here is a 404 problem."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return super().select_renderer(request, renderers, format_suffix or request.query_params.get("format"))
