"""The magic link pages in a real browser (`tests/browser.py`: headless Chromium driven by Selenium against
pytest-django's live server). Each page is saved as a screenshot under `TEST_ARTIFACTS_DIR` (default
`var/test-artifacts/`)."""

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from magiclinks import services
from magiclinks.models import MagicLink
from platform_site.accounts.models import ProviderCredential
from tests.browser import wait_for

from .helpers import contrast_ratio

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
BRANDING = {"backgroundColor": "#0A3D2E", "companyName": "Acme Agronomy", "showLeafUserName": True}


@pytest.fixture
def shoot(browser, artifacts_dir, request):
    def save(name: str) -> Path:
        path = artifacts_dir / f"magiclinks-{request.node.name}-{name}.png"
        browser.save_screenshot(str(path))
        return path

    return save


@pytest.fixture
def public_base(live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


def click_to_next_page(browser, element):
    """Click what submits or navigates, and wait until the page it was on is gone (its elements go stale), so
    that what is looked up next is on the next page, not still on this one."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By

    page = browser.find_element(By.TAG_NAME, "html")

    def gone() -> bool:
        try:
            page.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            # Chromium, asked about a node of the page it is leaving while the next one loads (Selenium's
            # `staleness_of` let this through: seen once in a full run)
            if "does not belong to the document" not in str(error):
                raise
            return True
        return False

    element.click()
    wait_for(gone)


def open_link(browser, public_base, core_user, widget, **values):
    _link, token = services.magic_link_create(core_user=core_user, widget=widget, **values)
    browser.get(services.link_url(token))
    return token


def test_upload_a_sample_zip_and_watch_it_reach_processed(browser, shoot, public_base, core_user, samples_dir):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # Given a file-upload link, branded, and a real ISOXML task data zip from the samples
    open_link(browser, public_base, core_user, MagicLink.Widget.FILEUPLOAD, settings=BRANDING)
    assert browser.find_element(By.TAG_NAME, "h1").text == "Upload machine files"
    assert core_user.name in browser.find_element(By.CSS_SELECTOR, "[data-testid=user-name]").text
    shoot("1-form")
    sample = samples_dir / "isoxml-js/data/2021-04-09T15_33_26_taskdata.zip"
    # When the end user picks it and uploads
    browser.find_element(By.ID, "file").send_keys(str(sample))
    Select(browser.find_element(By.ID, "provider")).select_by_value("ProviderB")
    browser.find_element(By.ID, "upload-submit").click()
    # Then the status page follows the batch until PROCESSED
    wait_for(lambda: "/batches/" in browser.current_url)
    wait_for(lambda: browser.find_element(By.ID, "batch-status").text == "PROCESSED")
    rows = browser.find_elements(By.CSS_SELECTOR, "#batch-files tr")
    assert [r.get_attribute("data-status") for r in rows] == ["processed"]
    assert not [e for e in browser.find_elements(By.ID, "batch-refresh") if e.is_displayed()]  # nothing to refresh
    shoot("2-processed")


def test_connect_a_provider_through_oauth(browser, shoot, public_base, owner, core_user, oauth_server, oauth_app):
    from selenium.webdriver.common.by import By

    # Given a provider link with disconnecting allowed, and the owner's application at a loopback provider
    open_link(
        browser, public_base, core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"],
        settings=BRANDING | {"disconnectedEnabled": True},
    )  # fmt: skip
    shoot("1-providers")
    # When the end user clicks the provider and allows access on the provider's page
    browser.find_element(By.ID, "connect-ProviderA").click()
    wait_for(lambda: browser.current_url.startswith(oauth_server.base_url))
    shoot("2-provider-consent")
    browser.find_element(By.ID, "allow").click()
    # Then our page says so and the connection is recorded
    outcome = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-testid=outcome]"))
    assert outcome[0].text == "You are connected to ProviderA."
    shoot("3-connected")
    credential = ProviderCredential.objects.get(core_user=core_user, provider="ProviderA")
    assert credential.status == "AUTHENTICATED" and credential.refresh_token in oauth_server.refresh_tokens
    # And the user may disconnect at the end
    click_to_next_page(browser, browser.find_element(By.XPATH, "//button[normalize-space()='Disconnect ProviderA']"))
    outcome = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-testid=outcome]"))
    assert outcome[0].text == "You are disconnected from ProviderA."
    assert not ProviderCredential.objects.filter(core_user=core_user).exists()
    shoot("4-disconnected")


def test_an_expired_link_shows_a_clear_page(browser, shoot, public_base, core_user):
    from selenium.webdriver.common.by import By

    link, token = services.magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD)
    MagicLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    browser.get(services.link_url(token))
    assert browser.find_element(By.TAG_NAME, "h1").text == "This link has expired"
    assert "new link" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    shoot("1-expired")


def test_a_status_page_whose_link_is_revoked_says_so(browser, shoot, public_base, core_user):
    """The status page polled a revoked link's batch for ever, still saying "being processed"."""
    from selenium.webdriver.common.by import By

    from conversion.models import Batch
    from magiclinks.models import LinkUpload

    # Given a batch received through a link, and its status page open (the batch stays RECEIVED: nothing opens it)
    link, token = services.magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD)
    batch = Batch.objects.create(core_user=core_user, provider="Other", file_name="late.zip", size=22)
    LinkUpload.objects.create(link=link, batch_id=batch.pk)
    browser.get(f"{services.link_url(token)}/batches/{batch.pk}")
    assert browser.find_element(By.ID, "batch-status").text == "RECEIVED"
    # When the link is revoked
    services.magic_link_delete(link=link)
    # Then the page says the link is no longer valid
    wait_for(lambda: browser.find_element(By.TAG_NAME, "h1").text == "This link is no longer valid", timeout=20)
    shoot("1-revoked")


