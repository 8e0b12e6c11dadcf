import io
import json
import os
import stat
import sys
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from platform_site.api.authentication import CLOCK_LEEWAY_SECONDS
from tests.factories import PASSWORD, CoreUserFactory
from tests.tenancy import assert_problem

USERS_URL = "/services/usermanagement/api/users"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def authenticate(client, **body):
    return client.post("/api/authenticate", body, format="json")


def test_authenticate_returns_a_token_that_opens_the_api(owner):
    client = APIClient()
    response = authenticate(client, username=owner.username, password=PASSWORD, rememberMe=False)
    assert response.status_code == 200
    token = response.json()["id_token"]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get(USERS_URL).status_code == 200


def test_the_token_response_and_the_refusals_are_not_to_be_stored(owner):
    """RFC 6749 section 5.1: a response holding a token is `Cache-Control: no-store` and `Pragma: no-cache`; it had
    neither, so a cache on the way could keep the token."""
    for response in (
        authenticate(APIClient(), username=owner.username, password=PASSWORD),
        authenticate(APIClient(), username=owner.username, password="wrong-password"),
        authenticate(APIClient(), username=owner.username),
    ):
        assert (response["Cache-Control"], response["Pragma"]) == ("no-store", "no-cache"), response.status_code
    assert response.status_code == 400


@pytest.mark.parametrize(("remember_me", "lifetime"), [(False, timedelta(hours=24)), (True, timedelta(days=30))])
def test_token_lifetime_is_24_hours_or_30_days(owner, remember_me, lifetime):
    token = authenticate(APIClient(), username=owner.username, password=PASSWORD, rememberMe=remember_me).json()
    claims = jwt.decode(token["id_token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == int(lifetime.total_seconds())


@pytest.mark.parametrize(
    "body",
    [
        {"username": "nobody", "password": PASSWORD},
        {"username": "{owner}", "password": "wrong-password"},
    ],
)
def test_wrong_credentials_are_401(owner, body):
    body = {k: v.format(owner=owner.username) for k, v in body.items()}
    assert_problem(authenticate(APIClient(), **body), 401, "invalidCredentials")


def test_authenticate_validates_its_body(owner):
    body = assert_problem(authenticate(APIClient(), username=owner.username, password=PASSWORD, rememberMe="yes"), 400)
    assert body["fieldErrors"] == [{"field": "rememberMe", "message": "Must be true or false."}]
    body = assert_problem(authenticate(APIClient(), password=PASSWORD), 400, "validation")
    assert body["fieldErrors"][0]["field"] == "username"


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer not-a-jwt", "Token abc", "Basic dXNlcjpwYXNz"],
)
def test_missing_or_malformed_token_is_401(owner, header):
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(USERS_URL)
    assert_problem(response, 401, "unauthorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


def _token(owner, **overrides):
    now = datetime.now(UTC)
    claims = {"sub": str(owner.pk), "iat": now, "exp": now + timedelta(hours=1)} | overrides
    return jwt.encode(claims, settings.SECRET_KEY, algorithm="HS256")


def test_expired_and_foreign_signed_tokens_are_401(owner):
    client = APIClient()
    # (past the few seconds allowed for hosts' clocks that differ)
    expired = datetime.now(UTC) - timedelta(seconds=CLOCK_LEEWAY_SECONDS + 1)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {_token(owner, exp=expired)}")
    assert "expired" in assert_problem(client.get(USERS_URL), 401)["detail"]
    forged = jwt.encode({"sub": str(owner.pk), "iat": 1, "exp": 4102444800}, "another-secret", algorithm="HS256")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {forged}")
    assert_problem(client.get(USERS_URL), 401)


@pytest.mark.parametrize("subject", ["not-a-number", "99999999", ""])
def test_a_signed_token_for_no_owner_is_401(owner, subject):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {_token(owner, sub=subject)}")
    assert "revoked" in assert_problem(client.get(USERS_URL), 401)["detail"]


def test_a_deleted_owner_is_locked_out(owner, api_client):
    owner.delete()
    assert "revoked" in assert_problem(api_client.get(USERS_URL), 401)["detail"]


def test_changing_the_password_revokes_earlier_tokens(owner, api_client):
    assert api_client.get(USERS_URL).status_code == 200
    owner.set_password("a-new-password-123")
    owner.save()
    assert "revoked" in assert_problem(api_client.get(USERS_URL), 401)["detail"]


def test_deactivated_owner_is_locked_out_until_reactivated(owner, api_client):
    """As decided (Django's rule for sessions): refused while inactive; a password change ends tokens for good."""
    owner.is_active = False
    owner.save()
    # Said as it is: the token is not revoked (it works again), and the password is right
    problem = assert_problem(api_client.get(USERS_URL), 401, "ownerDeactivated")
    assert problem["detail"] == (
        "This API owner is deactivated: its tokens and logins are refused until it is reactivated."
    )
    login = authenticate(APIClient(), username=owner.username, password=PASSWORD)
    assert assert_problem(login, 401, "ownerDeactivated")["detail"] == problem["detail"]
    # Without the right password, nothing is said of the owner
    wrong = authenticate(APIClient(), username=owner.username, password="not-the-password")
    assert assert_problem(wrong, 401, "invalidCredentials")["detail"] == "Unknown username or wrong password."
    owner.is_active = True
    owner.save()
    assert api_client.get(USERS_URL).status_code == 200


@pytest.mark.parametrize("extra", ["!!", "====", "%%", "\u00e9"])
def test_a_token_with_stray_characters_is_401(owner, api_client, make_client, extra):
    """PyJWT alone skips characters outside base64url, so `<token>!!` would be read as the token."""
    token = api_client._credentials["HTTP_AUTHORIZATION"].split(" ", 1)[1]
    client = make_client(owner)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}{extra}")
    assert "not valid" in assert_problem(client.get(USERS_URL), 401)["detail"]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token[:20]}{extra}{token[20:]}")
    assert_problem(client.get(USERS_URL), 401)


