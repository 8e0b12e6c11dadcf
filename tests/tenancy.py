"""The shared cross-tenant contract: another API owner gets 404 for get, update and delete of a
resource, and never sees it in lists; the resource is unchanged afterwards. Every resource uses it."""

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
) -> None:
    """Another owner's client: 404 on GET / each update (method, body, and the same method with an invalid body) /
    DELETE of `detail_url` and on `extra_urls` (method, url, body); the id is absent from every list. The owner
    still sees it, unchanged."""
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
        response = other_client.get(url, {"size": 100})
        if response.status_code == 200:
            assert str(resource_id) not in _ids(response.json())
        else:
            assert response.status_code in (400, 404), response.content[:300]

    after = owner_client.get(detail_url)
    assert after.status_code == 200
    assert after.content == before.content
