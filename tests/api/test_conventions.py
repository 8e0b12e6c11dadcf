"""Paging, sorting, errors and timestamps, shown on the core users list (every list shares them)."""

import ast
import json
import os
import re

import pytest

from tests.factories import CoreUserFactory
from tests.tenancy import assert_problem

URL = "/services/usermanagement/api/users"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


@pytest.fixture
def users(owner):
    return [CoreUserFactory(owner=owner, name=f"user {i:03d}", email=f"u{i}@example.com") for i in range(25)]


def _links(response) -> dict[str, str]:
    return dict((rel, url) for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', response["Link"]))


def test_default_page_is_20_with_total_and_links(api_client, users):
    response = api_client.get(URL)
    assert response.status_code == 200
    assert len(response.json()) == 20
    assert response["X-Total-Count"] == "25"
    links = _links(response)
    assert set(links) == {"first", "next", "last"}
    assert "page=1" in links["next"] and "page=1" in links["last"] and "page=0" in links["first"]


def test_pages_partition_the_list_without_overlap(api_client, users):
    seen = []
    for page in range(3):
        seen += [u["id"] for u in api_client.get(URL, {"page": page, "size": 10}).json()]
    assert len(seen) == len(set(seen)) == 25
    last = api_client.get(URL, {"page": 2, "size": 10})
    assert len(last.json()) == 5
    assert 'rel="next"' not in last["Link"] and 'rel="prev"' in last["Link"]
    past = api_client.get(URL, {"page": 9, "size": 10})
    assert past.json() == []
    links = _links(past)
    # From past the end, "prev" leads back to the last page there is, not to the empty page 8
    assert set(links) == {"first", "prev", "last"} and "page=2" in links["prev"] and "page=2" in links["last"]


def test_following_the_links_walks_the_list_in_pages_of_the_size_asked(api_client, users):
    first = api_client.get(URL, {"size": 10, "sort": "name"})
    links = _links(first)
    assert all("size=10" in url for url in links.values()), links
    following = api_client.get(links["next"])
    assert [u["name"] for u in following.json()] == [f"user {i:03d}" for i in range(10, 20)]
    assert "page=2" in _links(following)["next"]
    clamped = _links(api_client.get(URL, {"size": 1000}))
    assert all("size=100" in url and "size=1000" not in url for url in clamped.values()), clamped


def test_a_page_far_past_the_end_is_empty_with_the_total(api_client, users):
    """An offset past what the database can count was a 500 ("bigint out of range") on PostgreSQL."""
    response = api_client.get(URL, {"page": "9" * 30, "size": 100})
    assert response.status_code == 200 and response.json() == []
    assert response["X-Total-Count"] == "25"
    assert 'rel="last"' in response["Link"] and "page=0" in response["Link"]


def test_size_above_the_maximum_is_clamped(api_client, owner):
    for i in range(105):
        CoreUserFactory(owner=owner, name=f"n{i}")
    assert len(api_client.get(URL, {"size": 1000}).json()) == 100
    # However many digits: past Python's 4300 it was "is not an integer", echoing them all
    assert len(api_client.get(URL, {"size": "1" * 5000}).json()) == 100
    assert len(api_client.get(URL, {"size": "0" * 5000 + "7"}).json()) == 7


def test_a_page_of_more_digits_than_python_reads_is_past_the_end(api_client, users):
    response = api_client.get(URL, {"page": "9" * 5000})
    assert response.status_code == 200 and response.json() == []
    assert response["X-Total-Count"] == "25"
    body = assert_problem(api_client.get(URL, {"page": "-" + "9" * 5000}), 400, "validation")
    assert body["fieldErrors"][0]["message"] == "Must be at least 0."
    long_text = assert_problem(api_client.get(URL, {"size": "x" * 5000}), 400, "validation")
    assert len(long_text["fieldErrors"][0]["message"]) < 100


def test_pages_hold_the_rows_of_the_whole_ordering_in_turn(api_client, owner):
    """A page reads its rows' keys in the list's order, then those rows (`pagination.page_rows`): the order is the
    keys', whatever order the second query returns them in."""
    names = [f"user {i:02d}" for i in range(23)]
    for name in reversed(names):
        CoreUserFactory(owner=owner, name=name)
    for sort, expected in (("name", names), ("name,desc", names[::-1])):
        pages = [api_client.get(URL, {"sort": sort, "page": page, "size": 5}).json() for page in range(5)]
        assert [u["name"] for page in pages for u in page] == expected


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("page", "-1"),
        ("page", "one"),
        ("size", "0"),
        ("size", "2.5"),
        ("page", "1_0"),
        ("size", "\u0663"),
        ("page", "1e1"),
    ],
)
def test_bad_paging_values_are_400(api_client, param, value):
    body = assert_problem(api_client.get(URL, {param: value}), 400, "validation")
    assert body["fieldErrors"][0]["field"] == param