def test_a_refused_upload_names_the_error_in_the_title_and_focuses_the_file_field(
    browser, shoot, public_base, core_user, tmp_path
):
    from selenium.webdriver.common.by import By

    # Given the upload page and a file that is no zip
    open_link(browser, public_base, core_user, MagicLink.Widget.FILEUPLOAD, settings=BRANDING)
    notes = tmp_path / "notes.zip"
    notes.write_text("not a zip")
    browser.find_element(By.ID, "file").send_keys(str(notes))
    # When it is uploaded
    click_to_next_page(browser, browser.find_element(By.ID, "upload-submit"))
    # Then the title says there is an error, the file field has focus and is described by the error
    wait_for(lambda: browser.find_elements(By.ID, "upload-error"))
    assert browser.title.startswith("Error: Upload machine files")
    focused = browser.switch_to.active_element
    assert focused.get_attribute("id") == "file" and focused.get_attribute("aria-invalid") == "true"
    described_by = focused.get_attribute("aria-describedby").split()
    assert "upload-error" in described_by
    error = browser.find_element(By.ID, "upload-error")
    assert error.get_attribute("role") == "alert" and "not a zip archive" in error.text
    shoot("1-refused")


def _received_batch_page(browser, core_user, **link_values):
    """A batch received through a link, left RECEIVED (nothing opens it), its status page open: (link, token, batch)."""
    from conversion.models import Batch
    from magiclinks.models import LinkUpload

    link, token = services.magic_link_create(core_user=core_user, widget=MagicLink.Widget.FILEUPLOAD, **link_values)
    batch = Batch.objects.create(core_user=core_user, provider="Other", file_name="slow.zip", size=22)
    LinkUpload.objects.create(link=link, batch_id=batch.pk)
    browser.get(f"{services.link_url(token)}/batches/{batch.pk}")
    return link, token, batch


