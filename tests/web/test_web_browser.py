"""The status site in a real headless Chromium, with JavaScript switched off.

A real uvicorn serves real data (series ingested from git threads, a review run with a lab
campaign and a reply); the browser follows links and submits forms as a reader would, and
every page is saved as a screenshot: in the test's directory, and also in $LORELAB_SCREENSHOTS
when that is set.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from bot.db.session import Database
from bot.demo.threads import make_tree
from tests.support import browser
from tests.support.browser import follow
from tests.support.web_data import ADMIN_TOKEN, CONFLICTED, REGRESSED, populate, web_settings
from tests.support.web_server import serving

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.sqlite_only,  # pages in a browser; their queries run on both in test_web.py
    pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing())),
]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_pages_in_headless_chromium_without_javascript(db: Database, tmp_path: Path):
    data = populate(db, make_tree(tmp_path / "linux"))
    backend = "postgresql" if db.url.startswith("postgresql") else "sqlite"
    shots: list[Path] = []

    def save(driver, name: str) -> None:
        shots.append(browser.screenshot(driver, tmp_path / "screens" / f"{backend}-{name}.png"))

    with serving(web_settings(db.url)) as base, \
            browser.chromium(tmp_path / "profile", javascript=False) as driver:
        # JavaScript is off: a script that would change the text does not run
        driver.get("data:text/html,<p id=x>off</p><script>x.textContent='on'</script>")
        assert driver.find_element(By.ID, "x").text == "off"

        driver.get(base + "/")
        assert driver.find_element(By.TAG_NAME, "h1").text == "Series"
        assert driver.find_element(By.LINK_TEXT, REGRESSED).is_displayed()
        save(driver, "front")

        # the filter form, submitted by its button
        driver.find_element(By.NAME, "author").send_keys("kasong")
        Select(driver.find_element(By.NAME, "state")).select_by_value("failed")
        follow(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
        assert "author=kasong" in driver.current_url and "state=failed" in driver.current_url
        listed = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "table.series td a")
                  if a.get_attribute("href").rsplit("/", 2)[-2] == "series"]
        assert listed == [CONFLICTED]
        save(driver, "filtered")

        # through to the series page
        follow(driver, driver.find_element(By.LINK_TEXT, "clear filters"))
        follow(driver, driver.find_element(By.LINK_TEXT, REGRESSED))
        assert driver.current_url == f"{base}/series/{data.regressed}"
        assert driver.find_element(By.TAG_NAME, "h1").text == REGRESSED
        row = driver.find_element(By.XPATH, "//table[@class='verdicts']//tr[th[starts-with("
                                            "normalize-space(.), 'hackbench.time')]]")
        assert "+6.02%" in row.text and "regression" in row.text
        plots = driver.find_elements(By.CSS_SELECTOR, "svg.plot")
        assert len(plots) == 2 and all(p.is_displayed() for p in plots)
        assert all(p.size["width"] > 300 and p.size["height"] > 100 for p in plots)
        assert "with this series applied" in driver.find_element(
            By.CSS_SELECTOR, "pre.reply-message").text
        save(driver, "series")

        # an admin action by a plain form: approve the reply, land back on it
        form = driver.find_element(By.CSS_SELECTOR,
                                   f"form[action='/replies/{data.reply}/approve']")
        form.find_element(By.NAME, "token").send_keys(ADMIN_TOKEN)
        follow(driver, form.find_element(By.TAG_NAME, "button"))
        assert re.search(rf"/series/{data.regressed}\?version=2&posting=\d+#reply-{data.reply}$",
                         driver.current_url), driver.current_url
        reply = driver.find_element(By.ID, f"reply-{data.reply}")
        assert reply.find_element(By.CSS_SELECTOR, "h3 .state").text == "queued"

        # the campaign's page: every metric plotted
        follow(driver, driver.find_element(By.LINK_TEXT, "hackbench"))
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.plot")) == 4
        save(driver, "campaign")

        # the lab hosts page, by the navigation link
        follow(driver, driver.find_element(By.LINK_TEXT, "Lab hosts"))
        assert driver.find_element(By.TAG_NAME, "h1").text == "Lab hosts"
        vm1 = driver.find_element(By.XPATH, "//table[@class='hosts']//tr[th='vm1']")
        assert "qemu" in vm1.text and f"readtwice #{data.bench_campaign}" in vm1.text
        save(driver, "hosts")

    for shot in shots:
        width, height = png_size(shot)
        assert width >= 1000 and height >= 400, (shot, width, height)
        assert shot.stat().st_size > 20_000, shot  # a rendered page, not a blank one
    keep = os.environ.get("LORELAB_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy(shot, Path(keep) / shot.name)
