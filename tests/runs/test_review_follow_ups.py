"""`lorelab review` on the stand-in tree plans the follow-ups its result calls for, once, and
`--follow-ups` runs them in the same process: a two-patch series whose second patch makes the
simulator several times slower (bot.demo.simtree.PACED_RECLAIM's 3/4), with a reviewer's inline
diff in the thread."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import load_settings
from bot.db.models import Run
from bot.db.session import Database
from bot.demo.simtree import ONE_CPU_CONFIG, PACED_RECLAIM
from bot.demo.threads import as_mbox, make_reply
from bot.mail import parse_message
from bot.runs.follow_ups import start_follow_ups
from tests.runs.test_review import Review
from tests.support.finished_review import DIFF

pytestmark = [
    pytest.mark.slow,
    pytest.mark.sqlite_only,
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

# A comment, then the busy wait after each reclaimed page: a change no noise hides.
SLOWER = (PACED_RECLAIM[0], PACED_RECLAIM[2])
RITA = ("Rita Reviewer", "rita@example.org")


def slower_review(root: Path) -> Review:
    """The review, with enough pairs for the slowdown to be told from a loaded machine's
    noise (as the bisection's own test: tests/workers/lab/test_bisect_follow_up.py), on one
    simulated CPU."""
    review = Review(root, f"sqlite:///{root / 'lorelab.db'}", changes=SLOWER,
                    base_config=ONE_CPU_CONFIG)
    review.config.write_text(review.config.read_text().replace(
        "pairs_max = 6", "pairs_min = 6\npairs_max = 12"))
    return review


def test_a_regression_in_two_patches_plans_bisect_align_and_compare_once(tmp_path):
    review = slower_review(tmp_path)
    alternative = make_reply(review.messages[2], author=RITA, body="How about this instead?",
                             diff=DIFF)
    review.mbox.write_bytes(as_mbox([*review.messages, alternative]))
    code, outcome = review.review()
    assert (code, outcome["verdict"]) == (11, "regression"), outcome["why"]
    planned = [(f["kind"], f["state"], f["verdict"]) for f in outcome["follow_ups"]]
    assert planned == [("bisect", "queued", "pending"), ("align", "queued", "pending"),
                       ("compare", "queued", "pending")]
    db = Database(review.db_url)
    with db.session() as session:
        runs = session.scalars(sa.select(Run).where(Run.parent_run_id == outcome["run"])
                               .order_by(Run.id)).all()
        assert runs[2].options == {"alternative": parse_message(alternative).msgid}
        assert {r.tree for r in runs} == {str(review.tree)}
        # The report step again finds them made: nothing new.
        again = start_follow_ups(session, load_settings(review.config, env={}),
                                 session.get(Run, outcome["run"]))
    assert again == []
    shown = review.cli.json("runs", "show", str(outcome["run"]))
    assert [f["kind"] for f in shown["follow_ups"]] == ["bisect", "align", "compare"]
    child = review.cli.json("runs", "show", str(runs[0].id))
    assert child["parent_run_id"] == outcome["run"] and child["kind"] == "bisect"
    text = review.cli.run("runs", "show", str(runs[2].id)).stdout.decode()
    assert f"follows run {outcome['run']}: alternative <" in text
    listed = review.cli.run("runs", "list").stdout.decode()
    assert f"of run {outcome['run']}" in listed
    db.dispose()


def test_review_with_follow_ups_runs_them_here_and_keeps_its_exit_status(tmp_path):
    review = slower_review(tmp_path)
    # Only the alignment check: one more pair of builds and one campaign.
    review.config.write_text(review.config.read_text() + "\n[follow_ups]\nbisect = false\n"
                             "compare = false\nexperiment = false\n")
    code, outcome = review.review("--follow-ups")
    assert code == outcome["exit_code"] == 11 and outcome["verdict"] == "regression"
    [align] = outcome["follow_ups"]
    assert align["kind"] == "align" and "exit_code" not in align
    assert align["state"] in ("done", "failed") and align["verdict"] != "pending"
    text = review.cli.run("runs", "show", str(outcome["run"])).stdout.decode()
    assert f"follow-up: run {align['run']} align {align['state']}" in text
