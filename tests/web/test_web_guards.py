"""What keeps the status site's readers and its admin safe from other sites and from guessers.

Every answer forbids framing and MIME sniffing and carries a CSP the pages satisfy; an admin
POST that a browser says comes from another site's page is refused, token or not; wrong tokens
are throttled per client address. A real uvicorn serves real data (series ingested from git
threads, runs, a campaign, a reply waiting for approval) and the tests talk HTTP to it.
"""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from bot.db.session import Database
from bot.demo.threads import make_tree
from bot.web.throttle import WRONG_TOKENS_PER_MINUTE, TokenThrottle
from tests.support.web_data import ADMIN_TOKEN, WebData, populate, web_settings
from tests.support.web_server import serving

# The headers here do not depend on the database; its queries run on both in test_web.py.
pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def data(db: Database, tmp_path: Path) -> WebData:
    return populate(db, make_tree(tmp_path / "linux"))


@pytest.fixture
def site(db: Database, data: WebData) -> str:
    with serving(web_settings(db.url)) as base:
        yield base


def csp(response: requests.Response) -> dict[str, str]:
    policy = response.headers["Content-Security-Policy"]
    return dict((d.strip().split(" ", 1) + [""])[:2] for d in policy.split(";"))


def pending(site: str, data: WebData) -> bool:
    detail = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()
    return detail["replies"][0]["state"] == "pending-approval"


def test_every_answer_forbids_framing_and_sniffing_and_pages_satisfy_their_csp(site, data):
    answers = {path: requests.get(site + path, timeout=10) for path in (
        "/", f"/series/{data.regressed}", f"/runs/{data.review_run}",
        f"/campaigns/{data.campaign}", "/hosts", "/nowhere", "/series/abc",
        "/api/series", f"/api/runs/{data.review_run}", "/api/runs/9999",
        f"/runs/{data.review_run}/config", "/openapi.json")}
    answers["POST, wrong token"] = requests.post(f"{site}/replies/{data.reply}/approve",
                                                 data={"token": "nope"}, timeout=10)
    assert [a.status_code for a in answers.values()] == [200] * 5 + [404, 422, 200, 200, 404,
                                                                     200, 200, 401]
    for what, answer in answers.items():
        assert answer.headers["X-Frame-Options"] == "DENY", what
        assert answer.headers["X-Content-Type-Options"] == "nosniff", what
        policy = csp(answer)
        assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'none'", what
        assert "script-src" not in policy and "unsafe-inline" not in str(policy), what
        if not answer.headers["content-type"].startswith("text/html"):
            continue
        # What the policy allows is all a page uses: its styles carry this answer's nonce, and
        # there is no script, no style attribute, no frame, no image from elsewhere.
        html = answer.text
        nonces = re.findall(r"<style nonce=\"([^\"]+)\">", html)
        assert nonces and len(nonces) == html.count("<style"), what
        assert {f"'nonce-{n}'" for n in nonces} == {policy["style-src"]}, what
        for forbidden in ("<script", " style=", "<iframe", "<img", "<link", "@import"):
            assert forbidden not in html, (what, forbidden)
    first, second = csp(answers["/"])["style-src"], csp(requests.get(site + "/", timeout=10))[
        "style-src"]
    assert first != second  # a fresh nonce every time
    # The interactive API docs would load a CDN's scripts into the site: not served.
    assert requests.get(site + "/docs", timeout=10).status_code == 404
    assert requests.get(site + "/redoc", timeout=10).status_code == 404


