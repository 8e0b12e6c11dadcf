"""Hostile input on every API route: odd ids in the path and malformed or odd JSON bodies get a 4xx
problem, never a 500. The route list is read from the URL configuration, so a new route is covered
without being named here."""

import gzip
import io
import json
import re
from urllib.parse import quote

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.urls import URLPattern, URLResolver, get_resolver

from tests.tenancy import assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

# A NUL character (PostgreSQL refuses it in any text parameter), an id far longer than any column, non-ASCII,
# a lone percent sign and a dot segment.
HOSTILE_IDS = ["a\x00b", "x" * 3000, "é€😀", "%", ".."]
ALL_METHODS = ("get", "post", "put", "patch", "delete")
# JSON a decoder reads, but no endpoint expects.
ODD_BODIES = [
    "a\x00b",
    [],
    "text",
    None,
    {"id": "a\x00b", "name": "a\x00b", "geometry": "a\x00b", "fieldIds": ["a\x00b"], "farmIds": ["a\x00b"]},
    {"id": "x" * 3000, "name": "x" * 3000},
    {"id": 2**70, "fieldIds": [2**70], "farmIds": [2**70], "intersectionThreshold": 2**70},
    # An integer no float holds, where a number is expected (each alone: an unknown key is refused first).
    *({key: 10**400} for key in ("intersectionThreshold", "fieldsMergeIntersection", "geoimagesResolution")),
    {"geometry": {"type": "MultiPolygon", "coordinates": json.loads("[" * 900 + "]" * 900)}},
    {"geometry": {"type": "Polygon", "coordinates": [[["a", 0], [1, 0], [1, 1], ["a", 0]]]}},
    # An integer no float holds, in a position (and as an altitude).
    {"geometry": {"type": "Polygon", "coordinates": [[[10, 50], [10**400, 50], [10.01, 50.01], [10, 50]]]}},
    {"geometry": {"type": "Polygon", "coordinates": [[[10, 50, 10**400], [10.01, 50], [10.01, 50.01], [10, 50]]]}},
    # A lone surrogate that an error message echoes: as an unknown key, and as a value no choice matches.
    {"\ud800": 1, "events": ["\ud800"], "provider": "\ud800", "allowedProviders": ["\ud800"]},
    {"geoimagesShape": "\ud800", "geoimagesColorRamp": {"\ud800%": [0, 0, 0]}},
]
# Bodies a JSON decoder refuses or reads as non-finite numbers.
MALFORMED_BODIES = [
    b"{",
    b"\xff\xfe",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, NaN], [1, 1], [0, 0]]]}}',
    b'{"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}, '
    b'"intersectionThreshold": 1e999}',
]


def _routes(resolver=None, prefix=""):
    """(route pattern, methods) of every API route: DRF viewset actions, or every method for plain views."""
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _routes(entry, pattern)
        elif isinstance(entry, URLPattern) and pattern.startswith(("services/", "api/", "links/")):
            actions = getattr(entry.callback, "actions", None)
            yield pattern, tuple(actions) if actions else ALL_METHODS


def _url(pattern: str, values: dict) -> str:
    """The route with each `<converter:name>` replaced by `values[name]` (default "abc"), quoted."""
    return "/" + re.sub(
        r"<(?:\w+:)?(\w+)>", lambda match: quote(values.get(match.group(1), "abc"), safe=""), pattern
    ).lstrip("^").rstrip("$")


def _assert_client_error(response, what) -> None:
    assert 400 <= response.status_code < 500, (what, response.status_code, response.content[:300])
    if not what[1].startswith("/links/"):  # the magic link pages are HTML
        assert response["Content-Type"].startswith("application/problem+json"), what


def test_every_route_answers_odd_ids_with_a_client_error(api_client, core_user):
    routes = list(_routes())
    assert len(routes) > 60  # the walk found the API
    checked = 0
    for pattern, methods in routes:
        for name in re.findall(r"<(?:\w+:)?(\w+)>", pattern):
            for hostile in HOSTILE_IDS:
                url = _url(pattern, {"coreUserId": str(core_user.id), name: hostile})
                for method in methods:
                    _assert_client_error(getattr(api_client, method)(url, {}, format="json"), (method, url[:200]))
                    checked += 1
    assert checked > 500


