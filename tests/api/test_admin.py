"""The admin follows the request path's rule, "nothing but a service writes": the rows the services own are shown,
never added or changed there (a change would skip validation, derived keys and events); what it deletes, it deletes
through the service. What an owner sets up itself stays editable, never moved to another owner."""

import re
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from assets.models import Implement, ImplementFile, Machine, MachineFile, Operator, OperatorFile
from assets.services import machine_create
from catalogs.models import Product, ProductFile, Variety, VarietyFile
from configs.services import config_owner_update
from conversion.models import File
from magiclinks.models import MagicLink
from magiclinks.services import magic_link_create
from operations.models import Operation
from platform_site.accounts.models import CoreUser, ProviderApplication
from tests.adminforms import form_data, page_queries
from tests.factories import OwnerFactory
from tests.magiclinks.helpers import provider_app
from webhooks.models import Webhook

# A token URL on a public address: a name that resolves nowhere is refused where private URLs are (the PostGIS phase).
PUBLIC_TOKEN_URL = "https://93.184.215.14/token"

pytestmark = [pytest.mark.embedded]

# Every model the services own (fields, boundaries, farms and growers: tests/fields/test_admin.py).
SERVICE_OWNED = [
    "assets/machine",
    "assets/machinefile",
    "assets/implement",
    "assets/implementfile",
    "assets/operator",
    "assets/operatorfile",
    "catalogs/product",
    "catalogs/productfile",
    "catalogs/variety",
    "catalogs/varietyfile",
    "configs/configuration",
    "operations/operation",
    "operations/operationcrop",
    "webhooks/delivery",
    "magiclinks/magiclink",
    "magiclinks/linkupload",
    "magiclinks/linkauthorization",
]


@pytest.fixture
def superuser_client(db):
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-password"))
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("model", SERVICE_OWNED)
def test_rows_the_services_own_are_not_added_here(superuser_client, model):
    assert superuser_client.get(f"/admin/{model}/add/").status_code == 403
    assert superuser_client.post(f"/admin/{model}/add/", {}).status_code == 403


@pytest.mark.django_db
def test_a_machine_is_shown_not_changed(superuser_client, core_user):
    machine = machine_create(core_user=core_user, name="Tractor", serial_number="SN-1")
    url = f"/admin/assets/machine/{machine.pk}/change/"
    page = superuser_client.get(url)
    assert (
        page.status_code == 200
        and "SN-1" in page.content.decode()
        and 'name="serial_number"' not in page.content.decode()
    )
    # Changing its serial number here would leave the key machines are pooled by as it was.
    assert superuser_client.post(url, {"name": "Other", "serial_number": "SN-2"}).status_code == 403
    stored = Machine.objects.get(pk=machine.pk)
    assert (stored.name, stored.serial_number) == ("Tractor", "SN-1")