def test_an_admin_post_from_another_sites_page_is_refused_even_with_the_token(site, data):
    form = f"{site}/replies/{data.reply}/approve"
    for headers in ({"Origin": "https://evil.example"},
                    {"Origin": "null"},  # a sandboxed frame or a data: page
                    {"Origin": site.replace("127.0.0.1", "localhost")},  # same machine, other site
                    {"Origin": "http://127.0.0.1:1"},  # other port, other site
                    {"Referer": "https://evil.example/innocent.html"}):
        refused = requests.post(form, data={"token": ADMIN_TOKEN}, headers=headers, timeout=10,
                                allow_redirects=False)
        assert refused.status_code == 403, (headers, refused.status_code)
        assert "cross-site request refused" in refused.text, headers
        assert "innocent.html" not in refused.text  # the referring page's path is not echoed
    api = requests.post(f"{site}/api/replies/{data.reply}/approve", timeout=10,
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                 "Origin": "https://evil.example"})
    assert api.status_code == 403 and "https://evil.example" in api.json()["detail"]
    assert pending(site, data)  # nothing was approved
    # From the site's own page (what a browser sends there), the same form works.
    ok = requests.post(form, data={"token": ADMIN_TOKEN}, allow_redirects=False, timeout=10,
                       headers={"Origin": site, "Referer": f"{site}/series/{data.regressed}"})
    assert ok.status_code == 303 and not pending(site, data)


def test_an_admin_post_through_the_configured_base_url_is_not_cross_site(db, data):
    settings = web_settings(db.url)
    settings.web.base_url = "https://lorelab.example.org/"  # a proxy in front, under this name
    with serving(settings) as base:
        ok = requests.post(f"{base}/replies/{data.reply}/approve", data={"token": ADMIN_TOKEN},
                           headers={"Origin": "https://lorelab.example.org"}, timeout=10,
                           allow_redirects=False)
        assert ok.status_code == 303, ok.text


def post_from(address: str, base: str, path: str, token: str) -> tuple[int, dict, str]:
    """A form POST sent from a local `address` (127.0.0.0/8 all reaches this host): status,
    headers (names in lower case) and body."""
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10,
                                      source_address=(address, 0))
    try:
        conn.request("POST", path, body=f"token={token}",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, \
            answer.read().decode()
    finally:
        conn.close()


def test_wrong_tokens_are_throttled_per_client_address(site, data):
    path = f"/replies/{data.reply}/approve"
    # Requests without a token guess nothing: they are not counted.
    for _ in range(2 * WRONG_TOKENS_PER_MINUTE):
        assert post_from("127.0.0.1", site, path, "")[0] == 401
    # Each wrong token is counted; the limit's worth are answered as wrong...
    for attempt in range(WRONG_TOKENS_PER_MINUTE):
        status, _, _ = post_from("127.0.0.1", site, path, f"guess-{attempt}")
        assert status == 401, attempt
    # ...and then the address is refused without its token being compared, even the right one.
    for token in ("guess-next", ADMIN_TOKEN):
        status, headers, body = post_from("127.0.0.1", site, path, token)
        assert status == 429, token
        assert 1 <= int(headers["retry-after"]) <= 60
        assert "too many wrong admin tokens from 127.0.0.1" in body
        assert f"try again in {headers['retry-after']} s" in body
    api = requests.post(f"{site}/api/replies/{data.reply}/approve", timeout=10,
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert api.status_code == 429 and "Retry-After" in api.headers
    assert "too many wrong admin tokens" in api.json()["detail"]
    assert pending(site, data)
    # Another address is not held back by this one's guesses.
    status, headers, _ = post_from("127.0.0.2", site, path, ADMIN_TOKEN)
    assert status == 303 and not pending(site, data)


def test_the_throttle_forgets_wrong_tokens_older_than_its_window_and_bounds_its_memory():
    now = [1000.0]
    throttle = TokenThrottle(limit=3, window=60, max_addresses=100, clock=lambda: now[0])
    for _ in range(3):
        assert throttle.wait("192.0.2.1") == 0
        throttle.failed("192.0.2.1")
        now[0] += 10
    assert throttle.wait("192.0.2.1") == 30  # the first of the three leaves the window at 1060
    assert throttle.wait("192.0.2.2") == 0
    now[0] = 1060
    assert throttle.wait("192.0.2.1") == 0  # one more may be tried...
    throttle.failed("192.0.2.1")
    assert throttle.wait("192.0.2.1") == 10  # ...and then the second must leave first
    for host in range(1000):  # a flood from many addresses, the same wrong token twice each
        throttle.failed(f"10.0.{host // 256}.{host % 256}")
        throttle.failed(f"10.0.{host // 256}.{host % 256}")
    assert len(throttle) == 100  # the newest hundred addresses are kept, the rest forgotten
    assert throttle.wait("192.0.2.1") == 0 and len(throttle) == 100
