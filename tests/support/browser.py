"""Headless Chromium (Debian's chromium and chromedriver) driven by Selenium, for page tests.

Selenium is given Debian's /usr/bin/chromedriver, so it never tries to download a driver; the
flags keep Chromium from reaching out to the network (the test machines have none) and let it
run as root. Each browser gets a new, empty profile directory.
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1000",
)


def missing() -> str | None:
    """None when Chromium and its driver are installed, else what is missing."""
    absent = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    return f"not installed: {', '.join(absent)} (Debian: chromium chromium-driver)" \
        if absent else None


@contextmanager
def chromium(profile: Path, javascript: bool = True) -> Iterator[webdriver.Chrome]:
    """A headless Chromium with a new profile in `profile`; JavaScript off when asked."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if not javascript:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    driver.implicitly_wait(5)  # elements of a page still loading
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def follow(driver: webdriver.Chrome, element: WebElement) -> None:
    """Click a link or a submit button and wait until the next page has replaced this one
    (a click returns before a form's POST has answered)."""
    page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 10).until(lambda _: replaced(page))


def replaced(element: WebElement) -> bool:
    """Whether the page holding `element` is gone. Chromedriver says so with a stale-element
    error, or, while the next page is still being attached, "Node with given id does not
    belong to the document" (seen on a loaded machine)."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


def screenshot(driver: webdriver.Chrome, path: Path) -> Path:
    """The whole page, not only the window, as a PNG at `path` (through DevTools, so that it
    works with the page's JavaScript off)."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