def test_a_query_parameter_given_twice_is_400_but_sort(api_client, core_user, users):
    """Which value counted was the last one's, silently (`?externalId=a&externalId=b` answered for b)."""
    problem = assert_problem(api_client.get(f"{URL}?externalId=a&externalId=b&size=5&size=6"), 400, "validation")
    assert sorted(e["field"] for e in problem["fieldErrors"]) == ["externalId", "size"]
    fields = f"/services/fields/api/fields?coreUserId={core_user.id}&coreUserId={core_user.id}"
    assert assert_problem(api_client.get(fields), 400)["fieldErrors"][0]["field"] == "coreUserId"
    assert api_client.get(f"{URL}?sort=name&sort=id,desc").status_code == 200


def test_sort_is_multi_valued_and_directional(api_client, owner):
    CoreUserFactory(owner=owner, name="b", email="2@x.io")
    CoreUserFactory(owner=owner, name="a", email="3@x.io")
    CoreUserFactory(owner=owner, name="b", email="1@x.io")
    names = lambda params: [(u["name"], u["email"]) for u in api_client.get(URL, params).json()]  # noqa: E731
    assert names({"sort": ["name,desc", "email"]}) == [("b", "1@x.io"), ("b", "2@x.io"), ("a", "3@x.io")]
    assert names({"sort": "email,desc"}) == [("a", "3@x.io"), ("b", "2@x.io"), ("b", "1@x.io")]


@pytest.mark.parametrize("direction", ["DESC", "Desc", " desc "])
def test_the_sort_direction_is_case_insensitive(api_client, owner, direction):
    for name in ("b", "c", "a"):
        CoreUserFactory(owner=owner, name=name)
    response = api_client.get(URL, {"sort": f"name,{direction}"})
    assert response.status_code == 200, response.content
    assert [u["name"] for u in response.json()] == ["c", "b", "a"]


def test_equal_sort_keys_are_ordered_by_id_so_pages_neither_repeat_nor_skip(api_client, owner):
    import uuid

    ids = [uuid.UUID(int=n) for n in (9, 7, 5, 3, 1)]
    for made in ids:  # stored in descending id order
        CoreUserFactory(owner=owner, id=made, name="Same name")
    for sort in ("name", "name,desc"):
        answered = [
            u["id"] for page in range(3) for u in api_client.get(URL, {"sort": sort, "page": page, "size": 2}).json()
        ]
        assert answered == [str(i) for i in sorted(ids)]


