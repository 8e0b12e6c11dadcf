"""The shared cross-tenant contract: another API owner gets 404 for get, update and delete of a
resource, and never sees it in lists; the resource is unchanged afterwards. Every resource uses it. A resource of
one core user also stays out of reach of the owner's other core users: its URLs with another core user's id in
place of its own name nothing (`core_user=`)."""

import re
from collections.abc import Iterable


def assert_problem(response, status: int, error_key: str | None = None) -> dict:
    """The response is a problem document with this status (and errorKey)."""
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    assert response["Content-Type"].startswith("application/problem+json"), response["Content-Type"]
    body = response.json()
    assert body["status"] == status
    assert {"type", "title", "detail", "path", "errorKey"} <= set(body)
    if error_key is not None:
        assert body["errorKey"] == error_key, body
    return body


def _largest_page(url: str) -> str:
    """The URL asking for pages of 100 (the test client's `get(url, data)` would drop the URL's own query)."""
    return f"{url}{'&' if '?' in url else '?'}size=100"


def _ids(body) -> set[str]:
    items = body.get("operations", body) if isinstance(body, dict) else body
    return {str(item.get("id")) for item in items}


def assert_cross_tenant_404(
    *,
    owner_client,
    other_client,
    detail_url: str,
    resource_id,
    list_urls: Iterable[str] = (),
    updates: Iterable[tuple[str, dict | list | None]] = (),
    delete: bool = True,
    extra_urls: Iterable[tuple[str, str, dict | list | None]] = (),
    core_user=None,
) -> None:
    """Another owner's client: 404 on GET / each update (method, body, and the same method with an invalid body) /
    DELETE of `detail_url` and on `extra_urls` (method, url, body); the id is absent from every list. With
    `core_user` (the resource's), the same again for the owner's client under a sibling core user of the same
    owner (see `_assert_not_under_sibling`). The owner still sees it, unchanged."""
    before = owner_client.get(detail_url)
    assert before.status_code == 200, before.content[:500]

    assert_problem(other_client.get(detail_url), 404, "notFound")
    for method, body in updates:
        assert_problem(getattr(other_client, method)(detail_url, body, format="json"), 404, "notFound")
        # the id is looked up before the body is judged: an invalid body is a 404 too, not a 400
        assert_problem(getattr(other_client, method)(detail_url, "not a body", format="json"), 404, "notFound")
    if delete:
        assert_problem(other_client.delete(detail_url), 404, "notFound")
    for method, url, body in extra_urls:
        assert_problem(getattr(other_client, method)(url, body, format="json"), 404, "notFound")
    for url in list_urls:
        _assert_not_listed(other_client.get(_largest_page(url)), str(resource_id), url)
    if core_user is not None:
        _assert_not_under_sibling(
            owner_client,
            core_user,
            str(resource_id),
            [("get", detail_url, None)]
            + [(method, detail_url, body) for method, body in updates]
            + ([("delete", detail_url, None)] if delete else [])
            + list(extra_urls)
            + [("get", url, None) for url in list_urls],
        )

    after = owner_client.get(detail_url)
    assert after.status_code == 200
    assert after.content == before.content


def _assert_not_under_sibling(owner_client, core_user, resource_id: str, calls) -> None:
    """Each call whose URL names `core_user` (a path segment or `?coreUserId=`), made by the owner with a new core
    user of the same owner named instead: a URL that names the resource (a path segment or a query value) is a 404
    (also with an invalid body); a GET of any other such URL (a list, a search) is a 200 without the resource, or
    a 400/404. POSTs to collections are not tried: under the sibling they may rightly create. At least one call must
    name `core_user`."""
    from tests.factories import CoreUserFactory

    sibling = str(CoreUserFactory(owner=core_user.owner).id)
    tried = 0
    for method, url, body in calls:
        if str(core_user.id) not in url:
            continue
        url = url.replace(str(core_user.id), sibling)
        call = getattr(owner_client, method)
        if resource_id in re.split(r"[/?&=]", url):
            tried += 1
            assert_problem(call(url, body, format="json"), 404, "notFound")
            if method in ("post", "put", "patch"):
                assert_problem(call(url, "not a body", format="json"), 404, "notFound")
        elif method == "get":
            tried += 1
            _assert_not_listed(call(_largest_page(url)), resource_id, url)
    assert tried, "core_user was given but no URL names it"


def _assert_not_listed(response, resource_id: str, url: str) -> None:
    """A list (or a search) answered without the resource, or refused (400/404)."""
    if response.status_code != 200:
        assert response.status_code in (400, 404), response.content[:300]
        return
    body = response.json()
    listed = isinstance(body, list) or (isinstance(body, dict) and "operations" in body)
    assert resource_id not in (_ids(body) if listed else response.content.decode()), url
