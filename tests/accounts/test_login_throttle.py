"""Password guessing: after too many failed logins of a user name from one address (or from one address at all),
every login from there is refused for the rest of the window, a right password too; elsewhere the owner logs in."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from platform_site.accounts.models import LoginFailure
from tests.factories import PASSWORD
from tests.tenancy import assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]
GUESSER, OWNER_HOME = "203.0.113.7", "198.51.100.20"


def login(username, password, address=GUESSER):
    body = {"username": username, "password": password, "rememberMe": False}
    return APIClient().post("/api/authenticate", body, format="json", REMOTE_ADDR=address)


@pytest.fixture
def limits(settings, owner):
    # A fast hash, for the many logins here (the password is still checked)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    owner.set_password(PASSWORD)
    owner.save()
    settings.LOGIN_FAILURES_PER_USER_AND_ADDRESS = 10
    settings.LOGIN_FAILURES_PER_ADDRESS = 100
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 900
    return settings


def test_guessing_a_password_is_stopped_but_the_owner_logs_in_elsewhere(owner, limits):
    for n in range(10):
        assert_problem(login(owner.username, f"guess-{n}"), 401, "invalidCredentials")
    refused = login(owner.username, PASSWORD)  # the right password, from the guesser's address
    assert_problem(refused, 429, "tooManyRequests")
    assert 890 <= int(refused["Retry-After"]) <= 900
    # A guesser varying the case or the spaces of the name is the same guesser
    assert_problem(login(f" {owner.username.upper()} ", "guess"), 429, "tooManyRequests")
    assert login(owner.username, PASSWORD, address=OWNER_HOME).status_code == 200
    # The window ends: the right password is taken again from there
    LoginFailure.objects.update(window_start=LoginFailure.objects.first().window_start - timedelta(seconds=901))
    assert login(owner.username, PASSWORD).status_code == 200


def test_a_successful_login_clears_its_failures(owner, limits):
    for _ in range(2):
        for n in range(9):
            assert_problem(login(owner.username, f"typo-{n}"), 401, "invalidCredentials")
        assert login(owner.username, PASSWORD).status_code == 200


def test_unknown_names_count_and_one_address_guessing_many_names_is_stopped(owner, limits):
    limits.LOGIN_FAILURES_PER_ADDRESS = 5
    for n in range(5):
        assert_problem(login(f"nobody-{n}", "guess"), 401, "invalidCredentials")
    assert_problem(login(owner.username, PASSWORD), 429, "tooManyRequests")
    assert login(owner.username, PASSWORD, address=OWNER_HOME).status_code == 200


def test_a_limit_of_0_is_off(owner, limits):
    limits.LOGIN_FAILURES_PER_USER_AND_ADDRESS = limits.LOGIN_FAILURES_PER_ADDRESS = 0
    for n in range(12):
        assert_problem(login(owner.username, f"guess-{n}"), 401, "invalidCredentials")
    assert login(owner.username, PASSWORD).status_code == 200
    assert not LoginFailure.objects.exists()


def test_the_admin_login_counts_and_refuses_alike(owner, limits):
    get_user_model().objects.filter(pk=owner.pk).update(is_staff=True, is_superuser=True)
    browser = Client(REMOTE_ADDR=GUESSER)
    for n in range(10):
        page = browser.post("/admin/login/", {"username": owner.username, "password": f"guess-{n}"})
        assert page.status_code == 200 and "_auth_user_id" not in browser.session
    page = browser.post("/admin/login/", {"username": owner.username, "password": PASSWORD})
    assert page.status_code == 429 and "_auth_user_id" not in browser.session  # refused, the right password too
    assert 0 < int(page["Retry-After"]) <= 15 * 60
    assert_problem(login(owner.username, PASSWORD), 429, "tooManyRequests")
    home = Client(REMOTE_ADDR=OWNER_HOME)
    assert home.post("/admin/login/", {"username": owner.username, "password": PASSWORD}).status_code == 302


def test_the_admin_login_says_it_is_refused_for_too_many_failures_not_that_the_password_is_wrong(owner, limits):
    """It said "Please enter the correct username and password", to an operator who had typed them right."""
    get_user_model().objects.filter(pk=owner.pk).update(is_staff=True, is_superuser=True)
    browser = Client(REMOTE_ADDR=GUESSER)
    for n in range(10):
        page = browser.post("/admin/login/", {"username": owner.username, "password": f"guess-{n}"})
        assert page.context["form"].non_field_errors()[0].startswith("Please enter the correct username")
    for password in (PASSWORD, "guess"):
        page = browser.post("/admin/login/", {"username": owner.username, "password": password})
        assert page.status_code == 429 and "_auth_user_id" not in browser.session
        assert page.context["form"].non_field_errors() == ["Too many failed logins; try again in 15 minutes."]
        assert "Too many failed logins; try again in 15 minutes." in page.content.decode()
    # The last minute is "1 minute"
    LoginFailure.objects.update(window_start=LoginFailure.objects.first().window_start - timedelta(seconds=850))
    page = browser.post("/admin/login/", {"username": owner.username, "password": PASSWORD})
    assert page.context["form"].non_field_errors() == ["Too many failed logins; try again in 1 minute."]
    assert page.status_code == 429 and 0 < int(page["Retry-After"]) <= 60
    # The login page itself, and a wrong password before the limit, stay 200
    assert Client(REMOTE_ADDR=OWNER_HOME).get("/admin/login/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_guesses_sent_at_the_same_moment_are_held_to_the_limit(owner, limits):
    """Checked before the password and counted after it, every guess sent at once passed the check: 60 at once had
    25 answered. Each is now counted before its password is checked."""
    from tests.concurrency import needs_postgresql, run_together

    needs_postgresql()
    statuses = run_together(*[lambda n=n: login(owner.username, f"guess-{n}").status_code for n in range(30)])
    assert sorted(statuses) == [401] * 10 + [429] * 20
    # and, with 90 more names guessed at once from there, the address's limit (100) holds alike
    statuses = run_together(*[lambda n=n: login(f"nobody-{n}", "guess").status_code for n in range(90)])
    assert statuses.count(401) == 100 - 30 and statuses.count(429) == 20