def test_every_error_of_a_list_query_is_answered_at_once(api_client, core_user, users, other_owner):
    """Filters, `sort`, `page` and `size` were checked where each is applied, and the first group at fault was
    answered alone: a client learned of its wrong page only once it had fixed its filter."""
    fields = "/services/fields/api/fields"
    query = {"type": "ROUND", "farmId": "x", "sort": "area", "page": "-1", "size": "0"}
    body = assert_problem(api_client.get(fields, query), 400, "validation")
    assert sorted(e["field"] for e in body["fieldErrors"]) == ["farmId", "page", "size", "sort", "type"], body
    paging = assert_problem(api_client.get(URL, {"sort": "password", "page": "x", "size": "y"}), 400, "validation")
    assert sorted(e["field"] for e in paging["fieldErrors"]) == ["page", "size", "sort"]
    # Another owner's core user is still a 404 before its query is read.
    machines = MACHINES.format(CoreUserFactory(owner=other_owner).id)
    assert_problem(api_client.get(machines, {"createdTime": "yesterday", "page": "-1"}), 404, "notFound")
    mine = assert_problem(api_client.get(MACHINES.format(core_user.id), {"createdTime": "today", "page": "-1"}), 400)
    assert sorted(e["field"] for e in mine["fieldErrors"]) == ["createdTime", "page"]
    # So is a machine or a field the list is of that does not exist (it was a 400 about the query)
    nothing = "00000000-0000-0000-0000-000000000000"
    for url in (
        f"{MACHINES.format(core_user.id)}/{nothing}/files",
        f"/services/fields/api/users/{core_user.id}/fields/nope/operations",
        f"/services/fields/api/users/{core_user.id}/fields/nope/operations/files",
    ):
        assert_problem(api_client.get(url, {"page": "x", "size": "0", "sort": "bogus"}), 404, "notFound")


def test_unknown_sort_property_is_400(api_client):
    body = assert_problem(api_client.get(URL, {"sort": "password,desc"}), 400, "validation")
    assert "password" in body["detail"]
    for names_nothing in ("desc", ",", " , asc"):
        assert_problem(api_client.get(URL, {"sort": names_nothing}), 400, "validation")


SORT_VALUES = [
    "",
    " ",
    "name",
    "name,desc",
    "name,DeSc",
    " name , asc ",
    "name,email",
    "name,,email,,desc",
    ",name",
    "name,",
    "name, desc ,",
    "email,name,asc",
    "desc",
    "asc",
    ",",
    " , asc",
    "password",
    "name,password",
    "name,desc,email",
    "name desc",
    "na,me",
    "name,descending",
    "desc,name",
    "name,asc,desc",
    "NAME",
    "name.desc",
    "externalId,desc",
]


@pytest.fixture(scope="module")
def documented_sort_pattern() -> str:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    (sort,) = [p for p in schema["paths"][URL]["get"]["parameters"] if p["name"] == "sort"]
    return sort["schema"]["items"]["pattern"]


@pytest.mark.parametrize("value", SORT_VALUES)
def test_the_documented_sort_pattern_takes_what_the_server_takes(api_client, documented_sort_pattern, value):
    """OpenAPI's `sort` says which values the list takes (a pattern over its properties), exactly: a generated
    client refusing what the server takes, or sending what it refuses, is a bug of the schema."""
    documented = re.search(documented_sort_pattern, value) is not None
    assert api_client.get(URL, {"sort": value}).status_code == (200 if documented else 400), value


def test_an_empty_sort_is_no_sort_as_an_empty_filter_is_no_filter(api_client, owner):
    """`sort=` was a 400 while an empty `page`, `size` or filter is taken as absent (a client building its query
    string from optional settings sends them so)."""
    CoreUserFactory(owner=owner, name="b")
    CoreUserFactory(owner=owner, name="a")
    plain = api_client.get(URL).json()
    for empty in ("", " ", ["", "name"]):
        response = api_client.get(URL, {"sort": empty})
        assert response.status_code == 200, response.content
        expected = sorted(plain, key=lambda user: user["name"]) if isinstance(empty, list) else plain
        assert response.json() == expected


def test_malformed_json_is_400_not_500(api_client):
    response = api_client.post(URL, data='{"name": ', content_type="application/json")
    assert_problem(response, 400, "malformedRequest")


def test_a_json_array_where_an_object_is_expected_is_400(api_client):
    body = assert_problem(api_client.post(URL, data="[1, 2]", content_type="application/json"), 400, "validation")
    # an error of the body as a whole names no field
    assert [error["field"] for error in body["fieldErrors"]] == [""]
    assert body["detail"] == body["fieldErrors"][0]["message"]