def test_the_status_line_is_written_only_when_it_changes(browser, shoot, public_base, core_user):
    """The polling rewrote the live region (role=status) every 1.5 s with the same text: screen readers announced
    "Status: RECEIVED ..." again and again."""
    from selenium.webdriver.common.by import By

    from conversion.models import Batch

    _link, _token, batch = _received_batch_page(browser, core_user)
    # Given the page's polls counted, and the changes of its live region
    browser.execute_script(
        """
        window.polls = 0;
        var realFetch = window.fetch;
        window.fetch = function () {
          return realFetch.apply(this, arguments).then(function (r) { window.polls += 1; return r; });
        };
        window.liveChanges = 0;
        new MutationObserver(function (changes) { window.liveChanges += changes.length; }).observe(
          document.querySelector("[role=status]"),
          {subtree: true, childList: true, characterData: true, attributes: true}
        );
        """
    )
    # When three polls answer the same RECEIVED
    wait_for(lambda: browser.execute_script("return window.polls") >= 3, timeout=20)
    time.sleep(0.3)  # (the last answer drawn)
    # Then the live region was not touched
    assert browser.execute_script("return window.liveChanges") == 0
    assert browser.find_element(By.ID, "batch-status").text == "RECEIVED"
    # And a change is still drawn
    Batch.objects.filter(pk=batch.pk).update(status="PROCESSED")
    wait_for(lambda: browser.find_element(By.ID, "batch-status").text == "PROCESSED", timeout=20)
    assert browser.execute_script("return window.liveChanges") > 0
    assert not browser.find_element(By.ID, "batch-refresh").is_displayed()
    # and the title says it (it stayed "Upload status")
    assert browser.title == "Upload processed"
    shoot("1-processed")


def test_focus_on_refresh_goes_on_to_the_next_action_when_the_batch_finishes(browser, shoot, public_base, core_user):
    """The script hides "Refresh status" once the batch is finished: a keyboard user on it was left on the page's
    body, with no visible focus and nothing announced of where they were."""
    from selenium.webdriver.common.by import By

    from conversion.models import Batch

    _link, _token, batch = _received_batch_page(browser, core_user)
    # Given the keyboard's focus on "Refresh status" while the batch is processed
    refresh = browser.find_element(By.CSS_SELECTOR, "#batch-refresh a")
    browser.execute_script("arguments[0].focus()", refresh)
    assert browser.switch_to.active_element == refresh
    # When the batch finishes
    Batch.objects.filter(pk=batch.pk).update(status="PROCESSED")
    wait_for(lambda: not refresh.is_displayed(), timeout=20)
    # Then the focus is on the next thing to do, not lost
    focused = browser.switch_to.active_element
    assert (focused.get_attribute("id"), focused.text) == ("batch-next", "Upload another file")
    shoot("1-processed")


def _broken_words(browser, selector: str) -> list[str]:
    """The texts of the cells `selector` finds that the browser laid out on more than one line."""
    return browser.execute_script(
        """
        return Array.from(document.querySelectorAll(arguments[0])).filter(function (cell) {
          var range = document.createRange();
          range.selectNodeContents(cell);
          return new Set(Array.from(range.getClientRects()).map(function (r) { return Math.round(r.top); })).size > 1;
        }).map(function (cell) { return cell.textContent; });
        """,
        selector,
    )


def test_the_files_table_never_breaks_its_headers_or_a_status_mid_word(browser, shoot, public_base, core_user):
    """With every cell allowed to wrap anywhere, the table squeezed its short columns: "processe/d" and "Messag/e" at
    1000 px, "St/at/us" on a phone (found with axe-core's review of the pages)."""
    from selenium.webdriver.common.by import By

    from conversion.models import File

    # Given a finished batch whose files have long messages
    link, token, batch = _received_batch_page(browser, core_user)
    for number, state in enumerate(("processed", "failed")):
        File.objects.create(
            core_user=core_user, batch=batch, file_name=f"Harvest_NorthField_{number}.zip", file_format="ISOXML",
            provider="Other", status=state,
            status_message="The time log could not be read: its binary ends inside a record. " * 3,
        )  # fmt: skip
    batch.status = "PROCESSED"
    batch.save(update_fields=["status"])
    for width in (1000, 360):
        browser.set_window_size(width, 900)
        browser.refresh()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#batch-files tr[data-status]"))
        # Then the headers and the statuses each take one line, at a desktop's width and a phone's
        assert _broken_words(browser, ".files th, .files td:nth-child(2)") == [], width
        shoot(f"{width}px")
    browser.set_window_size(1000, 900)


