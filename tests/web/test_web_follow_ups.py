"""The status site shows a review's follow-ups under its series and under the review run (kind,
state, outcome, reply), and each follow-up names the review it follows: real data (tests/support/
web_data.py) plus follow-up runs made as bot.runs.follow_ups makes them."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from bot.db.models import OutboxReply, Run
from bot.db.session import Database
from bot.demo.threads import make_tree
from bot.runs.follow_ups import start_follow_up
from bot.runs.records import ReportRecord
from tests.support.web_data import WebData, populate, web_settings
from tests.support.web_server import serving


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def _follow_ups(db: Database, data: WebData) -> tuple[int, int]:
    """A queued bisection and a finished align run with its reply, of the review run."""
    with db.session() as session:
        review = session.get(Run, data.review_run)
        bisect, _ = start_follow_up(session, review, "bisect", {}, "auto")
        align, _ = start_follow_up(session, review, "align", {"pairs": 12},
                                   "email:hannes@cmpxchg.org")
        reply = OutboxReply(
            message_id="lorelab-align@localhost", kind="alignment",
            series_version_id=review.series_version_id, in_reply_to="x@localhost",
            subject="Re: [PATCH v2 0/2] alignment", author="ada@example.org",
            lists=["linux-mm@kvack.org"], recipients=["ada@example.org"],
            raw=b"Subject: Re: alignment\n\nThe change survives forced alignment.\n",
            state="queued", attempts=0)
        session.add(reply)
        session.flush()
        align.state = "done"
        for step in align.steps:
            step.state = "done"
            if step.name == "report":
                step.result = ReportRecord(reply=reply.id, message_id=reply.message_id,
                                           kind=reply.kind, state=reply.state).as_result()
        return bisect.id, align.id


def test_follow_ups_show_under_their_series_and_their_review(db, tree):
    data = populate(db, tree)
    bisect, align = _follow_ups(db, data)
    with serving(web_settings(db.url)) as site:
        series = requests.get(f"{site}/series/{data.regressed}", timeout=10)
        assert series.status_code == 200
        page = series.text
        # The review is still the run the page is about; its follow-ups are listed under it.
        assert f"Follow-ups of run #{data.review_run}" in page
        table = page[page.index('<table class="follow-ups">'):]
        table = table[:table.index("</table>")]
        assert f'<a href="/runs/{bisect}">#{bisect}</a></td><td>bisect' in table
        assert f'<a href="/runs/{align}">#{align}</a></td><td>align' in table
        assert "pairs 12" in table and "email:hannes@cmpxchg.org" in table
        assert "alignment reply</a>" in table and "#reply-" in table
        review = requests.get(f"{site}/runs/{data.review_run}", timeout=10).text
        assert "<h2>Follow-ups</h2>" in review and f"/runs/{bisect}" in review
        follow_up = requests.get(f"{site}/runs/{align}", timeout=10).text
        assert f'<a href="/runs/{data.review_run}">run #{data.review_run}</a>; pairs 12' in \
            follow_up
        assert "&lt;lorelab-align@localhost&gt;" in follow_up
        shown = requests.get(f"{site}/api/runs/{data.review_run}", timeout=10).json()
        assert [(f["id"], f["kind"], f["state"]) for f in shown["follow_ups"]] == [
            (bisect, "bisect", "queued"), (align, "align", "done")]
        assert shown["follow_ups"][1]["reply"]["message_id"] == "lorelab-align@localhost"
        assert shown["follow_ups"][0]["reply"] is None
        child = requests.get(f"{site}/api/runs/{align}", timeout=10).json()
        assert (child["parent_run_id"], child["options"]) == (data.review_run, {"pairs": 12})
        detail = requests.get(f"{site}/api/series/{data.regressed}", timeout=10).json()
        by_id = {run["id"]: run for run in detail["runs"]}
        assert [f["id"] for f in by_id[data.review_run]["follow_ups"]] == [bisect, align]