def test_a_problem_is_titled_by_its_status_and_its_detail_is_the_first_error(api_client, core_user):
    missing = assert_problem(api_client.get(f"{URL}/00000000-0000-0000-0000-000000000001"), 404, "notFound")
    assert missing["title"] == "Not Found"
    one = assert_problem(api_client.post(URL, {"email": "not-an-email"}, format="json"), 400, "validation")
    assert one["title"] == "Bad Request"
    assert [error["field"] for error in one["fieldErrors"]] == ["email"]
    assert one["detail"] == f"email: {one['fieldErrors'][0]['message']}"  # and nothing about more
    two = assert_problem(api_client.post(URL, {"email": "x", "name": "y" * 1000}, format="json"), 400)
    assert len(two["fieldErrors"]) == 2 and two["detail"].endswith(" (and 1 more)")
    taken = {"name": "Twin", "externalId": "same-id"}
    assert api_client.post(URL, taken, format="json").status_code == 201
    assert assert_problem(api_client.post(URL, taken, format="json"), 409)["title"] == "Conflict"


def test_wrong_media_type_is_415(api_client):
    assert_problem(api_client.post(URL, data="name=x", content_type="text/plain"), 415, "unsupportedMediaType")


def test_a_resource_taking_patch_says_which_patch_formats_it_takes(api_client, core_user):
    """RFC 5789 2.2, 3.1: `Accept-Patch` on the resource's OPTIONS and on a PATCH's 415 (neither said it)."""
    configs = f"/services/config/api/configs/{core_user.id}"
    options = api_client.options(configs)
    assert "PATCH" in options["Allow"] and options["Accept-Patch"] == "application/json"
    refused = api_client.patch(configs, '{"geoimagesShape": "SQUARE"}', content_type="application/merge-patch+json")
    assert_problem(refused, 415, "unsupportedMediaType")
    assert refused["Accept-Patch"] == "application/json"
    # A resource without PATCH says nothing of it
    users = api_client.options(URL)
    assert "PATCH" not in users["Allow"] and not users.has_header("Accept-Patch")
    assert not api_client.get(configs).has_header("Accept-Patch")
    changed = api_client.patch(configs, {"geoimagesShape": "SQUARE"}, format="json")
    assert changed.status_code == 200 and not changed.has_header("Accept-Patch")


def test_no_page_of_another_origin_may_call_the_api_from_a_browser(api_client, client, core_user):
    """No CORS (docs/decisions.md): a token is an API owner's secret, for its servers. A browser's preflight and its
    request from another origin get no `Access-Control-Allow-*`, so the browser withholds the answer."""
    origin = {"HTTP_ORIGIN": "https://farm-app.example"}
    preflight = client.options(
        f"{URL}/{core_user.id}",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization",
        **origin,
    )
    answered = api_client.get(f"{URL}/{core_user.id}", **origin)
    assert answered.status_code == 200
    for response in (preflight, answered):
        assert not [h for h in response.headers if h.lower().startswith("access-control-")], response.headers


def test_unknown_method_is_405_and_unknown_path_is_404(api_client, core_user):
    assert_problem(api_client.patch(f"{URL}/{core_user.id}", {}, format="json"), 405, "methodNotAllowed")
    assert_problem(api_client.get("/services/usermanagement/api/nothing-here"), 404, "notFound")


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/services/operations/api/nope"),
        ("get", "/services/operations/api/batch/"),
        ("post", "/services/fields/api/users/x/nothing"),
        ("get", "/api/nothing"),
        ("delete", "/services/"),
        ("get", "/services"),
        ("get", "/api"),
        ("get", "/"),
        ("get", "/nonexistent"),
        ("post", "/favicon.ico"),
        ("get", "/links/"),
        ("get", "/links/x/y/z"),
    ],
)
def test_an_unknown_url_is_a_problem_document_in_debug_mode_too(client, settings, debug, method, path):
    """`make run` runs in debug mode, where Django answered its HTML 404 page (listing every URL pattern) instead of
    the problem document: under the API prefixes until then, and everywhere else."""
    settings.DEBUG = debug
    assert_problem(getattr(client, method)(path), 404, "notFound")


