"""The admin's map of a boundary in a real browser (`tests/browser.py`): Leaflet, served by us, draws the shape."""

import pytest
from django.contrib.auth import get_user_model

from fields.models import Field
from tests.browser import wait_for
from tests.fields.helpers import create_field, field_url, rect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_boundary_is_drawn_on_its_map(browser, artifacts_dir, live_server, settings, api_client, core_user):
    from selenium.webdriver.common.by import By

    # No base map: the shape must draw from what we serve alone (CI reaches no tile server)
    settings.ADMIN_MAP_TILES_URL = ""
    field = create_field(api_client, core_user, rect(2.0, 48.0, 2.02, 48.01))
    get_user_model().objects.create_superuser("root", "root@example.com", "root-password")
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.NAME, "username").send_keys("root")
    browser.find_element(By.NAME, "password").send_keys("root-password")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait_for(lambda: "/admin/login/" not in browser.current_url)

    browser.get(f"{live_server.url}/admin/fields/boundary/{field['boundaries'][0]}/change/")

    # The boundary is one outline on the map, fitted to fill it, with no tool to change it
    [outline] = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".readonly-map path.leaflet-interactive"))
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", outline)
    box = browser.execute_script("var r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", outline)
    browser.save_screenshot(str(artifacts_dir / "admin-boundary-map.png"))
    assert box[0] > 100 and box[1] > 50, box
    # centred in its map
    centre = browser.execute_script(
        "var r = arguments[0].getBoundingClientRect(), m = arguments[1].getBoundingClientRect();"
        "return [r.left + r.width / 2 - m.left - m.width / 2, r.top + r.height / 2 - m.top - m.height / 2];",
        outline,
        browser.find_element(By.CSS_SELECTOR, ".readonly-map"),
    )
    assert abs(centre[0]) < 5 and abs(centre[1]) < 5, centre
    # and the map fits in the page's content column (nothing of it cut off)
    overflow = browser.execute_script(
        "var m = arguments[0].getBoundingClientRect(), c = document.getElementById('content').getBoundingClientRect();"
        "return [m.width, m.right - c.right];",
        browser.find_element(By.CSS_SELECTOR, ".readonly-map"),
    )
    assert overflow[0] > 300 and overflow[1] <= 0, overflow
    assert not browser.find_elements(By.CSS_SELECTOR, ".leaflet-draw, .leaflet-pm-toolbar")

    # A field's page shows each of its boundaries on its own map
    api_client.patch(field_url(core_user, field["id"]), {"geometry": rect(2.0, 48.0, 2.03, 48.02)}, format="json")
    browser.get(f"{live_server.url}/admin/fields/field/{Field.objects.get(public_id=field['id']).pk}/change/")
    outlines = wait_for(
        lambda: len(found := browser.find_elements(By.CSS_SELECTOR, ".readonly-map path.leaflet-interactive")) == 2
        and found
    )
    sizes = [browser.execute_script("return arguments[0].getBoundingClientRect().width;", o) for o in outlines]
    assert all(size > 100 for size in sizes), sizes
