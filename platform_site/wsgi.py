"""WSGI entry point (gunicorn platform_site.wsgi; `manage.py serve` and `runserver` through WSGI_APPLICATION)."""

import os

import django
from django.core.handlers.wsgi import LimitedStream, WSGIHandler, WSGIRequest, get_bytes_from_wsgi
from django.http import HttpResponse, QueryDict, UnreadablePostError
from django.utils.functional import cached_property
from django.utils.http import parse_header_parameters

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")


def _text_encoding(name: str) -> bool:
    try:
        b"x".decode(name, "replace")  # (an empty input is decoded before the codec is even checked)
    except (LookupError, ValueError):  # unknown, not a text encoding (zlib, rot13...), or holding a NUL
        return False
    return True


class WholeBody(LimitedStream):
    """Django's body stream, which ends a body whose client stopped sending (closed its side of the connection)
    before its Content-Length with an error, as a read that times out or a connection reset end it (408
    `requestTimeout`, `errors.BODY_INCOMPLETE`). Django took the bytes that came as the whole body: a cut upload was
    a 400 "no file" and a cut JSON body a 400 parse error, blaming a body the client never finished sending."""

    def read(self, size=-1, /):
        # What is asked is given whole, however the input hands it over (a read may return less than asked
        # before the end); nothing more coming before then is the body's end.
        want = self.limit - self._pos if size is None or size < 0 else min(size, self.limit - self._pos)
        parts = [super().read(want)] if want else []
        got = len(parts[0]) if parts else 0
        while got < want:
            more = self._ended(super().read(want - got))
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def readline(self, size=-1, /):
        return self._ended(super().readline(size)) if size != 0 else b""

    def _ended(self, data: bytes) -> bytes:
        if not data and self._pos < self.limit:
            raise UnreadablePostError(f"the body ended after {self._pos} of the {self.limit} bytes announced")
        return data


class Request(WSGIRequest):
    """Django's request, with three changes:
    - the query string is read as UTF-8 (as URLs are; RFC 3986), whatever charset the body declares: Django read it
      in the body's charset, so `charset=zlib` (or any other codec that is no text encoding) on any request with a
      query string was a 500 before any middleware, and `charset=utf-16` made the parameters unreadable;
    - the body's charset is taken only when it names a text encoding (Django took any codec, and let a name holding
      a NUL raise ValueError out of this constructor: a 500). The JSON parser refuses any but Unicode (415);
    - a body that ends before its Content-Length is an error (`WholeBody`), not a shorter body."""

    def __init__(self, environ):
        super().__init__(environ)
        self._stream = WholeBody(self.environ["wsgi.input"], self._stream.limit)

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


def body_encoded(meta) -> bool:
    """A body sent with a content coding (`Content-Encoding: gzip`, `br`...) to a method that takes one. No view
    decodes one: a gzipped JSON body was a 400 parse error, an upload a 400 about file names, and a coding whose
    bytes happened to be JSON (`br` on a plain body) was taken as it was. It is refused with 415 before any view."""
    coding = meta.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    return meta.get("REQUEST_METHOD") in BODY_METHODS and coding not in ("", "identity")


SERVER_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"  # what some URL of the API answers


def _answered_before_django(request):
    """The answer to a request refused for its body's framing or coding, or to `OPTIONS *`; None for the others."""
    from platform_site.api.errors import coding_unsupported, length_required

    if length_unknown(request.META):
        return length_required(request)
    if body_encoded(request.META):
        return coding_unsupported(request)
    if request.method == "OPTIONS" and request.path_info == "*":
        # The server's own capabilities (RFC 9110 9.3.7; a ping of proxies and clients): the methods it serves.
        response = HttpResponse(status=200)
        response["Allow"] = SERVER_METHODS
        return response
    return None


class Handler(WSGIHandler):
    request_class = Request

    def get_response(self, request):
        from platform_site.api.middleware import answer_headers, host_refusal

        if (early := _answered_before_django(request)) is not None:
            # A Host not allowed is refused first, as on every path (`HostCheckMiddleware` checks the others).
            return answer_headers(request, host_refusal(request) or early)
        if not request.path_info.startswith("/"):
            # Any other target that is no path (`GET *`) names no URL of ours: it is answered as a path of none is
            # (Django answered its HTML debug page in debug mode, the routes taking only paths)
            request.path_info = "/" + request.path_info
        return super().get_response(request)


django.setup(set_prefix=False)
application = Handler()