@pytest.mark.parametrize("hostile", ["a\x00b", "x" * 3000])
def test_a_nul_or_overlong_field_id_is_not_found(api_client, core_user, hostile):
    """Field ids are the client's own strings: a NUL in one was sent to PostgreSQL as is (a 500)."""
    base = f"/services/fields/api/users/{core_user.id}/fields/{quote(hostile, safe='')}"
    for url in (base, f"{base}/boundaries", f"{base}/boundary", f"{base}/operations", f"{base}/weather"):
        assert_problem(api_client.get(url), 404, "notFound")
    assert_problem(api_client.delete(base), 404, "notFound")


def test_json_nested_too_deeply_is_a_malformed_request(api_client, core_user):
    """Python's JSON decoder gives up on very deep nesting with a RecursionError (it was a 500)."""
    body = assert_problem(
        api_client.post(
            f"/services/fields/api/users/{core_user.id}/fields",
            b"[" * 100_000 + b"]" * 100_000,
            content_type="application/json",
        ),
        400,
        "malformedRequest",
    )
    assert "nested too deeply" in body["detail"]


def test_every_route_answers_options_without_a_server_error(api_client, core_user):
    """DRF's OPTIONS metadata reads the object of a view that takes PUT: a KeyError where the id is not in the
    path (`PUT /users`, `PUT .../boundary`)."""
    for pattern, _methods in _routes():
        url = _url(pattern, {"coreUserId": str(core_user.id)})
        response = api_client.options(url)
        assert response.status_code < 500, (url, response.status_code, response.content[:300])


@pytest.mark.parametrize("charset", ["zlib", "rot13", "bz2", "unicode_escape", "hex", "latin-1", "cp1252", "no-such"])
def test_a_json_body_in_another_charset_than_unicode_is_415(api_client, charset):
    """JSON is Unicode text (RFC 8259). Python also knows compressing 'charsets' (zlib: a 51 KB body unpacked to
    50 MB, unauthenticated) and ones that failed as a 500."""
    body = b'{"username": "a", "password": "b"}'
    response = api_client.post("/api/authenticate", body, content_type=f"application/json; charset={charset}")
    assert_problem(response, 415, "unsupportedMediaType")