def _computed_rgb(browser, element, prop: str) -> tuple[int, int, int]:
    value = browser.execute_script(
        "return getComputedStyle(arguments[0]).getPropertyValue(arguments[1])", element, prop
    )
    channels = [float(c) for c in value[value.index("(") + 1 : value.index(")")].split(",")]
    assert len(channels) == 3 or channels[3] == 1, value  # opaque: the contrast is the one seen
    return tuple(round(c) for c in channels[:3])


def test_the_disconnect_button_stays_readable_under_the_pointer(browser, shoot, public_base, core_user, oauth_app):
    """`.button:hover` (dark green) outranked `.button-secondary`: its dark red text on dark green was 1.15:1."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    # Given a provider link whose user is connected and may disconnect
    ProviderCredential.objects.create(
        core_user=core_user, provider="ProviderA", access_token="a", status="AUTHENTICATED"
    )
    open_link(
        browser, public_base, core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"],
        settings={"disconnectedEnabled": True},
    )  # fmt: skip
    button = browser.find_element(By.XPATH, "//button[normalize-space()='Disconnect ProviderA']")
    at_rest = contrast_ratio(
        _computed_rgb(browser, button, "color"), _computed_rgb(browser, button, "background-color")
    )
    # When the pointer is on it
    ActionChains(browser).move_to_element(button).perform()
    wait_for(lambda: browser.execute_script("return arguments[0].matches(':hover')", button))
    # Then its text contrasts with its background at least 4.5:1 (WCAG AA), as at rest
    color = _computed_rgb(browser, button, "color")
    background = _computed_rgb(browser, button, "background-color")
    assert contrast_ratio(color, background) >= 4.5, (color, background)
    assert at_rest >= 4.5
    shoot("1-hover")


@pytest.fixture
def phone(browser):
    """The browser at a 360 px wide phone's size, for one test."""
    browser.set_window_size(360, 740)
    yield browser
    browser.set_window_size(1000, 900)


def _fits_the_screen(browser) -> None:
    sizes = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth, window.innerWidth]"
    )
    assert sizes[1] <= 360 and sizes[0] <= sizes[1], sizes  # (wider than the screen: sideways scrolling)


def test_a_phone_shows_long_file_names_and_the_file_field_without_sideways_scrolling(
    phone, shoot, public_base, core_user
):
    """At 360 px a 150-character file name made the status page 1849 px wide, and the file field overflowed the card."""
    from selenium.webdriver.common.by import By

    from conversion.models import File

    # Given a batch holding a file with a 150-character name, its status page open on a phone
    link, token, batch = _received_batch_page(phone, core_user)
    name = "TASKDATA_" + "Harvest2024_NorthField_JohnDeereS790_" * 4
    name = name[:146] + ".xml"
    File.objects.create(
        core_user=core_user, batch=batch, file_name=name, file_format="ISOXML", provider="Other", status="FAILED",
        status_message="No time log of " + name + " could be read.",
    )  # fmt: skip
    phone.refresh()
    cell = wait_for(lambda: phone.find_elements(By.XPATH, f"//td[normalize-space()='{name}']"))[0]
    # Then the page is no wider than the screen, the name is all there
    _fits_the_screen(phone)
    assert cell.text == name
    shoot("1-batch")
    # And the upload form's file field stays inside its card
    phone.get(services.link_url(token))
    _fits_the_screen(phone)
    field, card = phone.find_element(By.ID, "file"), phone.find_element(By.ID, "main")
    field_right, card_right = (e.rect["x"] + e.rect["width"] for e in (field, card))
    assert field_right <= card_right, (field.rect, card.rect)
    shoot("2-upload")