@pytest.mark.django_db
def test_a_configuration_is_shown_not_changed(superuser_client, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    configuration = owner.configurations.get(core_user=None)
    url = f"/admin/configs/configuration/{configuration.pk}/change/"
    assert superuser_client.get(url).status_code == 200
    response = superuser_client.post(url, {"owner": OwnerFactory().pk, "entries": '{"fieldsAutoMerge": false}'})
    assert response.status_code == 403
    configuration.refresh_from_db()
    assert (configuration.owner_id, configuration.entries["fieldsAutoMerge"]) == (owner.pk, True)


def test_a_machine_deleted_here_is_announced(
    transactional_db, owner, core_user, superuser_client, webhook_receiver, subscribe
):
    subscribe(owner, webhook_receiver, ["machineDeleted"])
    machine = machine_create(core_user=core_user, name="Tractor")
    url = f"/admin/assets/machine/{machine.pk}/delete/"
    assert superuser_client.get(url).status_code == 200
    assert superuser_client.post(url, {"post": "yes"}).status_code == 302
    assert not Machine.objects.filter(pk=machine.pk).exists()
    webhook_receiver.wait_for(1)
    assert [(e["type"], e["machineId"]) for e in webhook_receiver.events()] == [("machineDeleted", str(machine.pk))]


@pytest.mark.django_db
def test_a_machine_pooled_from_files_is_not_deleted_here(superuser_client, core_user):
    machine = machine_create(core_user=core_user, name="Tractor")
    Machine.objects.filter(pk=machine.pk).update(origin_type="FILE_POOLED")
    assert superuser_client.post(f"/admin/assets/machine/{machine.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Machine.objects.filter(pk=machine.pk).exists()


@pytest.mark.django_db
def test_a_magic_link_is_revoked_here_through_the_service(superuser_client, core_user, client):
    link, token = magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD)
    assert client.get(f"/links/{token}").status_code == 200
    response = superuser_client.post(
        "/admin/magiclinks/magiclink/", {"action": "revoke", "_selected_action": [str(link.pk)]}
    )
    assert response.status_code == 302
    assert client.get(f"/links/{token}").status_code == 410
    assert superuser_client.post(f"/admin/magiclinks/magiclink/{link.pk}/delete/", {"post": "yes"}).status_code == 403
    assert MagicLink.objects.filter(pk=link.pk).exists()


@pytest.mark.django_db
def test_a_core_user_or_webhook_is_not_moved_to_another_owner(superuser_client, owner, core_user, subscribe):
    stranger = OwnerFactory()
    url = f"/admin/accounts/coreuser/{core_user.pk}/change/"
    page = superuser_client.get(url)
    assert page.status_code == 200 and 'name="name"' in page.content.decode()  # an owner's own: editable
    response = superuser_client.post(
        url,
        {
            "owner": stranger.pk,
            "name": "Renamed",
            "email": core_user.email or "",
            "external_id": core_user.external_id or "",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    stored = CoreUser.objects.get(pk=core_user.pk)
    assert (stored.owner_id, stored.name) == (owner.pk, "Renamed")

    class Nowhere:
        url = "https://example.com/hook"

    webhook = subscribe(owner, Nowhere, ["fieldCreated"])
    url = f"/admin/webhooks/webhook/{webhook.pk}/change/"
    data = form_data(superuser_client.get(url))
    assert superuser_client.post(url, {**data, "owner": stranger.pk, "name": "Moved"}).status_code == 302
    stored = Webhook.objects.get(pk=webhook.pk)
    assert (stored.owner_id, stored.name) == (owner.pk, "Moved")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "private",
    ["http://127.0.0.1/hook", "https://10.1.2.3/hook", "http://[64:ff9b::a9fe:a9fe]/latest/meta-data"],
)
def test_urls_we_call_are_refused_here_as_through_the_api_when_they_point_into_our_network(
    superuser_client, owner, subscribe, settings, private
):
    from platform_site.accounts.models import ProviderApplication

    class Public:
        url = "https://93.184.215.14/hook"

    webhook = subscribe(owner, Public, ["fieldCreated"])
    application = provider_app(owner, "ProviderA", token_url=PUBLIC_TOKEN_URL, scopes=[])
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False  # (as deployed)
    changes = [
        (f"/admin/webhooks/webhook/{webhook.pk}/change/", "url"),
        (f"/admin/accounts/providerapplication/{application.pk}/change/", "token_url"),
    ]
    for url, name in changes:
        data = {**form_data(superuser_client.get(url)), "client_secret": ""}
        response = superuser_client.post(url, {**data, name: private})
        assert response.status_code == 200, url
        [message] = response.context["adminform"].form.errors[name]
        assert "non-public address" in message
        # A public address is taken (another token server with the secret typed again)
        data["client_secret"] = "typed again"
        assert superuser_client.post(url, {**data, name: "https://93.184.215.15/x"}).status_code == 302, url
    assert Webhook.objects.get(pk=webhook.pk).url == "https://93.184.215.15/x"
    assert ProviderApplication.objects.get(pk=application.pk).token_url == "https://93.184.215.15/x"
    # A new webhook too
    add = {
        **form_data(superuser_client.get("/admin/webhooks/webhook/add/")),
        "owner": owner.pk, "name": "new", "url": private, "secret": "s3cret-s3cret-s3cret",
    }  # fmt: skip
    response = superuser_client.post("/admin/webhooks/webhook/add/", add)
    assert response.status_code == 200 and "non-public address" in response.content.decode()
    assert Webhook.objects.count() == 1


@pytest.mark.django_db
def test_an_owners_uniqueness_rules_are_form_errors_not_500s(superuser_client, owner):
    from platform_site.accounts.services import provider_application_create

    taken = CoreUser.objects.create(owner=owner, name="A", external_id="ext-1")
    other = CoreUser.objects.create(owner=owner, name="B", external_id="ext-2")
    url = f"/admin/accounts/coreuser/{other.pk}/change/"
    response = superuser_client.post(url, {**form_data(superuser_client.get(url)), "external_id": "ext-1"})
    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == [
        "Already used by another core user of this API owner."
    ]
    assert CoreUser.objects.get(pk=other.pk).external_id == "ext-2" and taken.external_id == "ext-1"

    values = {"client_id": "c", "client_secret": "s", "authorize_url": "https://p.example/a",
              "token_url": "https://93.184.215.14/t", "scopes": []}  # fmt: skip
    provider_application_create(owner=owner, provider="ProviderA", **values)
    add = "/admin/accounts/providerapplication/add/"
    response = superuser_client.post(add, {**values, "owner": owner.pk, "provider": "ProviderA", "scopes": "[]"})
    assert response.status_code == 200 and response.context["adminform"].form.errors
    assert ProviderApplication.objects.filter(owner=owner).count() == 1


@pytest.mark.django_db
def test_a_provider_applications_provider_is_fixed_here_as_through_the_api(superuser_client, owner):
    """The API's PUT names no provider: the owner's credentials and links name it."""

    application = provider_app(owner, "ProviderB", token_url=PUBLIC_TOKEN_URL, scopes=[])
    url = f"/admin/accounts/providerapplication/{application.pk}/change/"
    page = superuser_client.get(url)
    assert page.context["adminform"].form.fields["provider"].disabled
    data = {**form_data(page), "provider": "ProviderC", "client_id": "changed", "client_secret": ""}
    assert superuser_client.post(url, data).status_code == 302
    application.refresh_from_db()
    assert (application.provider, application.client_id) == ("ProviderB", "changed")


@pytest.mark.django_db
def test_a_token_url_moved_to_another_server_needs_the_secret_again_here_as_through_the_api(superuser_client, owner):
    application = provider_app(owner, "ProviderB", token_url=PUBLIC_TOKEN_URL, client_secret="kept", scopes=[])
    url = f"/admin/accounts/providerapplication/{application.pk}/change/"
    data = {**form_data(superuser_client.get(url)), "client_secret": ""}
    moved = PUBLIC_TOKEN_URL.replace("93.184.215.14", "93.184.215.15")
    response = superuser_client.post(url, {**data, "token_url": moved})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["client_secret"] == [
        "Required when the token URL names another server: the stored secret goes only where it was given for."
    ]
    application.refresh_from_db()
    assert (application.token_url, application.client_secret) == (PUBLIC_TOKEN_URL, "kept")
    # Another path on the same server keeps the secret; another server with the secret typed takes it
    assert superuser_client.post(url, {**data, "token_url": PUBLIC_TOKEN_URL + "/v2"}).status_code == 302
    application.refresh_from_db()
    assert (application.token_url, application.client_secret) == (PUBLIC_TOKEN_URL + "/v2", "kept")
    assert superuser_client.post(url, {**data, "token_url": moved, "client_secret": "new"}).status_code == 302
    application.refresh_from_db()
    assert (application.token_url, application.client_secret) == (moved, "new")


@pytest.mark.django_db
def test_a_core_users_email_is_an_address_here_as_through_the_api(superuser_client, owner):
    core_user = CoreUser.objects.create(owner=owner, name="A", email="a@example.com")
    url = f"/admin/accounts/coreuser/{core_user.pk}/change/"
    data = form_data(superuser_client.get(url))
    for refused in ("not an email", "a@", f"{'a' * 250}@b.cd"):
        response = superuser_client.post(url, {**data, "email": refused})
        assert response.status_code == 200 and response.context["adminform"].form.errors["email"], refused
    assert CoreUser.objects.get(pk=core_user.pk).email == "a@example.com"
    for taken in ("b@example.com", ""):
        assert superuser_client.post(url, {**data, "email": taken}).status_code == 302
        assert CoreUser.objects.get(pk=core_user.pk).email == taken
    # A magic link's user has its externalId as email: kept, as a PUT sending it back keeps it
    CoreUser.objects.filter(pk=core_user.pk).update(email="ext-42")
    data = form_data(superuser_client.get(url))
    assert superuser_client.post(url, {**data, "name": "Renamed"}).status_code == 302
    assert CoreUser.objects.get(pk=core_user.pk).email == "ext-42"


def test_an_owner_a_core_user_and_a_webhook_are_deleted_here_with_what_is_theirs(
    transactional_db, superuser_client, owner, core_user, api_client, subscribe, webhook_receiver
):
    from fields.models import Field
    from tests.fields.helpers import create_field, square

    # Given a core user with a field, and a webhook that has delivered its event
    webhook = subscribe(owner, webhook_receiver, ["fieldCreated"])
    create_field(api_client, core_user, square(0, 0))
    webhook_receiver.wait_for(1)
    assert webhook.deliveries.exists()
    # Each deletion asks for confirmation (nothing of theirs is refused) and is done
    for url in (f"/admin/webhooks/webhook/{webhook.pk}/delete/", f"/admin/accounts/coreuser/{core_user.pk}/delete/"):
        page = superuser_client.get(url)
        assert page.status_code == 200 and not page.context["perms_lacking"], url
        assert superuser_client.post(url, {"post": "yes"}).status_code == 302, url
    assert not Webhook.objects.filter(pk=webhook.pk).exists()
    assert not CoreUser.objects.filter(pk=core_user.pk).exists() and not Field.objects.exists()
    # An owner goes with its core users
    other = CoreUser.objects.create(owner=owner, name="Other")
    create_field(api_client, other, square(1, 1))
    url = f"/admin/auth/user/{owner.pk}/delete/"
    assert not superuser_client.get(url).context["perms_lacking"]
    assert superuser_client.post(url, {"post": "yes"}).status_code == 302
    assert not get_user_model().objects.filter(pk=owner.pk).exists() and not Field.objects.exists()


@pytest.mark.django_db
def test_deleting_several_owners_at_once_is_all_or_none(superuser_client, monkeypatch):
    from platform_site.accounts import services

    owners = [OwnerFactory(), OwnerFactory()]
    for owner in owners:
        CoreUser.objects.create(owner=owner, name="User")
    # The second owner's deletion fails half-way (after the first owner's went through)
    calls, delete = [], services.core_user_delete

    def failing_second(*, core_user):
        calls.append(core_user.owner_id)
        if len(calls) == 2:
            raise RuntimeError("the database went away")
        delete(core_user=core_user)

    monkeypatch.setattr(services, "core_user_delete", failing_second)
    data = {"action": "delete_selected", "_selected_action": [owner.pk for owner in owners], "post": "yes"}
    with pytest.raises(RuntimeError):
        superuser_client.post("/admin/auth/user/", data)
    assert len(calls) == 2
    assert get_user_model().objects.filter(pk__in=[o.pk for o in owners]).count() == 2
    assert CoreUser.objects.filter(owner__in=owners).count() == 2
    # Without the failure both go
    monkeypatch.setattr(services, "core_user_delete", delete)
    assert superuser_client.post("/admin/auth/user/", data).status_code == 302
    assert not get_user_model().objects.filter(pk__in=[o.pk for o in owners]).exists()


@pytest.mark.django_db
def test_staff_without_the_delete_permission_of_what_goes_with_a_core_user_cannot_delete_it(
    owner, core_user, api_client
):
    from django.contrib.auth.models import Permission

    from tests.fields.helpers import create_field, square

    create_field(api_client, core_user, square(0, 0))
    staff = get_user_model().objects.create_user("staff", "staff@example.com", "staff-password", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_coreuser", "delete_coreuser"]))
    client = Client()
    client.force_login(staff)
    url = f"/admin/accounts/coreuser/{core_user.pk}/delete/"
    assert "field" in client.get(url).context["perms_lacking"]
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert CoreUser.objects.filter(pk=core_user.pk).exists()
    # Given every delete permission, the staff user may
    staff.user_permissions.add(*Permission.objects.filter(codename__startswith="delete_"))
    staff = get_user_model().objects.get(pk=staff.pk)  # (permissions are cached on the instance)
    client.force_login(staff)
    assert not client.get(url).context["perms_lacking"]
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not CoreUser.objects.filter(pk=core_user.pk).exists()


@pytest.mark.django_db
def test_an_event_another_webhook_of_the_owner_listens_to_is_a_form_error(superuser_client, owner, subscribe):
    class Nowhere:
        url = "https://example.com/hook"

    subscribe(owner, Nowhere, ["fieldCreated"])
    data = {
        **form_data(superuser_client.get("/admin/webhooks/webhook/add/")),
        "owner": owner.pk,
        "name": "second",
        "url": "https://example.com/second",
        "secret": "s3cret-s3cret-s3cret",
        "subscriptions-TOTAL_FORMS": 1,
        "subscriptions-0-event": "fieldCreated",
    }
    response = superuser_client.post("/admin/webhooks/webhook/add/", data)
    assert response.status_code == 200
    assert "Another webhook of this owner listens to fieldCreated already." in response.content.decode()
    response = superuser_client.post(
        "/admin/webhooks/webhook/add/",
        {
            **data,
            "subscriptions-TOTAL_FORMS": 2,
            "subscriptions-0-event": "fieldUpdated",
            "subscriptions-1-event": "fieldUpdated",
        },
    )
    assert response.status_code == 200 and "Listed twice: fieldUpdated." in response.content.decode()
    assert Webhook.objects.count() == 1
    # A short secret is refused as the API refuses it
    response = superuser_client.post(
        "/admin/webhooks/webhook/add/", {**data, "subscriptions-0-event": "fieldUpdated", "secret": "x" * 15}
    )
    assert response.status_code == 200 and Webhook.objects.count() == 1
    [message] = response.context["adminform"].form.errors["secret"]
    assert "at least 16 characters" in message
    response = superuser_client.post("/admin/webhooks/webhook/add/", {**data, "subscriptions-0-event": "fieldUpdated"})
    assert response.status_code == 302 and Webhook.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_deleting_two_webhooks_while_a_change_announces_to_both_waits_for_it(owner, core_user, subscribe, monkeypatch):
    """The bulk deletion (one transaction) locked the second webhook, then waited for the first, which the change
    kept while it went on to announce to the second: a deadlock, the deletion a 500 and rolled back."""
    from django.db import transaction

    from fields.geometry import parse_multipolygon
    from fields.models import Field
    from fields.services import writes
    from tests.concurrency import needs_postgresql, run_meanwhile
    from tests.fields.helpers import square

    class Nowhere:
        url = "http://127.0.0.1:9/hook"

    needs_postgresql()
    # fieldCreated goes to the webhook of the lower id (announced first), mergedFieldCreated to the other (later)
    while True:
        low, high = subscribe(owner, Nowhere, ["fieldCreated"]), subscribe(owner, Nowhere, ["mergedFieldCreated"])
        if low.pk < high.pk:
            break
        Webhook.objects.all().delete()
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    writes.field_create(core_user=core_user, geometry=parse_multipolygon(square(10, 50)))
    admin = Client(raise_request_exception=False)
    admin.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-password"))
    data = {"action": "delete_selected", "_selected_action": [str(low.pk), str(high.pk)], "post": "yes"}
    deletion, merge = {}, writes.after_boundary_change

    def delete_before_the_merge(field):  # fieldCreated announced; mergedFieldCreated to come
        deletion["answer"] = run_meanwhile(lambda: admin.post("/admin/webhooks/webhook/", data))
        return merge(field)

    monkeypatch.setattr(writes, "after_boundary_change", delete_before_the_merge)
    with transaction.atomic():
        writes.field_create(core_user=core_user, geometry=parse_multipolygon(square(10.005, 50)))
    assert deletion["answer"]().status_code == 302
    assert not Webhook.objects.exists() and Field.objects.count() == 3


def test_every_admin_form_refuses_control_characters_as_the_api_does():
    """The rule lives in one form mixin: an admin registered without it would store what no client may send."""
    from django.contrib import admin

    from platform_site.accounts.admin import AdminTextRulesMixin

    for model, model_admin in admin.site._registry.items():
        forms = [model_admin.form, getattr(model_admin, "add_form", model_admin.form)]
        forms += [inline.form for inline in model_admin.inlines]
        assert all(issubclass(form, AdminTextRulesMixin) for form in forms), model._meta.label


@pytest.mark.django_db
@pytest.mark.parametrize("control", ["\x07", "\x1b[31m", "\x7f", "\x85"])
def test_text_with_control_characters_is_a_form_error_here_as_it_is_a_400_through_the_api(
    superuser_client, owner, core_user, subscribe, control
):
    class Nowhere:
        url = "https://example.com/hook"

    webhook = subscribe(owner, Nowhere, ["fieldCreated"])
    application = provider_app(owner, "ProviderA", token_url=PUBLIC_TOKEN_URL, scopes=[])
    changes = [
        (f"/admin/accounts/coreuser/{core_user.pk}/change/", "name"),
        (f"/admin/accounts/coreuser/{core_user.pk}/change/", "external_id"),
        (f"/admin/webhooks/webhook/{webhook.pk}/change/", "name"),
        (f"/admin/accounts/providerapplication/{application.pk}/change/", "client_id"),
    ]
    for url, name in changes:
        data = {**form_data(superuser_client.get(url)), "client_secret": ""}
        response = superuser_client.post(url, {**data, name: f"bad{control}name"})
        assert response.status_code == 200, (url, name)
        assert response.context["adminform"].form.errors[name] == [
            "Control characters are not allowed (tab and line breaks are)."
        ], (url, name)
        # Tab and line breaks are text (a client may send them too)
        assert superuser_client.post(url, {**data, name: "good\tname"}).status_code == 302, (url, name)
    stored = CoreUser.objects.get(pk=core_user.pk)
    assert (stored.name, stored.external_id) == ("good\tname", "good\tname")
    assert Webhook.objects.get(pk=webhook.pk).name == "good\tname"
    # Django's own forms too: an owner's
    response = superuser_client.post(f"/admin/auth/user/{owner.pk}/change/", {"first_name": f"bad{control}name"})
    assert "Control characters are not allowed" in str(response.context["adminform"].form.errors["first_name"])
    # A secret is the typist's bytes, as through the API
    url = f"/admin/accounts/providerapplication/{application.pk}/change/"
    data = form_data(superuser_client.get(url))
    assert superuser_client.post(url, {**data, "client_secret": f"s{control}"}).status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("scopes", "null", "A list of scopes is required"),
        ("scopes", '"files"', "A list of scopes is required"),
        ("scopes", '{"files": true}', "A list of scopes is required"),
        ("scopes", "[1, 2]", "A scope is a string: 1 is not."),
        ("scopes", '["files offline_access"]', "A scope is one token"),
        ("scopes", '["files\\"x"]', "A scope is one token"),
        ("scopes", f'["{"s" * 256}"]', "at most 255 characters"),
        ("authorize_url", "ftp://p.example/a", "Only http and https URLs are allowed."),
        ("token_url", "ftp://p.example/t", "Only http and https URLs are allowed."),
    ],
)
def test_a_provider_application_is_refused_here_what_the_api_refuses(
    superuser_client, owner, api_client, name, value, message
):
    """Any JSON was stored as scopes: `null` was a 500, `[1, 2]` made the connect page a 500, a string was listed as
    a string; an ftp: authorization page was taken."""
    add = "/admin/accounts/providerapplication/add/"
    values = {"owner": owner.pk, "provider": "ProviderA", "client_id": "c", "client_secret": "s",
              "authorize_url": "https://p.example/a", "token_url": "https://93.184.215.14/t",
              "scopes": '["files", "offline_access"]'}  # fmt: skip
    response = superuser_client.post(add, {**values, name: value})
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors[name]
    assert message in error
    # As the API takes it: a list of tokens, listed as such; left empty, no scopes
    assert superuser_client.post(add, values).status_code == 302
    [listed] = api_client.get("/services/widgets/api/provider-applications").json()
    assert (listed["scopes"], listed["authorizeUrl"]) == (["files", "offline_access"], "https://p.example/a")
    url = f"/admin/accounts/providerapplication/{listed['id']}/change/"
    assert superuser_client.post(url, {**values, "client_secret": "", "scopes": ""}).status_code == 302
    assert api_client.get("/services/widgets/api/provider-applications").json()[0]["scopes"] == []


@pytest.mark.django_db
def test_a_webhook_listens_to_at_least_one_event_here_as_through_the_api(superuser_client, owner, subscribe):
    add = "/admin/webhooks/webhook/add/"
    data = {
        **form_data(superuser_client.get(add)),
        "owner": owner.pk, "name": "new", "url": "https://example.com/new", "secret": "s3cret-s3cret-s3cret",
    }  # fmt: skip
    response = superuser_client.post(add, data)
    assert response.status_code == 200 and "A webhook listens to at least one event." in response.content.decode()
    assert not Webhook.objects.exists()
    # Nor can an existing one lose its last event
    webhook = subscribe(owner, type("Nowhere", (), {"url": "https://example.com/hook"}), ["fieldCreated"])
    url = f"/admin/webhooks/webhook/{webhook.pk}/change/"
    response = superuser_client.post(url, {**form_data(superuser_client.get(url)), "subscriptions-0-DELETE": "on"})
    assert response.status_code == 200 and "A webhook listens to at least one event." in response.content.decode()
    assert list(webhook.subscriptions.values_list("event", flat=True)) == ["fieldCreated"]
    # One event is enough
    assert superuser_client.post(add, {**data, "subscriptions-0-event": "fieldUpdated"}).status_code == 302


@pytest.mark.django_db
def test_the_configuration_list_queries_alike_however_many_configurations_it_shows(superuser_client):
    from configs.models import Configuration
    from tests.factories import CoreUserFactory

    def configuration():
        core_user = CoreUserFactory()
        Configuration.objects.create(owner=core_user.owner, core_user=core_user, entries={})

    configuration()
    one = page_queries(superuser_client, "/admin/configs/configuration/")
    for _ in range(10):
        configuration()
    assert page_queries(superuser_client, "/admin/configs/configuration/") == one


def _linked_rows(core_user, kind: str, count: int):
    """A row of `kind` (its admin's path) with `count` files linked, a minute apart, the newest last; and the ids of
    those files, the newest first."""
    parents = {
        "assets/machine": (lambda: Machine.objects.create(core_user=core_user, name="M"), MachineFile, "machine"),
        "assets/implement": (
            lambda: Implement.objects.create(core_user=core_user, name="I", origin_type="FILE_POOLED"),
            ImplementFile,
            "implement",
        ),
        "assets/operator": (
            lambda: Operator.objects.create(core_user=core_user, name="O", origin_type="FILE_POOLED"),
            OperatorFile,
            "operator",
        ),
        "catalogs/product": (
            lambda: Product.objects.create(core_user=core_user, name="P", normalized_name=f"p{count}"),
            ProductFile,
            "product",
        ),
        "catalogs/variety": (
            lambda: Variety.objects.create(core_user=core_user, name="V", normalized_name=f"v{count}"),
            VarietyFile,
            "variety",
        ),
    }
    make_parent, link, key = parents[kind]
    parent = make_parent()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    extra = {"core_user": core_user} if link is MachineFile else {}
    links = link.objects.bulk_create(
        link(**{key: parent}, core_file_id=uuid4(), created_time=start + timedelta(minutes=n), **extra)
        for n in range(count)
    )
    return parent, [str(row.core_file_id) for row in reversed(links)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind", ["assets/machine", "assets/implement", "assets/operator", "catalogs/product", "catalogs/variety"]
)
def test_a_page_shows_the_latest_files_of_its_row_and_links_to_them_all(superuser_client, core_user, kind):
    """A machine of 5,000 files, or a product in as many, took 13-17 s and 5-9 MB to show: every file was a row."""
    few, _ = _linked_rows(core_user, kind, 1)
    queries = page_queries(superuser_client, f"/admin/{kind}/{few.pk}/change/")
    parent, newest_first = _linked_rows(core_user, kind, 13)
    url = f"/admin/{kind}/{parent.pk}/change/"
    page = superuser_client.get(url).content.decode()
    shown = [file_id for file_id in newest_first if file_id in page]
    assert shown == newest_first[:10]
    assert page_queries(superuser_client, url) == queries
    [link] = re.findall(r'<a href="([^"]+)"[^>]*>All 13 of its files</a> \(the latest 10 below\)', page)
    listed = superuser_client.get(link.replace("&amp;", "&"))
    assert listed.status_code == 200 and listed.context["cl"].result_count == 13


@pytest.mark.django_db
def test_an_operations_page_names_its_latest_files(superuser_client, core_user):
    operation = Operation.objects.create(core_user=core_user, operation_type="HARVEST", provider="Other")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    files = File.objects.bulk_create(
        File(
            core_user=core_user,
            file_name=f"f{n}.zip",
            file_format="TEST",
            provider="Other",
            created_time=start + timedelta(minutes=n),
        )
        for n in range(12)
    )
    operation.files.set(files)
    page = superuser_client.get(f"/admin/operations/operation/{operation.pk}/change/").content.decode()
    assert "12 of them; the latest 10:" in page
    assert [n for n in range(12) if f"f{n}.zip ({files[n].pk})" in page] == list(range(2, 12))


# Every admin URL but the login's goes through `OwnerAdminSite.admin_view`; these reached the database.
NUL_URLS = [
    "/admin/assets/machine/?provider__exact=%00",
    "/admin/fields/boundary/?field=%00",
    "/admin/fields/field/%00/",
    "/admin/fields/field/a%00/change/",
    "/admin/catalogs/varietyfile/?crop=%00",
    "/admin/webhooks/delivery/?status__exact=%00",
    "/admin/assets/machine/?%00=1",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", NUL_URLS)
def test_a_nul_in_an_admin_url_is_a_400(superuser_client, url):
    """PostgreSQL refuses a NUL in any text: each of these was a 500 there."""
    response = superuser_client.get(url)
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert "NUL" in response.json()["detail"]
    assert superuser_client.get(url.replace("%00", "x")).status_code in (200, 302)


@pytest.mark.django_db
def test_a_nul_in_an_admin_url_is_not_told_before_the_login(client):
    response = client.get("/admin/fields/field/?type__exact=%00")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_a_scope_with_a_lone_surrogate_is_a_form_error_here(superuser_client, owner):
    """JSON may escape a lone surrogate, which no page can hold: it was shown back as itself, a 500."""
    data = {
        "owner": owner.pk,
        "provider": "ProviderA",
        "client_id": "id",
        "client_secret": "secret",
        "authorize_url": "https://example.com/authorize",
        "token_url": PUBLIC_TOKEN_URL,
        "scopes": '["\\ud800"]',
    }
    response = superuser_client.post("/admin/accounts/providerapplication/add/", data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["scopes"]
    assert "[&quot;\\ud800&quot;]" in response.content.decode()  # (as typed)
    assert not ProviderApplication.objects.filter(owner=owner).exists()
