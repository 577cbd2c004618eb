"""The status site (`lorelab serve`): pages and JSON API over real data, on SQLite and PostgreSQL.

Each test serves the real app with uvicorn on a free port and talks HTTP to it; the data are
real series threads made with git and ingested, plus the run, campaign and reply rows the later
stages write. Admin actions change real rows (and a retest runs its steps on eager Celery).
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from bot.config.lab_hosts import LabHostSettings
from bot.db.models import Run, SeriesVersion
from bot.db.session import Database, ensure_schema
from bot.demo.threads import make_tree
from bot.runs.lifecycle import create_run
from bot.web.plots import Point, distribution_svg, nice_ticks, quartiles, run_order_svg
from tests.cli import Lorelab
from tests.conftest import redis_reason
from tests.support.web_data import (
    ADMIN_TOKEN,
    BUILT_CONFIG,
    CONFLICTED,
    REGRESSED,
    UNTESTED,
    WebData,
    populate,
    web_settings,
)
from tests.support.web_server import free_port, serving

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


@pytest.fixture
def data(db: Database, tree: Path) -> WebData:
    return populate(db, tree)


@pytest.fixture
def site(db: Database, data: WebData) -> str:
    with serving(web_settings(db.url)) as base:
        yield base


def titles(base: str, **query: str) -> list[str]:
    response = requests.get(f"{base}/api/series", params=query, timeout=10)
    assert response.status_code == 200, response.text
    return sorted(row["title"] for row in response.json())


def test_front_page_shows_every_series_and_the_state_of_each_stage(site, data):
    page = requests.get(site + "/", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for title, series_id in ((REGRESSED, data.regressed), (CONFLICTED, data.conflicted),
                             (UNTESTED, data.untested)):
        assert f'<a href="/series/{series_id}">{title}</a>' in page.text
    assert "<script" not in page.text  # nothing needs JavaScript
    rows = {row["title"]: row for row in requests.get(site + "/api/series", timeout=10).json()}
    stages = {t: {s["name"]: s["state"] for s in row["stages"]} for t, row in rows.items()}
    assert stages[REGRESSED] == {"apply": "done", "build": "done", "bench": "done",
                                 "report": "done", "reply": "pending-approval"}
    assert rows[REGRESSED]["run_id"] == data.review_run and rows[REGRESSED]["run_version"] == 2
    assert stages[CONFLICTED]["apply"] == "failed"
    apply = next(s for s in rows[CONFLICTED]["stages"] if s["name"] == "apply")
    assert "does not apply: conflicts in mm/swap.c" in apply["detail"]
    assert set(stages[UNTESTED].values()) == {None}
    assert rows[CONFLICTED]["lists"] == ["linux-kernel"]
    assert rows[REGRESSED]["url"] == f"/series/{data.regressed}"


def test_filters_by_list_run_state_and_author(site, data):
    assert titles(site, list="linux-kernel") == [CONFLICTED]
    assert titles(site, list="linux-mm") == sorted([REGRESSED, UNTESTED])
    assert titles(site, state="failed") == [CONFLICTED]
    assert titles(site, state="done") == [REGRESSED]
    assert titles(site, state="none") == [UNTESTED]
    assert titles(site, state="running") == []
    assert titles(site, author="KASONG") == [CONFLICTED]  # any case, part of the address
    assert titles(site, author="ada rec") == sorted([REGRESSED, UNTESTED])  # part of the name
    assert titles(site, list="linux-mm", state="done", author="ada") == [REGRESSED]
    assert titles(site, author="100%_") == []  # LIKE wildcards are matched as text
    page = requests.get(site + "/", params={"author": "kasong", "state": "failed"}, timeout=10)
    assert CONFLICTED in page.text and REGRESSED not in page.text
    assert '<option value="failed" selected>' in page.text  # the form keeps its values
    assert 'value="kasong"' in page.text


def test_series_page_shows_versions_patches_logs_verdicts_plots_and_the_reply(site, data):
    detail = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()
    page = requests.get(f"{site}/series/{data.regressed}", timeout=10)
    assert page.status_code == 200
    html = page.text
    assert "v2 (shown)" in html and f'href="/series/{data.regressed}?version=1&amp;posting=' in html
    for patch in detail["series"]["versions"][1]["patches"]:
        assert patch["subject"] in html
    assert "Applying: mm/vmscan: first" in html  # the apply log
    assert "CC      mm/vmscan.o" in html  # the build log
    # the verdict table, in the lkp style
    table = re.search(r'<table class="verdicts">.*?</table>', html, re.S).group(0)
    headers = re.findall(r'<th scope="col">([^<]+)</th>', table)
    assert headers == ["metric", "base median", "±cv", "patched median", "±cv", "change",
                       "interval", "p", "verdict"]
    row = re.search(r"<tr>\s*<th scope=\"row\">hackbench.time.*?</tr>", table, re.S).group(0)
    cells = [" ".join(re.sub(r"<[^>]+>", " ", c).split())
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells == ["10.01 n=8", "1.10%", "10.61 n=8", "1.20%", "+6.02%",
                     "[+4.91%, +7.13%]", "1.6e-04", "regression"]
    # the plots of the main metric, and none of the secondary counter on this page
    svgs = re.findall(r"<svg .*?</svg>", html, re.S)
    assert len(svgs) == 2
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.get("role") == "img"
        assert root.find(f"{SVG}title").text.startswith("hackbench.time")
        assert "hackbench.time (s)" in svg  # the value axis is labelled with the unit
    # the reply, decoded for reading and byte for byte as it will be sent
    assert "with this series applied (8 interleaved pairs on vm1)." in html
    assert "Message-ID: &lt;lorelab-review-v2@localhost&gt;" in html
    assert "applied =\n(8 interleaved" in html  # quoted-printable soft break, as sent
    older = requests.get(f"{site}/series/{data.regressed}?version=1", timeout=10).text
    assert "nr_batched" in older and "v1 (shown)" in older and "<svg" not in older


def test_a_versions_fix_ups_are_listed_on_its_page(site, data, db):
    """mm's fix-ups sent for a version (`series_versions.fix_ups`, as assembly stores them):
    the page says which patch each fixes and that runs do not apply them."""
    with db.session() as session:
        version = session.scalars(sa.select(SeriesVersion).where(
            SeriesVersion.series_id == data.regressed, SeriesVersion.version == 2)).one()
        version.fix_ups = [["fix-of-2@example.org", 2]]
        size = version.expected
        session.commit()
    html = requests.get(f"{site}/series/{data.regressed}", timeout=10).text
    said = " ".join(re.sub(r"<[^>]+>", " ", re.search(
        r'<p class="small fix-ups">.*?</p>', html, re.S).group(0)).split())
    assert said == f"Fix-ups sent for v2, which lorelab's runs do not apply: of 2/{size}"
    assert 'href="https://lore.kernel.org/r/fix-of-2@example.org"' in html
    api = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()
    assert [(f["message_id"], f["fixes"]) for f in api["series"]["versions"][1]["fix_ups"]] == [
        ("fix-of-2@example.org", 2)]


def test_api_gives_series_runs_campaigns_with_samples_and_hosts(site, data):
    detail = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()
    assert detail["series"]["title"] == REGRESSED
    assert [v["version"] for v in detail["series"]["versions"]] == [1, 2]
    assert [r["id"] for r in detail["runs"]] == [data.review_run, data.old_run]  # newest first
    assert [r["state"] for r in detail["replies"]] == ["pending-approval"]
    run = requests.get(f"{site}/api/runs/{data.review_run}", timeout=10).json()
    assert [s["name"] for s in run["steps"]] == ["apply", "build-base", "build-patched",
                                                 "bench", "report"]
    assert run["series_id"] == data.regressed and run["version"] == 2
    # What the run found, as bot.runs.outcome decides it for the exit status and the reply too.
    assert (run["outcome"], run["why"]) == ("regression", "benchmarked")
    conflict = requests.get(f"{site}/api/runs/{data.conflict_run}", timeout=10).json()
    assert conflict["outcome"] == "does not apply"
    page = requests.get(f"{site}/runs/{data.review_run}", timeout=10).text
    assert '<strong class="outcome">regression</strong>' in page
    assert [c["id"] for c in run["campaigns"]] == [data.campaign]
    assert run["campaigns"][0]["samples"] is None  # samples come with the campaign
    campaign = requests.get(f"{site}/api/campaigns/{data.campaign}", timeout=10).json()
    assert campaign["result"]["metrics"][0]["verdict"] == "regression"
    samples = campaign["samples"]
    assert len(samples) == 2 * 2 * 9  # two metrics, two boots a pair, one warm-up + 8 pairs
    assert sum(s["warmup"] for s in samples) == 4
    assert {s["slot"] for s in samples} == set(range(18))
    assert all(s["slot"] == 2 * s["pair_index"] + s["position"] for s in samples)
    hosts = requests.get(f"{site}/api/hosts", timeout=10).json()
    assert [h["name"] for h in hosts["hosts"]] == ["vm1", "local"]
    vm1 = hosts["hosts"][0]
    assert vm1["runner"] == "qemu" and vm1["cpus"] == 2 and vm1["memory_mb"] == 512
    assert vm1["queue"] == {"name": "lab.vm1", "length": None, "note": "eager (embedded)"}
    assert [c["id"] for c in vm1["campaigns"]] == [data.bench_campaign]
    assert [q["name"] for q in hosts["queues"]] == ["git", "build", "lab.vm1", "lab.local"]
    page = requests.get(f"{site}/hosts", timeout=10).text
    assert f'href="/campaigns/{data.bench_campaign}"' in page and "eager (embedded)" in page


def test_the_exact_config_a_reply_links_to_is_served_as_built(site, data):
    # A reply's "To reproduce" section fetches it with curl: byte for byte, plain text.
    got = requests.get(f"{site}/runs/{data.review_run}/config", timeout=10)
    assert got.status_code == 200 and got.text == BUILT_CONFIG
    assert got.headers["content-type"].startswith("text/plain")
    missing = requests.get(f"{site}/runs/{data.conflict_run}/config", timeout=10)
    assert missing.status_code == 404


def test_unknown_ids_answer_404_with_a_message(site, data):
    for path, message in (("/series/9999", "no series 9999"), ("/runs/9999", "no run 9999"),
                          ("/campaigns/9999", "no campaign 9999")):
        page = requests.get(site + path, timeout=10)
        assert page.status_code == 404 and message in page.text
        assert page.headers["content-type"].startswith("text/html")
        api = requests.get(site + "/api" + path, timeout=10)
        assert api.status_code == 404 and api.json() == {"detail": message}
    missing = requests.get(f"{site}/series/{data.regressed}?version=7", timeout=10)
    assert missing.status_code == 404 and "version" in missing.text
    assert requests.get(site + "/nowhere", timeout=10).status_code == 404
    assert "integer" in requests.get(site + "/series/abc", timeout=10).text


def test_admin_actions_need_the_token(site, data, db):
    url = f"{site}/api/runs/{data.conflict_run}/retest"
    assert requests.post(url, timeout=10).status_code == 401
    wrong = requests.post(url, headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401 and "admin token" in wrong.json()["detail"]
    form = requests.post(f"{site}/replies/{data.reply}/approve", data={"token": "nope"},
                         timeout=10, allow_redirects=False)
    assert form.status_code == 401 and "admin token" in form.text
    detail = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()
    assert detail["replies"][0]["state"] == "pending-approval"  # nothing changed
    assert len(detail["runs"]) == 2


def test_without_a_token_admin_actions_are_disabled(db, data):
    with serving(web_settings(db.url, token="")) as base:
        api = requests.post(f"{base}/api/replies/{data.reply}/approve",
                            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        assert api.status_code == 403 and "admin_token" in api.json()["detail"]
        form = requests.post(f"{base}/runs/{data.review_run}/retest", data={"token": "x"},
                             timeout=10, allow_redirects=False)
        assert form.status_code == 403 and "admin actions are disabled" in form.text
        page = requests.get(f"{base}/series/{data.regressed}", timeout=10).text
        assert 'name="token"' not in page and "Admin actions (approve, retest, cancel) are " \
            "disabled" in page


def _wait_for(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_approve_retest_and_cancel_with_the_token(site, data, db):
    bearer = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    # approve from the page: a plain form, answered with a redirect back to the reply
    form = requests.post(f"{site}/replies/{data.reply}/approve", data={"token": ADMIN_TOKEN},
                         timeout=10, allow_redirects=False)
    assert form.status_code == 303
    location = form.headers["location"]
    assert re.fullmatch(rf"/series/{data.regressed}\?version=2&posting=\d+#reply-{data.reply}",
                        location), location
    reply = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()["replies"][0]
    assert (reply["state"], reply["decided_by"]) == ("queued", "web")
    again = requests.post(f"{site}/api/replies/{data.reply}/approve", headers=bearer, timeout=10)
    assert again.status_code == 409 and "queued" in again.json()["detail"]
    # retest through the API: a new run, sent to (eager) Celery once committed; with no tree
    # configured its apply step fails and says so
    made = requests.post(f"{site}/api/runs/{data.conflict_run}/retest", headers=bearer,
                         timeout=10)
    assert made.status_code == 201, made.text
    new = made.json()
    assert new["id"] != data.conflict_run and new["trigger"] == "web"
    assert new["series_version_id"] == requests.get(
        f"{site}/api/runs/{data.conflict_run}", timeout=10).json()["series_version_id"]

    def finished():
        run = requests.get(f"{site}/api/runs/{new['id']}", timeout=10).json()
        return run if run["state"] not in ("queued", "running") else None

    run = _wait_for(finished)
    assert run is not None and run["state"] == "failed"
    assert "no kernel trees are configured" in run["steps"][0]["error"]
    # retest from the page redirects to the new run's page
    form = requests.post(f"{site}/runs/{data.review_run}/retest", data={"token": ADMIN_TOKEN},
                         timeout=10, allow_redirects=False)
    assert form.status_code == 303 and re.fullmatch(r"/runs/\d+", form.headers["location"])
    # cancel: a queued run stops; a finished one cannot be cancelled
    with db.session() as session:
        version_id = session.get(Run, data.review_run).series_version_id
        queued = create_run(session, session.get(SeriesVersion, version_id), kind="build",
                            tree="mm").id
    cancelled = requests.post(f"{site}/api/runs/{queued}/cancel", headers=bearer, timeout=10)
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert {s["state"] for s in cancelled.json()["steps"]} == {"cancelled"}
    done = requests.post(f"{site}/runs/{data.review_run}/cancel", data={"token": ADMIN_TOKEN},
                         timeout=10, allow_redirects=False)
    assert done.status_code == 409 and "has finished" in done.text
    with db.session() as session:
        assert session.get(Run, data.review_run).state == "done"


def test_openapi_schema_lists_the_json_api(tmp_path):
    with serving(web_settings(f"sqlite:///{tmp_path / 'lorelab.db'}")) as base:
        schema = requests.get(base + "/openapi.json", timeout=10).json()
    paths = schema["paths"]
    for path in ("/api/series", "/api/series/{series_id}", "/api/runs/{run_id}",
                 "/api/campaigns/{campaign_id}", "/api/hosts"):
        assert "get" in paths[path], path
    for path in ("/api/runs/{run_id}/retest", "/api/runs/{run_id}/cancel",
                 "/api/replies/{reply_id}/approve"):
        assert paths[path]["post"]["security"], path  # the bearer token, documented
    assert not [p for p in paths if not p.startswith("/api/")]  # pages are not API
    names = {p["name"] for p in paths["/api/series"]["get"]["parameters"]}
    assert names == {"list", "state", "author", "limit", "offset"}
    assert {"SeriesRow", "Stage", "CampaignView", "SampleView", "HostsView"} <= set(
        schema["components"]["schemas"])


@pytest.mark.redis
def test_hosts_page_counts_the_tasks_waiting_in_redis(tmp_path):
    reason = redis_reason()
    if reason:
        pytest.skip(reason)
    import redis

    queue = f"lab.webtest-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    client.rpush(queue, "task-1", "task-2", "task-3")
    settings = web_settings(f"sqlite:///{tmp_path / 'lorelab.db'}",
                            broker_url="redis://127.0.0.1:6379/0")
    settings.lab_hosts = [LabHostSettings(name="vm9", runner="qemu", queue=queue)]
    try:
        with serving(settings) as base:
            hosts = requests.get(base + "/api/hosts", timeout=10).json()
            page = requests.get(base + "/hosts", timeout=10).text
    finally:
        client.delete(queue)
        client.close()
    assert hosts["hosts"][0]["queue"] == {"name": queue, "length": 3, "note": "waiting"}
    assert hosts["broker"] == "redis://127.0.0.1:6379/0"
    assert re.search(rf"<td>{queue}</td>\s*<td class=\"num\">3</td>", page)


def test_an_unreachable_broker_is_named_not_fatal(tmp_path):
    settings = web_settings(f"sqlite:///{tmp_path / 'lorelab.db'}",
                            broker_url="redis://:secret@127.0.0.1:9/0")
    with serving(settings) as base:
        hosts = requests.get(base + "/api/hosts", timeout=10).json()
    assert hosts["broker"] == "redis://127.0.0.1:9/0"  # no password shown
    assert hosts["hosts"][0]["queue"]["length"] is None
    assert hosts["hosts"][0]["queue"]["note"].startswith("broker unreachable")


def test_lorelab_serve_runs_until_interrupted(tmp_path, tree):
    # One backend is enough here: the command is what is tested, the pages are tested above.
    db = Database(f"sqlite:///{tmp_path / 'lorelab.db'}")
    ensure_schema(db.engine)
    data = populate(db, tree)
    cli = Lorelab(tmp_path / "home", db.url)
    port = free_port()
    env = {**cli.env, "LORELAB_WEB_PORT": str(port), "LORELAB_WEB_ADMIN_TOKEN": ADMIN_TOKEN}
    proc = subprocess.Popen([sys.executable, "-c", "from bot.cli import main; main()", "serve"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def up():
            try:
                return requests.get(f"http://127.0.0.1:{port}/api/series", timeout=2)
            except requests.ConnectionError:
                return None

        answer = _wait_for(up, timeout=30)
        assert answer is not None and answer.status_code == 200, proc.stderr.read1()
        assert REGRESSED in [row["title"] for row in answer.json()]
        approve = requests.post(f"http://127.0.0.1:{port}/api/replies/{data.reply}/approve",
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        assert approve.status_code == 200 and approve.json()["state"] == "queued"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err.decode()
    assert f"serving http://127.0.0.1:{port}/" in err.decode()
    # a port in use: a message that says what to do, not a traceback
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = cli.run("serve", "--port", str(taken.getsockname()[1]), check=False)
    assert busy.returncode == 1
    assert b"choose another --port" in busy.stderr and b"Traceback" not in busy.stderr


# --- plots: pure -------------------------------------------------------------------------------


def test_ticks_are_round_and_cover_the_values():
    assert nice_ticks(0.93, 1.07) == (0.9, 0.95, 1.0, 1.05, 1.1)
    assert nice_ticks(123456, 130000) == (122000, 124000, 126000, 128000, 130000)
    low, high = nice_ticks(5, 5)[0], nice_ticks(5, 5)[-1]
    assert low < 5 < high  # one value still gets an axis around it
    assert quartiles([1, 2, 3, 4]) == (1.75, 2.5, 3.25)


def test_plots_tell_a_and_b_apart_by_colour_and_shape():
    points = [Point(slot, "AB"[slot % 2], 10.0 + slot % 2 * 0.6 + slot / 100, slot < 2)
              for slot in range(12)]
    order = ET.fromstring(run_order_svg(points, metric="hackbench.time", unit="s", ident="p1"))
    assert order.get("aria-labelledby") == "p1-title p1-desc"
    assert "5 runs of the base kernel A" in order.find(f"{SVG}desc").text
    circles = [c for c in order.iter(f"{SVG}circle") if c.find(f"{SVG}title") is not None]
    triangles = [p for p in order.iter(f"{SVG}path") if p.find(f"{SVG}title") is not None]
    # every run plus the legend's markers (A, B, warm-up)
    assert len(circles) == 6 + 2 and len(triangles) == 6 + 1
    assert {c.get("stroke") for c in circles} != {t.get("stroke") for t in triangles}
    assert sum(c.get("fill") == "none" for c in circles) == 2  # warm-ups hollow
    texts = [t.text for t in order.iter(f"{SVG}text")]
    assert "hackbench.time (s)" in texts and "run order (0 = first run)" in texts
    spread = ET.fromstring(distribution_svg(points, metric="hackbench.time", unit="s",
                                            ident="p2"))
    labels = [t.text for t in spread.iter(f"{SVG}text")]
    assert "n=5" in labels and "A (base)" in labels and "B (patched)" in labels
    assert len(list(spread.iter(f"{SVG}rect"))) == 1 + 2  # background and one box per kernel


def test_plots_of_a_triples_campaign_show_the_alternative_as_a_third_kernel():
    points = [Point(slot, "ABC"[slot % 3], 10.0 + slot % 3, False) for slot in range(9)]
    order = ET.fromstring(run_order_svg(points, metric="ops", unit="ops/s", ident="t1"))
    assert "3 runs of the alternative kernel C (grey squares)" in order.find(f"{SVG}desc").text
    squares = [r for r in order.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(squares) == 3 + 1  # every run of C and the legend's marker
    spread = ET.fromstring(distribution_svg(points, metric="ops", unit="ops/s", ident="t2"))
    assert "C (alternative)" in [t.text for t in spread.iter(f"{SVG}text")]


def test_the_web_settings_come_from_the_environment():
    from bot.config import load_settings

    settings = load_settings("/dev/null", env={"LORELAB_WEB_PORT": "9001",
                                               "LORELAB_WEB_ADMIN_TOKEN": "t"})
    assert (settings.web.port, settings.web.admin_token, settings.web.host) == (
        9001, "t", "127.0.0.1")