def test_an_unknown_api_url_is_written_as_every_other_problem(client, api_client):
    """Compact UTF-8 JSON, as DRF writes every other problem (it had spaces after each colon and comma, and
    escaped what is not ASCII)."""
    answered = client.get("/api/n\u00f6thing-here")
    assert answered.content.startswith(b'{"type":"urn:problem:notFound","title":"Not Found","status":404,"detail":')
    assert '"path":"/api/n\u00f6thing-here"'.encode() in answered.content
    by_drf = api_client.get(f"{URL}/00000000-0000-0000-0000-000000000000")
    assert by_drf.content.startswith(b'{"type":"urn:problem:notFound","title":"Not Found","status":404,"detail":')


MACHINES = "/services/beta/api/users/{}/machines"


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("afterCreatedTime", "0001-01-01T00:00:00+01:00"),  # the year 0 in UTC
        ("createdTime", "9999-12-31T23:30:00-01:00"),  # the year 10000 in UTC
        ("beforeCreatedTime", "0001-01-01T00:30:00+01:00"),
    ],
)
def test_timestamps_outside_the_years_1_to_9999_in_utc_are_400(api_client, core_user, param, value):
    """Every timestamp filter shares this field: a 400 naming the parameter, never a 500."""
    body = assert_problem(api_client.get(MACHINES.format(core_user.id), {param: value}), 400, "validation")
    assert [e["field"] for e in body["fieldErrors"]] == [param], body


@pytest.mark.parametrize(
    "value",
    [
        "\u0662020-01-04T00:00:00Z",  # an Arabic-Indic 2: Django's parser read it as 2020
        "\uff12020-01-04T00:00:00Z",  # a full-width 2
        "2024-05-01x10:00:00",  # Python's fromisoformat takes any character between date and time
        "2024-05-01\u200310:00:00",  # an em space
    ],
)
def test_a_timestamp_filter_takes_iso_8601_in_ascii_only(api_client, core_user, value):
    body = assert_problem(api_client.get(MACHINES.format(core_user.id), {"createdTime": value}), 400, "validation")
    assert [e["field"] for e in body["fieldErrors"]] == ["createdTime"], body


def test_a_timestamp_filter_takes_a_lower_case_t_and_z_as_rfc_3339_allows(api_client, core_user):
    machine = api_client.post(MACHINES.format(core_user.id), {"name": "combine"}, format="json").json()
    created = machine["createdTime"]
    for value in (created, created.lower(), created.replace("T", " ")):
        listed = api_client.get(MACHINES.format(core_user.id), {"createdTime": value})
        assert listed.status_code == 200, listed.content
        assert [m["id"] for m in listed.json()] == [machine["id"]], value


@pytest.mark.parametrize("value", ["9999-12-31T23:59:59.999", "0001-01-01T00:00:00"])
def test_the_first_and_last_millisecond_there_is_are_filter_values(api_client, core_user, value):
    for param in ("createdTime", "afterCreatedTime", "beforeCreatedTime"):
        response = api_client.get(MACHINES.format(core_user.id), {param: value})
        assert response.status_code == 200, (param, response.content)


def test_timestamps_are_utc_with_milliseconds():
    from datetime import UTC, datetime, timedelta, timezone

    from platform_site.api.serializers import format_timestamp

    assert format_timestamp(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)) == "2026-01-02T03:04:05.678Z"
    east = timezone(timedelta(hours=2))
    assert format_timestamp(datetime(2026, 1, 2, 3, 0, 0, tzinfo=east)) == "2026-01-02T01:00:00.000Z"
    # Four digits of year always (strftime's %Y wrote the year 999 as "999")
    assert format_timestamp(datetime(999, 6, 1, 10, tzinfo=UTC)) == "0999-06-01T10:00:00.000Z"
    assert format_timestamp(datetime(1, 1, 2, tzinfo=UTC)) == "0001-01-02T00:00:00.000Z"


