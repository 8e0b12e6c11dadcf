"""The real browser of the page tests: headless Chromium (Debian's `chromium` and `chromium-driver`) driven by
Selenium, shared by every test module (`pytest_plugins` of tests/conftest.py).

Without Chromium the tests are skipped locally; with `CI` set they fail instead, so CI never passes silently
without them."""

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

CHROMIUM = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def artifacts_dir() -> Path:
    folder = Path(os.environ.get("TEST_ARTIFACTS_DIR") or REPO_ROOT / "var" / "test-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not (os.path.exists(p) or shutil.which(p))]
    if missing:
        message = (
            f"browser tests need Chromium and its driver ({', '.join(missing)} missing): scripts/system-deps.sh browser"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,900"):
        options.add_argument(argument)
    # An explicit driver path: Selenium Manager never tries to download one.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def wait_for(condition, timeout=60.0, interval=0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError("timed out")