def test_createapiowner_says_that_staff_sees_every_owners_data(db, capsys):
    """`--staff` ("also allow the Django admin") made the owner a superuser, whose admin shows every tenant's data;
    nothing said so to an operator giving it to a tenant."""
    call_command("createapiowner", "acme", "--password", "first-password")
    assert "superuser" not in capsys.readouterr().out
    assert not get_user_model().objects.get(username="acme").is_superuser
    call_command("createapiowner", "root", "--password", "first-password", "--staff")
    assert "is a Django superuser: /admin/ shows and changes every owner's data" in capsys.readouterr().out
    assert get_user_model().objects.get(username="root").is_superuser


def test_createapiowner_is_idempotent_and_updates_the_password(db):
    call_command("createapiowner", "acme", "--password", "first-password")
    call_command("createapiowner", "acme", "--password", "second-password")
    assert authenticate(APIClient(), username="acme", password="first-password").status_code == 401
    assert authenticate(APIClient(), username="acme", password="second-password").status_code == 200


def test_createapiowner_sets_only_passwords_the_login_takes(db):
    """A 300-character password was set, then refused at every login (400: longer than 256)."""
    long_password = "correct horse battery staple " * 35  # 1015 characters
    call_command("createapiowner", "acme", "--password", long_password)
    assert authenticate(APIClient(), username="acme", password=long_password).status_code == 200
    for password in ("short", "x" * 7, "x" * 1025):
        with pytest.raises(CommandError, match="8 to 1024 characters"):
            call_command("createapiowner", "acme", "--password", password)
    call_command("createapiowner", "bolt", "--password", "x" * 8)  # the shortest there is
    call_command("createapiowner", "bolt", "--password", "x" * 1024)  # and the longest
    with pytest.raises(CommandError, match="1 to 150 characters"):
        call_command("createapiowner", "a" * 151, "--password", "long-enough")
    assert authenticate(APIClient(), username="acme", password=long_password).status_code == 200  # unchanged