@pytest.mark.parametrize(
    ("method", "path", "accept", "status"),
    [
        ("post", "/api/schema/", "*/*", 405),
        ("delete", "/api/docs/", "*/*", 405),
        ("options", "/api/docs/", "*/*", 405),
        ("get", "/api/schema/", "image/png", 406),
        ("get", "/api/docs/", "application/json", 406),
    ],
)
def test_the_schema_and_docs_answer_their_problems_in_json(client, method, path, accept, status):
    """Their own renderers (YAML, the Swagger page's HTML) wrote these bodies: YAML or plain text under a
    problem+json Content-Type."""
    response = getattr(client, method)(path, HTTP_ACCEPT=accept)
    assert response.status_code == status and response["Content-Type"] == "application/problem+json"
    body = json.loads(response.content)
    assert (body["status"], body["type"]) == (status, f"urn:problem:{body['errorKey']}")


def test_openapi_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/services/usermanagement/api/users" in schema.content
    assert client.get("/api/docs/").status_code == 200


@pytest.mark.parametrize(("value", "media_type"), [("json", "application/vnd.oai.openapi+json"), ("yaml", None)])
def test_the_schema_takes_its_format_from_the_query_as_drf_spectacular_documents(client, value, media_type):
    """The one `?format=` the API takes (there is no override elsewhere: `URL_FORMAT_OVERRIDE` is None)."""
    schema = client.get("/api/schema/", {"format": value})
    assert schema.status_code == 200
    if value == "json":
        assert schema["Content-Type"].startswith(media_type)
        assert "/services/usermanagement/api/users" in json.loads(schema.content)["paths"]
    else:
        assert schema.content.startswith(b"openapi: ")
    assert_problem(client.get("/api/schema/", {"format": "xml"}), 404, "notFound")


