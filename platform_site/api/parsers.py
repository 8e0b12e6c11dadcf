"""Request body parsers."""

import codecs
import io

from django.conf import settings
from rest_framework import exceptions, parsers

from .errors import DomainError

# JSON is Unicode text (RFC 8259). Python also knows "charsets" that are no text encodings at all (zlib, bz2, rot13,
# hex...): a body declared in one was unpacked without limit (zlib: 51 KB became 50 MB) or failed as a 500.
UNICODE_CHARSETS = frozenset({"utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "ascii"})


class RequestTooLarge(DomainError):
    status_code = 413
    error_key = "requestTooLarge"


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with:
    - a body declared in any charset but Unicode (UTF-8, UTF-16, UTF-32, or ASCII) refused (415), an unknown one
      too;
    - a body longer than DATA_UPLOAD_MAX_MEMORY_SIZE refused (413) without reading more of it than that: Django
      applies the setting to forms only, and DRF reads JSON from the stream;
    - a body nested too deeply for Python's decoder (`[[[[...]]]]` thousands deep) answered as malformed (400),
      like any other JSON it cannot read, instead of a RecursionError (500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        context = parser_context or {}
        request = context.get("request")
        # Django drops a charset it does not know (the request's encoding stays None): the declared one decides.
        declared = getattr(request, "content_params", {}).get("charset") if request is not None else None
        encoding = declared or context.get("encoding") or settings.DEFAULT_CHARSET
        try:
            unicode = codecs.lookup(encoding).name in UNICODE_CHARSETS
        except (LookupError, ValueError):  # ValueError: a name with a NUL in it
            unicode = False
        if not unicode:
            raise exceptions.UnsupportedMediaType(
                media_type, detail=f"A JSON body must be UTF-8 (or UTF-16, UTF-32) text, not charset {encoding!r}."
            )
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None:
            length = request.META.get("CONTENT_LENGTH", "") if request is not None else ""
            if length.isascii() and length.isdigit() and int(length) > limit:
                raise RequestTooLarge(f"The request body is larger than {limit} bytes.")
            body = stream.read(limit + 1)
            if len(body) > limit:
                raise RequestTooLarge(f"The request body is larger than {limit} bytes.")
            stream = io.BytesIO(body)
        try:
            return super().parse(stream, media_type, {**context, "encoding": encoding})
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the body is nested too deeply.") from None


def replacement_document(request):
    """The JSON body of a request that replaces a resource (a farm's or a grower's PUT, `POST /configs/{id}`).
    DRF reads a request without a body as `{}`, which such a request takes as "clear everything": a body left out
    by mistake (`curl -X PUT` without `-d`) wiped the resource. No body at all is a 400; `{}` still clears."""
    if request.stream is None:
        raise exceptions.ParseError("The request has no body: send the JSON document that replaces the resource.")
    return request.data


def no_body(request) -> None:
    """A request that takes no body (`PUT .../batch/{id}/retry`) has none, or the empty JSON document `{}`. Anything
    else is refused as on every other write, the body read: malformed JSON 400, another media type 415, another
    document 400. It was ignored whatever it was (XML, a form), and the request done."""
    if request.stream is None:
        return
    if request.data != {}:
        # (A body-level error, `field: ""`: "body" is no key the client sent.)
        raise exceptions.ValidationError(
            {"non_field_errors": ["This request takes no body (or the empty JSON document {})."]}
        )