def _opens(token: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.get(USERS_URL).status_code


def test_setting_the_same_password_again_keeps_the_tokens(db, settings, tmp_path, monkeypatch):
    """`createapiowner` with the same password, and every `make run` (it ensures the demo owner), re-salted the
    hash the tokens' fingerprint comes from: every token of the owner was revoked."""
    call_command("createapiowner", "acme", "--password", "same-password-1")
    token = authenticate(APIClient(), username="acme", password="same-password-1").json()["id_token"]
    call_command("createapiowner", "acme", "--password", "same-password-1")
    assert _opens(token) == 200
    call_command("createapiowner", "acme", "--password", "a-new-password-2")
    assert _opens(token) == 401

    settings.VAR_DIR = tmp_path
    monkeypatch.delenv("DEMO_OWNER_PASSWORD", raising=False)
    call_command("ensuredemoowner")
    demo = authenticate(APIClient(), **json.loads((tmp_path / "demo-owner.json").read_text())).json()["id_token"]
    call_command("ensuredemoowner")
    assert _opens(demo) == 200


def test_a_login_that_finds_an_old_hash_keeps_the_other_tokens(owner, api_client):
    """Django upgrades a hash at login (after most upgrades of Django): the owner's other programs were logged
    out, their tokens revoked, though the password had not changed."""
    owner.password = PBKDF2PasswordHasher().encode("old-password-1", "somesalt1234", iterations=100_000)
    owner.save()
    integration = authenticate(APIClient(), username=owner.username, password="old-password-1").json()["id_token"]
    assert authenticate(APIClient(), username=owner.username, password="old-password-1").status_code == 200
    assert _opens(integration) == 200
    assert authenticate(APIClient(), username=owner.username, password="wrong-password").status_code == 401


@pytest.mark.parametrize("username", ["acme ", " acme", "acme\t"])
def test_createapiowner_refuses_a_user_name_the_login_cannot_use(db, username):
    """The login trims the name it is sent: the owner was created and could never log in."""
    with pytest.raises(CommandError, match="whitespace"):
        call_command("createapiowner", username, "--password", "password-123")


def test_a_token_from_a_host_whose_clock_is_a_little_ahead_is_taken(owner):
    """A token "issued in the future" (by up to the hosts' clock difference) was 401 "not valid"."""
    now = datetime.now(UTC)
    claims = {"sub": str(owner.pk), "iat": now + timedelta(seconds=3), "exp": now + timedelta(hours=1)}
    claims["pwd"] = jwt.decode(
        authenticate(APIClient(), username=owner.username, password=PASSWORD).json()["id_token"],
        options={"verify_signature": False},
    )["pwd"]
    assert _opens(jwt.encode(claims, settings.SECRET_KEY, algorithm="HS256")) == 200
    claims["iat"] = now + timedelta(minutes=5)
    assert _opens(jwt.encode(claims, settings.SECRET_KEY, algorithm="HS256")) == 401


MACHINES_URL = "/services/beta/api/users/{}/machines"


@pytest.mark.parametrize("sub", ["9" * 40, str(2**63), "-" + "9" * 40])
def test_a_signed_token_naming_an_id_no_owner_can_have_is_401(owner, sub):
    """A `sub` past the id column's range was a 500 (OverflowError from the owner's look-up) on every route."""
    now = datetime.now(UTC)
    claims = {"sub": sub, "iat": now, "exp": now + timedelta(hours=1), "pwd": "0" * 16}
    token = jwt.encode(claims, settings.SECRET_KEY, algorithm="HS256")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert_problem(client.get(USERS_URL), 401, "unauthorized")
    core_user = CoreUserFactory(owner=owner)
    assert_problem(client.get(MACHINES_URL.format(core_user.id)), 401, "unauthorized")


@pytest.mark.parametrize("whose", ["mine", "another owner's", "missing", "malformed"])
def test_a_revoked_token_is_401_on_core_user_routes_whoever_the_core_user(owner, other_owner, api_client, whose):
    """The token is judged before the core user: 401, never a 404 that would say something about the id."""
    core_user_id = {
        "mine": lambda: CoreUserFactory(owner=owner).id,
        "another owner's": lambda: CoreUserFactory(owner=other_owner).id,
        "missing": lambda: "6d0f7a8e-0000-4000-8000-000000000000",
        "malformed": lambda: "not-a-uuid",
    }[whose]()
    owner.set_password("a-new-password-123")
    owner.save()
    assert "revoked" in assert_problem(api_client.get(MACHINES_URL.format(core_user_id)), 401)["detail"]


def test_on_core_user_routes_the_owner_and_the_core_user_are_read_together(owner, other_owner, api_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    mine, theirs = CoreUserFactory(owner=owner), CoreUserFactory(owner=other_owner)
    with CaptureQueriesContext(connection) as queries:
        assert api_client.get(MACHINES_URL.format(mine.id)).status_code == 200
    [lookup] = [q["sql"] for q in queries.captured_queries if "accounts_coreuser" in q["sql"]]
    assert "auth_user" in lookup  # one round trip for both
    assert_problem(api_client.get(MACHINES_URL.format(theirs.id)), 404, "notFound")
    assert_problem(api_client.get(MACHINES_URL.format("not-a-uuid")), 404, "notFound")


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_the_scheme_name_is_case_insensitive(owner, scheme):
    """RFC 9110: the authentication scheme is compared case-insensitively."""
    token = authenticate(APIClient(), username=owner.username, password=PASSWORD).json()["id_token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {token}")
    assert client.get(USERS_URL).status_code == 200


def test_a_token_without_an_expiry_is_401_even_signed_by_us(owner):
    """A signed token that never expires would be a key for good: `exp` is required."""
    from platform_site.api.authentication import _password_fingerprint

    now = datetime.now(UTC)
    claims = {"sub": str(owner.pk), "iat": now, "pwd": _password_fingerprint(owner)}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {jwt.encode(claims, settings.SECRET_KEY, algorithm='HS256')}")
    assert_problem(client.get(USERS_URL), 401, "unauthorized")
    with_expiry = claims | {"exp": now + timedelta(hours=1)}
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {jwt.encode(with_expiry, settings.SECRET_KEY, algorithm='HS256')}")
    assert client.get(USERS_URL).status_code == 200


def test_without_remember_me_the_token_lasts_24_hours(owner):
    token = authenticate(APIClient(), username=owner.username, password=PASSWORD).json()["id_token"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 24 * 3600


def test_createapiowner_refuses_an_empty_user_name(db):
    with pytest.raises(CommandError, match="1 to 150 characters"):
        call_command("createapiowner", "", "--password", "long-enough")
    assert not get_user_model().objects.filter(username="").exists()


def test_createapiowner_leaves_a_deactivated_owner_deactivated_unless_asked(owner, api_client):
    """Setting the password again reactivated a deactivated owner, and its unexpired tokens worked again."""
    owner.is_active = False
    owner.save()
    out = io.StringIO()
    call_command("createapiowner", owner.username, "--password", PASSWORD, stdout=out)
    owner.refresh_from_db()
    assert not owner.is_active
    assert "deactivated and stays so" in out.getvalue() and "--activate" in out.getvalue()
    assert_problem(api_client.get(USERS_URL), 401, "ownerDeactivated")
    assert authenticate(APIClient(), username=owner.username, password=PASSWORD).status_code == 401
    call_command("createapiowner", owner.username, "--password", PASSWORD, "--activate", stdout=io.StringIO())
    owner.refresh_from_db()
    assert owner.is_active
    assert api_client.get(USERS_URL).status_code == 200
    assert authenticate(APIClient(), username=owner.username, password=PASSWORD).status_code == 200


def test_make_runs_demo_owner_stays_deactivated(db, settings, tmp_path, monkeypatch):
    """`make run` ensures the demo owner at every start: it reactivated one deactivated on purpose."""
    settings.VAR_DIR = tmp_path
    monkeypatch.delenv("DEMO_OWNER_PASSWORD", raising=False)
    call_command("ensuredemoowner", stdout=io.StringIO())
    credentials = json.loads((tmp_path / "demo-owner.json").read_text())
    get_user_model().objects.filter(username=credentials["username"]).update(is_active=False)
    out = io.StringIO()
    call_command("ensuredemoowner", stdout=out)
    assert not get_user_model().objects.get(username=credentials["username"]).is_active
    assert "deactivated and stays so" in out.getvalue()
    assert authenticate(APIClient(), **credentials).status_code == 401


_FILE_EVENTS: list = []  # (path watched, modes seen) while the test below runs: the hook is inert otherwise


def _watch_file_mode(event, args):
    if _FILE_EVENTS:
        path, seen = _FILE_EVENTS[0]
        if path.exists():
            seen.append((event, stat.S_IMODE(path.stat().st_mode)))


sys.addaudithook(_watch_file_mode)  # (an audit hook cannot be removed)


def test_the_demo_owners_file_is_never_readable_by_others(db, settings, tmp_path, monkeypatch):
    """Its password was written to a new file of the umask's mode (0644 under 022), then chmod'ed to 0600: another
    local user could open it in between and read it later. Every file operation of the command is watched."""
    settings.VAR_DIR = tmp_path
    monkeypatch.delenv("DEMO_OWNER_PASSWORD", raising=False)
    path, seen = tmp_path / "demo-owner.json", []
    previous = os.umask(0o022)
    _FILE_EVENTS.append((path, seen))
    try:
        call_command("ensuredemoowner", stdout=io.StringIO())
        call_command("ensuredemoowner", stdout=io.StringIO())  # (written again: the same password, still private)
    finally:
        _FILE_EVENTS.clear()
        os.umask(previous)
    assert seen and {mode for _, mode in seen} == {0o600}, seen
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