@pytest.mark.parametrize(("trust", "scheme"), [("true", "https"), ("false", "http")])
def test_paging_links_behind_a_tls_proxy_follow_its_forwarded_proto(trust, scheme, owner, make_client):
    """`TRUST_X_FORWARDED_PROTO=true` (read by the settings at start-up) makes the `Link` headers https:// when
    the proxy says the client came in over TLS; without it the header is ignored (a client could send it)."""
    import subprocess
    import sys
    from pathlib import Path

    from django.test import override_settings

    script = "from django.conf import settings; import django; django.setup(); print(settings.SECURE_PROXY_SSL_HEADER)"
    env = {**os.environ, "TRUST_X_FORWARDED_PROTO": trust, "DJANGO_SETTINGS_MODULE": "platform_site.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True
    )
    header = ast.literal_eval(done.stdout.strip())  # a tuple, or None
    CoreUserFactory.create_batch(3, owner=owner)
    with override_settings(SECURE_PROXY_SSL_HEADER=header):
        response = make_client(owner).get(URL, {"size": 1}, HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    assert re.findall(r"<([a-z]+)://", response["Link"]) == [scheme] * 3


@pytest.mark.parametrize(("public", "secure"), [("https://api.example.com", True), ("http://127.0.0.1:8000", False)])
def test_cookies_are_https_only_when_the_api_is_served_over_tls(public, secure, client):
    """The admin's session cookie and the CSRF cookie (admin, magic link forms) are marked Secure when
    PUBLIC_BASE_URL is https:// (read at start-up; `manage.py check --deploy` warned of both)."""
    import subprocess
    import sys
    from pathlib import Path

    from django.test import override_settings

    script = (
        "from django.conf import settings; import django; django.setup(); "
        "print(settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)"
    )
    env = {**os.environ, "PUBLIC_BASE_URL": public, "DJANGO_SETTINGS_MODULE": "platform_site.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True
    )
    assert done.stdout.split() == [str(secure)] * 2, done.stderr[-2000:]
    with override_settings(CSRF_COOKIE_SECURE=secure):
        page = client.get("/admin/login/")
    assert bool(page.cookies["csrftoken"]["secure"]) is secure


@pytest.mark.parametrize("text", ["bell\u0007", "escape\u001b[31m", "del\u007f", "c1\u0085"])
def test_text_holding_control_characters_is_400_and_nothing_is_stored(api_client, core_user, text):
    """A BEL or an escape sequence stored in a name reached every client and terminal that showed it."""
    problem = assert_problem(api_client.post(URL, {"name": text}, format="json"), 400, "validation")
    assert problem["fieldErrors"][0]["field"] == "name" and "Control characters" in problem["detail"]
    square = {"type": "Polygon", "coordinates": [[[0, 0], [0.01, 0], [0.01, 0.01], [0, 0]]]}
    fields = f"/services/fields/api/users/{core_user.id}/fields"
    assert_problem(api_client.post(fields, {"name": text, "geometry": square}, format="json"), 400, "validation")
    machines = f"/services/beta/api/users/{core_user.id}/machines"
    assert_problem(api_client.post(machines, {"name": "8R", "model": text}, format="json"), 400, "validation")
    assert [u["id"] for u in api_client.get(URL).json()] == [str(core_user.id)]
    assert api_client.get(f"/services/fields/api/fields?coreUserId={core_user.id}").json() == []
    assert api_client.get(machines).json() == []


def test_tabs_and_line_breaks_are_text_and_a_secret_is_the_clients_bytes(api_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # (no lookup of the webhook's host: this machine may have no DNS)
    created = api_client.post(URL, {"name": "Jo\tSmith", "address": "1 Main St\r\nSpringfield"}, format="json")
    assert created.status_code == 201 and created.json()["address"] == "1 Main St\r\nSpringfield"
    secret = "s\u0001\u001bcret-of-16-characters"
    hook = {"name": "ops", "url": "https://example.com/h", "secret": secret, "events": ["fieldCreated"]}
    assert api_client.post("/services/alerts/api/alerts/webhooks", hook, format="json").status_code == 201


SQUARE = {"type": "Polygon", "coordinates": [[[0, 0], [0.01, 0], [0.01, 0.01], [0, 0.01], [0, 0]]]}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/services/usermanagement/api/users", {"name": "Ann"}),
        ("/services/fields/api/users/{user}/fields", {"id": "north:40", "geometry": SQUARE}),
        ("/services/fields/api/users/{user}/farms", {"name": "Home"}),
        ("/services/fields/api/users/{user}/growers", {"name": "Smith"}),
        ("/services/beta/api/users/{user}/machines", {"name": "8R 370"}),
        (
            "/services/alerts/api/alerts/webhooks",
            {"events": ["fieldCreated"], "name": "w", "secret": "s" * 16, "url": "http://127.0.0.1:9/hook"},
        ),
        ("/services/widgets/api/magic-link/file-upload", {"externalId": "grower-42"}),
        ("/services/widgets/api/magic-link/users/{user}/file-upload", {}),
        ("/services/config/api/configs/{user}", {"fieldsAutoMerge": True}),  # (the target itself: its first POST)
    ],
)
def test_a_201_names_the_address_of_what_it_created(api_client, core_user, settings, path, body):
    """RFC 9110 15.3.2: without a Location, a client takes the collection it posted to for the new resource. The
    address answers the resource (the link made under a core user's address is read among its kind's)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # (a receiver on loopback: CI resolves no public name)
    response = api_client.post(path.format(user=core_user.pk), body, format="json")
    assert response.status_code == 201, response.content
    location = response["Location"]
    assert location.startswith("http://testserver/services/")
    got = api_client.get(location.removeprefix("http://testserver"))
    assert got.status_code == 200
    created = response.json()
    assert got.json()["id"] == created["id"] if "id" in created else got.json() == created


def test_an_answer_of_an_owners_data_is_kept_by_no_cache_and_a_204_has_no_length(api_client, core_user):
    """No Cache-Control at all: a shared cache that did not know Authorization makes an answer private could serve it
    to another owner. A 204 had `Content-Length: 0`, which RFC 9110 8.6 forbids."""
    listed = api_client.get("/services/usermanagement/api/users")
    assert listed["Cache-Control"] == "no-store"
    deleted = api_client.delete(f"/services/usermanagement/api/users/{core_user.pk}")
    assert deleted.status_code == 204 and not deleted.has_header("Content-Length")
    assert api_client.get("/health")["Cache-Control"] == "no-store"  # (its own)
    refused = api_client.get("/services/usermanagement/api/users", HTTP_HOST="elsewhere.example")
    assert (refused.status_code, refused["Cache-Control"]) == (400, "no-store")  # (a host refused: outermost)


UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_every_answer_names_its_request_and_keeps_a_plain_id_the_client_sent(api_client, core_user, client):
    """`X-Request-Id` on every answer, a new one per request: a success, a 201, a problem, an unauthenticated one,
    and a host refused before any view. A plain id sent by the client (or a proxy) is kept, so that one id follows
    the request through every log; anything else sent is replaced, never echoed."""
    answers = [
        api_client.get(URL),
        api_client.post(URL, {"name": "n"}, format="json"),
        api_client.get(f"{URL}/nope"),
        client.get(URL),
        api_client.get(URL, HTTP_HOST="elsewhere.example"),
    ]
    assert [a.status_code for a in answers] == [200, 201, 404, 401, 400]
    ids = [a["X-Request-Id"] for a in answers]
    assert all(UUID_TEXT.fullmatch(i) for i in ids) and len(set(ids)) == len(ids), ids

    for plain in ("4bf92f3577b34da6a3ce929d0e0e4736", "req_01J9Z:abc.def-1", "x" * 128):
        assert api_client.get(URL, HTTP_X_REQUEST_ID=plain)["X-Request-Id"] == plain
    for odd in ("x" * 129, "a b", "a\tb", "<script>", "é", "a/links/b", ""):
        replaced = api_client.get(URL, HTTP_X_REQUEST_ID=odd)["X-Request-Id"]
        assert UUID_TEXT.fullmatch(replaced), (odd, replaced)


def test_a_500_names_its_request_id_which_its_logged_traceback_carries(api_client, core_user, monkeypatch):
    """The problem document of an unexpected error says it was logged; the log line (as the console handler writes
    it) starts with the same id as the answer's header, so the traceback a client's report points at can be found."""
    import io
    import logging

    from fields import views

    def broken(*args, **kwargs):
        raise RuntimeError("a fault of ours")

    monkeypatch.setattr(views, "fields_intersecting_rows", broken)
    [console] = [h for h in logging.getLogger().handlers if h.name == "console"]
    written = io.StringIO()
    monkeypatch.setattr(console, "stream", written)
    api_client.raise_request_exception = False
    geometry = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}
    answer = api_client.post(
        f"/services/fields/api/users/{core_user.id}/fields/intersects", {"geometry": geometry}, format="json"
    )
    problem = assert_problem(answer, 500, "internalError")
    served = answer["X-Request-Id"]
    assert problem["detail"] == f"An unexpected error occurred; it has been logged under the request id {served}."
    lines = written.getvalue().splitlines()
    [first] = [line for line in lines if "Internal Server Error" in line]
    # `<date> <time> <level> <logger>: [request <id>] <message>`
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} ERROR django\.request: \[request {served}\] "
        r"Internal Server Error: /services/fields/api/users/.*",
        first,
    ), first
    assert any("RuntimeError: a fault of ours" in line for line in lines)
    logging.getLogger("platform_site").warning("outside any request")
    assert written.getvalue().splitlines()[-1].endswith(" WARNING platform_site: outside any request")