def _wsgi(
    method: str,
    path: str,
    *,
    query: str = "",
    content_type: str = "",
    body: bytes = b"",
    token: str = "",
    meta: dict[str, str] | None = None,
):
    """A request to the WSGI application gunicorn and `manage.py serve` call (Django's test client builds its own
    request objects, and skips the application's `Handler`): (status code, headers, body). `meta`: more of the
    environ (headers as `HTTP_...`)."""
    from platform_site.wsgi import application

    environ = (
        {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "CONTENT_TYPE": content_type,
            "CONTENT_LENGTH": str(len(body)),
        }
        | ({"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {})
        | (meta or {})
    )
    answer = {}
    # As Django's test client does: the test's database connection must outlive the request.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        chunks = application(environ, lambda status, headers: answer.update(status=status, headers=dict(headers)))
        body = b"".join(chunks)
        chunks.close()
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)
    return int(answer["status"].split()[0]), answer["headers"], body


@pytest.mark.parametrize("charset", ["\x00", "utf-8\x00"])
def test_a_charset_with_a_nul_is_415(db, charset):
    """Python's codec lookup raises ValueError for such a name, which Django let out of the request's constructor:
    a 500 before any middleware."""
    status, headers, body = _wsgi(
        "POST", "/api/authenticate", content_type=f"application/json; charset={charset}", body=b'{"username": "a"}'
    )
    assert (status, headers["Content-Type"]) == (415, "application/problem+json")
    assert json.loads(body)["errorKey"] == "unsupportedMediaType"


@pytest.mark.parametrize("charset", ["zlib", "rot13", "utf-16", "\x00"])
def test_the_query_string_is_read_whatever_charset_the_body_declares(owner, core_user, charset):
    """Django read the query string in the body's charset: with a codec that is no text encoding, any request with
    a query string was a 500; with UTF-16 its parameters were unreadable."""
    from platform_site.api.authentication import token_issue
    from tests.factories import CoreUserFactory

    CoreUserFactory(owner=owner)
    status, headers, body = _wsgi(
        "GET",
        "/services/usermanagement/api/users",
        query="size=1&sort=name,asc",  # (an even length: UTF-16 reads it as other text)
        content_type=f"application/json; charset={charset}",
        token=token_issue(owner),
    )
    assert (status, headers["X-Total-Count"], len(json.loads(body))) == (200, "2", 1)


def test_an_upload_declaring_a_codec_that_is_no_text_encoding_is_read(owner, core_user):
    """The same 500 on the upload routes, whose query string names the core user."""
    from platform_site.api.authentication import token_issue

    part = b'--abc\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nnot a zip\r\n--abc--\r\n'
    status, _headers, body = _wsgi(
        "POST",
        "/services/operations/api/batch",
        query=f"coreUserId={core_user.id}&provider=Other",
        content_type="multipart/form-data; boundary=abc; charset=zlib",
        body=part,
        token=token_issue(owner),
    )
    assert (status, json.loads(body)["errorKey"]) == (400, "invalidArchive")


@pytest.mark.parametrize("coding", ["gzip", "br", "GZIP", "deflate, gzip", "x-unknown"])
def test_a_body_with_a_content_coding_is_415_and_nothing_is_written(owner, core_user, coding):
    """No view decodes a content coding: a gzipped body was a 400 parse error, and `br` on a plain JSON body (the
    bytes happened to be JSON) was taken as it was, though the client said they were something else."""
    from platform_site.accounts.models import CoreUser
    from platform_site.api.authentication import token_issue

    plain = json.dumps({"name": "encoded"}).encode()
    body = gzip.compress(plain) if "gzip" in coding.lower() else plain
    status, headers, answer = _wsgi(
        "POST",
        "/services/usermanagement/api/users",
        content_type="application/json",
        body=body,
        token=token_issue(owner),
        meta={"HTTP_CONTENT_ENCODING": coding},
    )
    assert (status, headers["Content-Type"], headers["Accept-Encoding"]) == (
        415,
        "application/problem+json",
        "identity",
    )
    problem = json.loads(answer)
    assert problem["errorKey"] == "unsupportedMediaType" and coding in problem["detail"]
    assert not CoreUser.objects.filter(name="encoded").exists()


def test_an_upload_with_a_content_coding_is_415(owner, core_user):
    """It was a 400 saying a file name in another encoding made the part unreadable."""
    from platform_site.api.authentication import token_issue

    part = b'--abc\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPK\x05\x06' + bytes(18)
    status, _headers, body = _wsgi(
        "POST",
        "/services/operations/api/batch",
        query=f"coreUserId={core_user.id}&provider=Other",
        content_type="multipart/form-data; boundary=abc",
        body=gzip.compress(part + b"\r\n--abc--\r\n"),
        token=token_issue(owner),
        meta={"HTTP_CONTENT_ENCODING": "gzip"},
    )
    assert (status, json.loads(body)["errorKey"]) == (415, "unsupportedMediaType")


@pytest.mark.parametrize("coding", ["identity", "IDENTITY", ""])
def test_a_body_sent_as_it_is_is_taken(owner, core_user, coding):
    from platform_site.api.authentication import token_issue

    status, _headers, _body = _wsgi(
        "POST",
        "/services/usermanagement/api/users",
        content_type="application/json",
        body=json.dumps({"name": "plain"}).encode(),
        token=token_issue(owner),
        meta={"HTTP_CONTENT_ENCODING": coding},
    )
    assert status == 201


@pytest.mark.parametrize("method", ["GET", "HEAD", "DELETE"])
def test_a_method_that_reads_no_body_is_answered_whatever_its_content_coding(owner, core_user, method):
    from platform_site.api.authentication import token_issue

    status, _headers, _body = _wsgi(
        method,
        f"/services/usermanagement/api/users/{core_user.id}",
        token=token_issue(owner),
        meta={"HTTP_CONTENT_ENCODING": "gzip"},
    )
    assert status == (204 if method == "DELETE" else 200)


def test_options_of_a_resource_is_the_resources_not_the_servers(owner):
    """Through the application gunicorn calls (`Handler`, which answers `OPTIONS *` itself): the resource's methods
    and what it renders."""
    from platform_site.api.authentication import token_issue

    status, headers, body = _wsgi("OPTIONS", "/services/usermanagement/api/users", token=token_issue(owner))
    assert status == 200 and "PATCH" not in headers["Allow"] and "POST" in headers["Allow"]
    assert json.loads(body)["renders"] == ["application/json"]
    status, headers, _body = _wsgi("OPTIONS", "*")
    assert (status, headers["Allow"]) == (200, "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")


@pytest.mark.parametrize(
    ("method", "path", "meta"),
    [
        ("OPTIONS", "*", {}),
        ("POST", "/services/usermanagement/api/users", {"HTTP_CONTENT_ENCODING": "gzip"}),
        ("POST", "/services/usermanagement/api/users", {"HTTP_TRANSFER_ENCODING": "chunked", "CONTENT_LENGTH": ""}),
    ],
    ids=["options-star", "content-coding", "chunked"],
)
def test_a_host_not_allowed_is_refused_before_the_answers_made_before_the_middleware(db, method, path, meta):
    """`OPTIONS *`, a content coding's 415 and a chunked body's 411 are answered before the middleware: they
    answered any Host (a 200 naming the API's methods to `evil.example`), where every other path refuses it."""
    status, headers, body = _wsgi(
        method, path, content_type="application/json", body=b"{}", meta={"HTTP_HOST": "evil.example", **meta}
    )
    assert (status, headers["Content-Type"]) == (400, "application/problem+json")
    assert json.loads(body)["errorKey"] == "malformedRequest"
    assert "Allow" not in headers


@pytest.mark.parametrize("charset", ["utf-8", "UTF8", "utf-16"])
def test_a_json_body_in_a_unicode_charset_is_read(api_client, charset):
    body = '{"username": "nobody", "password": "wrong"}'.encode(charset.replace("UTF8", "utf-8"))
    response = api_client.post("/api/authenticate", body, content_type=f"application/json; charset={charset}")
    assert_problem(response, 401, "invalidCredentials")


def test_a_json_body_over_the_request_size_limit_is_413(api_client, core_user, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    url = "/services/usermanagement/api/users"
    body = b'{"name": "big", "email": "big@example.com"' + b" " * 1000 + b"}"
    assert_problem(api_client.post(url, body, content_type="application/json"), 413, "requestTooLarge")
    assert_problem(api_client.post("/api/authenticate", body, content_type="application/json"), 413, "requestTooLarge")
    small = b'{"name": "small", "email": "small@example.com"}'
    assert api_client.post(url, small, content_type="application/json").status_code == 201
    assert [u["name"] for u in api_client.get(url).json()] == [core_user.name, "small"]


def test_a_json_body_of_exactly_the_request_size_limit_is_taken(api_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    url = "/services/usermanagement/api/users"

    def body(size: int) -> bytes:
        head = b'{"name": "edge", "email": "edge@example.com"'
        return head + b" " * (size - len(head) - 1) + b"}"

    assert len(body(1000)) == 1000
    assert api_client.post(url, body(1000), content_type="application/json").status_code == 201
    assert_problem(api_client.post(url, body(1001), content_type="application/json"), 413, "requestTooLarge")
    assert [u["name"] for u in api_client.get(url).json()] == ["edge"]


def _body_routes(core_user) -> list[tuple[str, str]]:
    """(method, url) of every route that reads a JSON body, with an existing resource where it needs one."""
    out = []
    for pattern, methods in _routes():
        url = _url(pattern, {"coreUserId": str(core_user.id), "pk": "f1", "fieldId": "f1"})
        out += [(method, url) for method in methods if method in ("post", "put", "patch")]
    return out


def test_every_body_route_answers_odd_json_with_a_client_error_and_writes_nothing(api_client, core_user):
    fields_url = f"/services/fields/api/users/{core_user.id}/fields"
    square = {"type": "Polygon", "coordinates": [[[0, 0], [0.01, 0], [0.01, 0.01], [0, 0]]]}
    assert api_client.post(fields_url, {"id": "f1", "name": "f1", "geometry": square}, format="json").status_code == 201
    before = api_client.get(f"{fields_url}/f1").json()
    routes = _body_routes(core_user)
    assert len(routes) > 25
    for method, url in routes:
        for body in ODD_BODIES:
            # (sent as JSON text with every non-ASCII character escaped: a lone surrogate has no UTF-8)
            response = getattr(api_client, method)(url, json.dumps(body), content_type="application/json")
            if response.status_code < 400:
                # Only bodies a route reads none of, or ignores: nothing odd may have been stored.
                assert "\x00" not in response.content.decode(errors="replace"), (method, url, body)
                continue
            _assert_client_error(response, (method, url, repr(body)[:80]))
        for raw in MALFORMED_BODIES:
            response = getattr(api_client, method)(url, raw, content_type="application/json")
            _assert_client_error(response, (method, url, raw[:80]))
    assert api_client.get(f"{fields_url}/f1").json() == before


# Every query parameter some list reads: the filters, paging, sorting and the few a view reads itself.
QUERY_PARAMS = sorted(
    {"page", "size", "sort", "search", "maxResults", "coreUserId", "provider", "email", "externalId", "events"}
    | {"name", "crop", "crops", "type", "status", "origin", "originType", "operationType", "serialNumber", "vin"}
    | {"startTime", "endTime", "createdTime", "updatedTime", "afterCreatedTime", "beforeCreatedTime"}
    | {"afterStartTime", "beforeStartTime", "afterEndTime", "beforeEndTime", "minArea", "distanceValue"}
    | {"distanceUnit", "greaterThanDistanceValue", "lessThanDistanceValue", "farmId", "fieldId", "growerId"}
    | {"organizationId", "providerOrganizationId", "providerImplementId", "batchId", "coreFileId"}
)
# A NUL, integers past any column (and past Python's digit limit), a number that is not finite, a date
# that does not exist and an overlong value.
ODD_QUERY_VALUES = ["a\x00b", "9" * 30, "9" * 5000, "nan", "2024-02-30T25:61:00", "x" * 3000]


def test_every_list_answers_odd_query_values_with_a_client_error_or_a_page(api_client, core_user):
    """Each parameter alone with each odd value on every list (and a field's sub-lists, of a field that
    exists): a 400 problem, or an answer (a parameter the route does not read is ignored), never a 500."""
    fields_url = f"/services/fields/api/users/{core_user.id}/fields"
    square = {"type": "Polygon", "coordinates": [[[0, 0], [0.01, 0], [0.01, 0.01], [0, 0]]]}
    assert api_client.post(fields_url, {"id": "f1", "name": "f1", "geometry": square}, format="json").status_code == 201
    routes = [
        _url(pattern, {"coreUserId": str(core_user.id), "fieldId": "f1", "pk": "f1"})
        for pattern, methods in _routes()
        if "get" in methods and pattern.startswith("services/") and not pattern.rstrip("$").endswith(">")
    ]
    assert len(routes) > 30
    api_client.raise_request_exception = False  # a 500 is a response here, so that every one is listed
    server_errors = []
    for url in routes:
        for param in QUERY_PARAMS:
            for value in ODD_QUERY_VALUES:
                savepoint = transaction.savepoint()  # PostgreSQL aborts the transaction on a failed query
                response = api_client.get(url, {param: value})
                if response.status_code >= 500:
                    server_errors.append((url, param, value[:40]))
                    transaction.savepoint_rollback(savepoint)
                    continue
                transaction.savepoint_commit(savepoint)
                if response.status_code >= 400:
                    _assert_client_error(response, ("get", url, param, value[:40]))
    assert server_errors == []


@pytest.mark.parametrize("debug", [False, True], ids=["production", "make-run-debug"])
@pytest.mark.parametrize("path", ["/services/operations/api/files", "/api/authenticate", "/admin/", "/links/x"])
def test_a_host_not_allowed_is_a_problem_document_in_debug_mode_too(client, settings, debug, path):
    """`make run` serves in debug mode, where Django answered a request for another host with its HTML debug page
    (77 kB: the request's headers and environment, the settings) instead of the problem document."""
    settings.DEBUG = debug
    response = client.get(path, HTTP_HOST="evil.example")
    assert_problem(response, 400, "malformedRequest")
    assert response["Content-Type"] == "application/problem+json"
    assert client.get("/services/operations/api/files").status_code == 401  # an allowed host goes on as before


def test_an_error_echoing_what_was_sent_is_bounded(api_client, core_user):
    """A 5 MiB value no choice matched was echoed whole, in the detail and in its field error: a 10 MiB answer. A
    choice error echoes 80 characters of it; any other text keeps its start and end (what was sent, what is wrong)."""
    from webhooks.serializers import EVENT_NAMES as names

    EVENT_NAMES = ", ".join(names)  # noqa: N806
    url = "/services/alerts/api/alerts/webhooks"
    body = {"name": "w", "url": "https://example.com/hook", "secret": "s" * 20, "events": ["K" * 5_000_000]}
    response = api_client.post(url, body, format="json")
    assert_problem(response, 400, "validation")
    assert len(response.content) < 5_000
    [error] = response.json()["fieldErrors"]
    assert error["field"] == "events[0]" and error["message"] == f'"{"K" * 80}" is not one of: {EVENT_NAMES}.'
    # Unknown keys by the thousand: a thousand are listed, all counted
    response = api_client.post(
        "/services/usermanagement/api/users", {f"k{n}" + "x" * 2000: 1 for n in range(1200)}, format="json"
    )
    assert_problem(response, 400, "validation")
    errors = response.json()["fieldErrors"]
    assert len(errors) == 1000 and "and 1199 more" in response.json()["detail"]
    assert all(e["field"].startswith("k") and "…" in e["field"] and len(e["field"]) == 1000 for e in errors)


@pytest.mark.parametrize(
    ("url", "query", "message"),
    [
        ("/services/fields/api/fields", "type=merged", "merged is not one of: ORIGINAL, MERGED."),
    ],
)
def test_a_filter_value_no_choice_matches_is_answered_with_the_choices(api_client, core_user, url, query, message):
    """Django's "Select a valid choice. merged is not one of the available choices." named none."""
    response = api_client.get(f"{url}?{query}")
    assert_problem(response, 400, "validation")
    assert response.json()["fieldErrors"][0]["message"] == message


def test_a_body_value_no_choice_matches_is_answered_with_the_choices(api_client, core_user):
    response = api_client.patch("/services/config/api/configs", {"geoimagesShape": "square"}, format="json")
    assert_problem(response, 400, "validation")
    assert response.json()["fieldErrors"][0]["message"] == '"square" is not one of: SQUARE, HEXAGON.'


@pytest.mark.parametrize(
    ("body", "named"), [(5, "a number"), ("x", "a string"), (True, "a boolean"), ([1], "an array")]
)
def test_a_body_that_is_no_json_object_is_named_by_its_json_type(api_client, core_user, body, named):
    """DRF answered "Invalid data. Expected a dictionary, but got int.": Python's names, not JSON's."""
    response = api_client.post("/services/usermanagement/api/users", json.dumps(body), content_type="application/json")
    assert_problem(response, 400, "validation")
    assert response.json()["detail"] == f"Expected a JSON object, not {named}."


def test_a_415_says_what_the_endpoint_takes_and_a_406_what_it_answers(api_client, core_user):
    """They named only what was refused ("Unsupported media type \\"application/zip\\" in request.")."""
    response = api_client.post("/services/usermanagement/api/users", "name=x", content_type="text/plain")
    assert_problem(response, 415, "unsupportedMediaType")
    assert response.json()["detail"].endswith(" Send application/json.")
    response = api_client.post(
        f"/services/operations/api/batch?coreUserId={core_user.pk}&provider=Other",
        b"PK",
        content_type="application/zip",
    )
    assert_problem(response, 415, "unsupportedMediaType")
    assert "multipart/form-data" in response.json()["detail"].split("Send", 1)[1]
    response = api_client.get("/services/usermanagement/api/users", HTTP_ACCEPT="image/png")
    assert_problem(response, 406, "notAcceptable")
    assert "application/json" in response.json()["detail"].split("This answers", 1)[1]


def _messages(response) -> dict:
    assert_problem(response, 400, "validation")
    return {error["field"]: error["message"] for error in response.json()["fieldErrors"]}


def test_one_wording_for_a_type_or_range_error_in_a_body_a_filter_and_paging(api_client, core_user):
    """DRF and Django worded each their own way ("A valid integer is required.", "Enter a whole number.",
    "'x' is not an integer.", "Ensure this value is greater than or equal to 1." beside our "Must be at least 0.")."""
    users = f"/services/fields/api/users/{core_user.pk}"
    listed = _messages(api_client.get("/services/fields/api/farms?growerId=abc&coreUserId=nope&page=x&size=0"))
    assert listed == {
        "growerId": "Must be an integer.",
        "coreUserId": "Must be a UUID.",
        "page": "Must be an integer.",
        "size": "Must be at least 1.",
    }
    assert _messages(api_client.get("/services/fields/api/farms?growerId=0")) == {"growerId": "Must be at least 1."}
    assert _messages(api_client.get(f"/services/beta/api/users/{core_user.pk}/products/search?maxResults=x")) == {
        "maxResults": "Must be an integer."
    }
    assert _messages(api_client.get(f"/services/beta/api/users/{core_user.pk}/products/search?maxResults=21")) == {
        "maxResults": "Must be at most 20."
    }
    sent = {"growerId": "abc", "name": 5}
    assert _messages(api_client.post(f"{users}/farms", sent, format="json")) == {
        "growerId": "Must be an integer.",
        "name": "Must be a string.",
    }
    assert _messages(api_client.post(f"{users}/farms", {"name": "x" * 256}, format="json")) == {
        "name": "Must have at most 255 characters."
    }
    merge = "/services/operations/api/files/merge"
    assert _messages(api_client.post(merge, {"ids": ["nope"]}, format="json")) == {"ids[0]": "Must be a UUID."}
    assert _messages(api_client.post(merge, {"ids": {}}, format="json")) == {"ids": "Must be a JSON array."}
    assert _messages(api_client.post(merge, {"ids": []}, format="json")) == {"ids": "Must have at least 1 item."}
    intersects = {"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}}
    assert _messages(
        api_client.post(f"{users}/fields/intersects", {**intersects, "intersectionThreshold": 0}, format="json")
    ) == {"intersectionThreshold": "Must be at least 0.01."}
    assert _messages(api_client.patch("/services/config/api/configs", {"fieldsAutoMerge": "yes"}, format="json")) == {
        "fieldsAutoMerge": "Must be true or false."
    }
    too_many = [str(index) for index in range(1001)]
    assert _messages(api_client.post(f"{users}/fields/intersect", too_many, format="json")) == {
        "": "Must have at most 1000 items."
    }


def test_a_null_body_is_named_as_such(api_client, core_user):
    """DRF answered "No data provided", as if the client had sent nothing; an array body "This field may not be
    null.", as if it were one key of an object."""
    response = api_client.post("/services/usermanagement/api/users", "null", content_type="application/json")
    assert _messages(response) == {"": "Expected a JSON object, not null."}
    intersect = f"/services/fields/api/users/{core_user.pk}/fields/intersect"
    response = api_client.post(intersect, "null", content_type="application/json")
    assert _messages(response) == {"": "Must be a JSON array."}


def test_a_key_the_resource_answers_with_but_a_write_does_not_take_is_read_only(api_client, core_user, settings):
    """Sending back what a GET answered: `createdTime` was "Unknown field.", as a typo is, where a PUT's echo said
    "Read-only"."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    square = {"type": "Polygon", "coordinates": [[[0, 0], [0.01, 0], [0.01, 0.01], [0, 0]]]}
    fields = f"/services/fields/api/users/{core_user.pk}/fields"
    sent = {"geometry": square, "createdTime": "2024-01-01T00:00:00.000Z", "area": {}, "colour": "red"}
    assert _messages(api_client.post(fields, sent, format="json")) == {
        "createdTime": "Read-only: leave it out.",
        "area": "Read-only: leave it out.",
        "colour": "Unknown field.",
    }
    field = api_client.post(fields, {"geometry": square}, format="json").json()
    patched = api_client.patch(f"{fields}/{field['id']}", {"name": "x", "boundaries": []}, format="json")
    assert _messages(patched) == {"boundaries": "Read-only: leave it out."}
    machine = {"name": "8R", "originType": "USER_CREATED"}
    assert _messages(api_client.post(f"/services/beta/api/users/{core_user.pk}/machines", machine, format="json")) == {
        "originType": "Read-only: leave it out."
    }
    hook = {"events": ["fieldCreated"], "name": "w", "secret": "s" * 16, "url": "http://127.0.0.1:9/h", "id": "x"}
    assert _messages(api_client.post("/services/alerts/api/alerts/webhooks", hook, format="json")) == {
        "id": "Read-only: leave it out."
    }
