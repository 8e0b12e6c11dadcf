"""WSGI entry point (gunicorn platform_site.wsgi; `manage.py serve` and `runserver` through WSGI_APPLICATION)."""

import os

import django
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_bytes_from_wsgi
from django.http import QueryDict
from django.utils.functional import cached_property
from django.utils.http import parse_header_parameters

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")


def _text_encoding(name: str) -> bool:
    try:
        b"x".decode(name, "replace")  # (an empty input is decoded before the codec is even checked)
    except (LookupError, ValueError):  # unknown, not a text encoding (zlib, rot13...), or holding a NUL
        return False
    return True


class Request(WSGIRequest):
    """Django's request, with two changes:
    - the query string is read as UTF-8 (as URLs are; RFC 3986), whatever charset the body declares: Django read it
      in the body's charset, so `charset=zlib` (or any other codec that is no text encoding) on any request with a
      query string was a 500 before any middleware, and `charset=utf-16` made the parameters unreadable;
    - the body's charset is taken only when it names a text encoding (Django took any codec, and let a name holding
      a NUL raise ValueError out of this constructor: a 500). The JSON parser refuses any but Unicode (415)."""

    def _set_content_type_params(self, meta):
        self.content_type, self.content_params = parse_header_parameters(meta.get("CONTENT_TYPE", ""))
        charset = self.content_params.get("charset")
        if charset is not None and _text_encoding(charset):
            self.encoding = charset

    @cached_property
    def GET(self):
        return QueryDict(get_bytes_from_wsgi(self.environ, "QUERY_STRING", ""), encoding="utf-8")


BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def length_unknown(meta) -> bool:
    """A body sent without a Content-Length (`Transfer-Encoding: chunked`) to a method that takes one. Django reads
    such a body as empty, so a JSON body was "geometry: This field is required." and an upload "no file"; the
    development server cannot even decode it. It is refused with 411 before any view, as S3 does. Other methods
    read no body: theirs is left alone."""
    return (
        meta.get("REQUEST_METHOD") in BODY_METHODS
        and bool(meta.get("HTTP_TRANSFER_ENCODING"))
        and not meta.get("CONTENT_LENGTH")
    )


class Handler(WSGIHandler):
    request_class = Request

    def get_response(self, request):
        from platform_site.api.errors import length_required
        from platform_site.api.middleware import answer_headers

        if length_unknown(request.META):
            return answer_headers(request, length_required(request))
        if not request.path_info.startswith("/"):
            # `OPTIONS *` names no URL of ours: it is answered as a path of none is (Django answered its HTML debug
            # page in debug mode, the routes taking only paths)
            request.path_info = "/" + request.path_info
        return super().get_response(request)


django.setup(set_prefix=False)
application = Handler()
