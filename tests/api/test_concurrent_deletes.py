"""Two DELETEs of one resource at once (PostgreSQL, an exact interleaving): the one that deletes it answers 204, the
other 404, as one after the other. Every request that had read the resource before the first deletion committed
answered 204 (twenty at once: up to twenty 204s); two deletions of one core user at once deadlocked (a 503)."""

import pytest
from django.db import transaction

from fields.models import Field
from platform_site.accounts.models import CoreUser
from tests.concurrency import needs_postgresql, request_later, run_meanwhile
from tests.factories import CoreUserFactory
from tests.fields.helpers import BASE, square
from tests.magiclinks.helpers import API, provider_app
from tests.tenancy import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)


def _made(client, url: str, body: dict) -> str:
    response = client.post(url, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


# Each kind: the URL of a new resource of `core_user`, made through the API
RESOURCES = {
    "field": lambda client, u: f"{BASE}/users/{u.id}/fields/"
    + _made(client, f"{BASE}/users/{u.id}/fields", {"geometry": square(10, 50)}),
    "machine": lambda client, u: f"/services/beta/api/users/{u.id}/machines/"
    + _made(client, f"/services/beta/api/users/{u.id}/machines", {"name": "Combine"}),
    "webhook": lambda client, u: "/services/alerts/api/alerts/webhooks/"
    + _made(
        client,
        "/services/alerts/api/alerts/webhooks",
        {"name": "ops", "url": "http://127.0.0.1:9/hook", "secret": "s3cret-s3cret-s3cret", "events": ["fieldCreated"]},
    ),
    "magic link": lambda client, u: f"{API}/magic-link/file-upload/"
    + _made(client, f"{API}/magic-link/users/{u.id}/file-upload", {}),
    "provider application": lambda client, u: f"{API}/provider-applications/{provider_app(u.owner).pk}",
    "core user": lambda client, u: f"/services/usermanagement/api/users/{u.id}",
}


@pytest.mark.parametrize("kind", list(RESOURCES))
def test_of_two_deletions_at_once_one_deletes_and_the_other_is_a_404(owner, make_client, settings, kind):
    needs_postgresql()
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    client = make_client(owner)
    core_user = CoreUserFactory(owner=owner)
    url = RESOURCES[kind](client, core_user)
    # The first deletion has run, not committed, when the second comes (it finds the resource, still there for it)
    with transaction.atomic():
        assert client.delete(url).status_code == 204
        second = run_meanwhile(request_later(make_client, owner, "delete", url))
    assert_problem(second(), 404, "notFound")
    assert_problem(client.delete(url), 404, "notFound")


def test_two_deletions_of_a_core_user_with_fields_take_turns(owner, make_client):
    """Both collected the user's rows and deleted them in different orders: a deadlock, which PostgreSQL broke by
    failing one of them (503 on the last of its attempts)."""
    needs_postgresql()
    client = make_client(owner)
    core_user = CoreUserFactory(owner=owner)
    for offset in range(5):
        _made(client, f"{BASE}/users/{core_user.id}/fields", {"geometry": square(10 + offset, 50)})
    url = f"/services/usermanagement/api/users/{core_user.id}"
    with transaction.atomic():
        assert client.delete(url).status_code == 204
        second = run_meanwhile(request_later(make_client, owner, "delete", url))
    assert_problem(second(), 404, "notFound")
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not Field.objects.exists()
