"""The status site's CSP and framing and Origin rules in a real headless Chromium, JavaScript on.

The pages must still render under their Content-Security-Policy (styled, plots drawn) with no
violation: Chromium reports each one both to its console (read through the driver's browser log)
and as a `securitypolicyviolation` event (recorded by a script DevTools adds to every page, which
the page's own policy does not govern). A second site, on another port of this host, then tries
what an attacker's page would: show the status site in a frame, and post its admin form.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.common.by import By

from bot.db.session import Database
from bot.demo.threads import make_tree
from tests.support import browser
from tests.support.browser import follow
from tests.support.web_data import ADMIN_TOKEN, populate, web_settings
from tests.support.web_server import free_port, serving

pytestmark = [
    pytest.mark.slow,  # a browser: CI, not the fast loop
    pytest.mark.sqlite_only,  # the headers do not depend on the database
    pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing())),
]

RECORD = ("window.violations = []; document.addEventListener('securitypolicyviolation', "
          "e => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));")
HEADER_BACKGROUND = "rgba(36, 52, 71, 1)"  # base.html's header: the inline stylesheet applied


def violations(driver: webdriver.Chrome) -> list[str]:
    """The CSP violations of the page shown, and any the console reported since last asked."""
    events = driver.execute_script("return window.violations || []")
    console = [e["message"] for e in driver.get_log("browser")
               if e["source"] == "security" or "Content Security Policy" in e["message"]]
    return events + console


@contextmanager
def other_site(html: str) -> Iterator[str]:
    """Another origin (a port of its own) serving `html` at /; yields its URL."""
    body = html.encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_pages_render_under_their_csp_and_other_sites_can_neither_frame_nor_post(
        db: Database, tmp_path: Path):
    data = populate(db, make_tree(tmp_path / "linux"))
    with serving(web_settings(db.url)) as base, \
            browser.chromium(tmp_path / "profile") as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD})
        # The detector sees a violation when there is one: an inline style a policy forbids.
        driver.get("data:text/html,<meta http-equiv='Content-Security-Policy' "
                   "content=\"style-src 'none'\"><style>p{color:red}</style><p>x</p>")
        assert any("style-src" in v for v in violations(driver))

        plots = {"/": 0, f"/series/{data.regressed}": 2, f"/runs/{data.review_run}": 0,
                 f"/campaigns/{data.campaign}": 4, "/hosts": 0, "/nowhere": 0}
        for path, count in plots.items():
            driver.get(base + path)
            assert driver.find_element(By.TAG_NAME, "h1").is_displayed(), path
            header = driver.find_element(By.TAG_NAME, "header")
            assert header.value_of_css_property("background-color") == HEADER_BACKGROUND, path
            svgs = driver.find_elements(By.CSS_SELECTOR, "svg.plot")
            assert len(svgs) == count and all(s.size["width"] > 300 for s in svgs), path
            assert violations(driver) == [], path

        # Another site frames the front page: Chromium refuses to show it there.
        with other_site(f'<iframe id="framed" src="{base}/"></iframe>') as attacker:
            driver.get(attacker)
            driver.switch_to.frame(driver.find_element(By.ID, "framed"))
            assert "lorelab" not in driver.find_element(By.TAG_NAME, "body").text
            driver.switch_to.default_content()
            assert any("frame-ancestors 'none'" in v for v in violations(driver))

        # Another site's page posts the admin form, the right token and all: refused.
        form = (f'<form method="post" action="{base}/replies/{data.reply}/approve">'
                f'<input name="token" value="{ADMIN_TOKEN}"><button>win a prize</button></form>')
        with other_site(form) as attacker:
            driver.get(attacker)
            follow(driver, driver.find_element(By.TAG_NAME, "button"))
            assert "cross-site request refused" in driver.find_element(By.TAG_NAME, "main").text
        replies = requests.get(f"{base}/api/series/{data.regressed}", timeout=10).json()
        assert replies["replies"][0]["state"] == "pending-approval"

        # The same form on the site's own page works, its redirect allowed by form-action.
        driver.get(f"{base}/series/{data.regressed}")
        own = driver.find_element(By.CSS_SELECTOR, f"form[action='/replies/{data.reply}/approve']")
        own.find_element(By.NAME, "token").send_keys(ADMIN_TOKEN)
        follow(driver, own.find_element(By.TAG_NAME, "button"))
        reply = driver.find_element(By.ID, f"reply-{data.reply}")
        assert reply.find_element(By.CSS_SELECTOR, "h3 .state").text == "queued"
        assert violations(driver) == []
