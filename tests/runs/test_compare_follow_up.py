"""The compare follow-up on the stand-in tree: a reviewer answers patch 2/2 of the batching
series with a diff of their own; a child run of the review applies it in place of that patch,
builds it and runs base, series and alternative in randomized triples, and the reply answers
the reviewer's message with the three comparisons. A diff that does not apply is said to the
reviewer only when they asked by mail."""

from __future__ import annotations

import email
import email.policy
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import load_settings
from bot.db.models import LabCampaign, OutboxReply, Run, SeriesVersion
from bot.db.session import Database
from bot.demo.alternative import (
    LIGHTER_PACING_REPLY,
    PACING,
    REVIEWER,
    STALE_REPLY,
    alternative_reply,
    faster_alternative,
    files_after,
    git_diff,
    lighter_pacing,
    stale_alternative,
)
from bot.demo.simtree import BATCH_COUNTERS, ONE_CPU_CONFIG
from bot.demo.threads import Change
from bot.git import git_output
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.report.compose.results import MetricResult
from bot.runs.lifecycle import create_run
from bot.runs.records import AlternativeRecord
from bot.runs.taskqueue import send_run
from tests.runs.test_review import Review
from workers.kernel.alternative import run_apply_alternative_step
from workers.kernel.steps import run_apply_step

pytestmark = [
    pytest.mark.slow,  # builds and benchmarks the stand-in tree: CI, not the fast loop
    pytest.mark.sqlite_only,  # the stages' SQL is tested on both; tests/e2e runs on PostgreSQL
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

THROUGHPUT = "reclaim-sim.throughput"


class Thread:
    """A reviewed batching series, and compare runs of reviewers' replies to its patches."""

    def __init__(self, root: Path, db_url: str, monkeypatch: pytest.MonkeyPatch,
                 changes: tuple[Change, ...] = BATCH_COUNTERS,
                 found: tuple[str, ...] = ("improvement", "no change", "inconclusive"),
                 base_config: str = "defconfig") -> None:
        self.review = Review(root, db_url, changes, base_config=base_config)
        _, outcome = self.review.review()
        assert outcome["verdict"] in found, outcome
        self.review_run = outcome["run"]
        # A signed-rank test needs about ten triples to call a change at the family's level.
        config = self.review.config
        config.write_text(config.read_text().replace("pairs_max = 6", "pairs_max = 20"))
        for name in ("LORELAB_CONFIG", "LORELAB_DATA_DIR", "LORELAB_DATABASE_URL"):
            monkeypatch.setenv(name, self.review.cli.env[name])
        self.settings = load_settings(config)
        self.db = Database(db_url)

    def reply(self, patch: int, diff: str, text: str | None = None) -> str:
        """The reviewer's answer to patch `patch` carrying `diff`, stored; its Message-ID."""
        raw = alternative_reply(self.review.messages[patch], diff,
                                **({"text": text} if text else {}))
        ingest(self.db, [RawMail(raw, "reply")], settings=self.settings.ingest,
               list_name="linux-mm")
        return email.message_from_bytes(raw)["Message-ID"].strip("<>")

    def compare(self, msgid: str, trigger: str) -> int:
        """A new compare run of the review for the alternative in `msgid`."""
        with self.db.session() as session:
            parent = session.get(Run, self.review_run)
            run = create_run(session, session.get(SeriesVersion, parent.series_version_id),
                             kind="compare", tree=parent.tree,
                             base=parent.base_commit, benchmarks=list(parent.benchmarks),
                             runner=parent.runner, trigger=trigger, parent=parent,
                             options={"alternative": msgid})
            return run.id

    def steps(self, run_id: int) -> dict[str, tuple[str, str | None]]:
        with self.db.session() as session:
            return {s.name: (s.state, s.error) for s in session.get(Run, run_id).steps}

    def record(self, run_id: int) -> AlternativeRecord:
        with self.db.session() as session:
            return AlternativeRecord.from_step(next(
                s for s in session.get(Run, run_id).steps if s.name == "apply-alternative"))

    def replies(self, kind: str) -> list[OutboxReply]:
        with self.db.session() as session:
            rows = list(session.scalars(sa.select(OutboxReply).where(OutboxReply.kind == kind)
                                        .order_by(OutboxReply.id)))
            session.expunge_all()
            return rows


def _body(reply: OutboxReply) -> tuple[email.message.EmailMessage, str]:
    message = email.message_from_bytes(reply.raw, policy=email.policy.default)
    return message, " ".join(message.get_content().split())


def test_a_faster_alternative_in_place_of_a_patch_is_measured_and_answered(
        tmp_path, db_url, monkeypatch):
    thread = Thread(tmp_path, db_url, monkeypatch)
    msgid = thread.reply(2, faster_alternative())
    run_id = thread.compare(msgid, "auto")
    send_run(thread.db, thread.settings, run_id)  # eager: the steps run here, now

    steps = thread.steps(run_id)
    assert all(state == "done" for state, _ in steps.values()), steps
    record = thread.record(run_id)
    assert (record.mode, record.where, record.answers) == ("in place", "in place of 2/2", 2)
    with thread.db.session() as session:
        (campaign,) = session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == run_id))
        assert campaign.kernel_c and record.commit and campaign.kernel_c.startswith(record.commit)
        boots = {(s.kernel, s.pair_index, s.position) for s in campaign.samples
                 if s.metric == THROUGHPUT}
        triples = {s.pair_index for s in campaign.samples if not s.warmup}
        comparisons = {key: next(m for m in metrics if m["metric"] == THROUGHPUT)
                       for key, metrics in campaign.result["comparisons"].items()}
    # Every triple booted each of the three kernels once, in the order recorded for it.
    assert len(boots) == 3 * (len(triples) + campaign.warmup_pairs)
    assert len(campaign.orders) == len(triples)
    assert {(kernel, i + campaign.warmup_pairs, position)
            for i, order in enumerate(campaign.orders)
            for position, kernel in enumerate(order)} <= boots
    # The reviewer's version removes the atomic update every fault still makes after the
    # series. What that saves depends on how often the simulator's two CPUs run at once, which
    # the machine's load decides: from -3% to +30% against the series in campaigns here at
    # load 6 to 10 (+20% in the median of standalone runs), so the test holds the reply to
    # what was measured: never a regression, and each comparison said as it was judged.
    alternative = comparisons["BC"]
    assert alternative["verdict"] != "regression", comparisons
    clause = {"improvement": "the alternative does better", "inconclusive": "could not tell",
              "no change": "no difference of 1% or more"}[alternative["verdict"]]

    (reply,) = thread.replies("alternative")
    message, flat = _body(reply)
    # The reply answers the reviewer's message, to the reviewer, in the series' thread.
    assert message["In-Reply-To"] == f"<{msgid}>"
    assert REVIEWER[1] in message["To"] and f".r{run_id}." in reply.message_id
    assert f"<{msgid}>" in message["References"]
    assert "in place of 2/2" in flat
    # From the judgement as it was made: the stored `change_pct` is rounded to 3 decimals, and
    # rounding that again to 1 can differ from the reply's rounding of the value itself.
    judged = {key: MetricResult.from_dict(m).comparison for key, m in comparisons.items()}
    figures = {key: f"{c.change_pct:+.1f}% [{c.ci_low_pct:+.1f}, {c.ci_high_pct:+.1f}]"
               for key, c in judged.items()}
    assert (f"base -> series {figures['AB']}; base -> alternative {figures['AC']}; "
            f"alternative vs series {figures['BC']}, {clause}") in flat
    assert f"Result, the alternative against the series: {alternative['verdict']}." in flat
    assert f"{len(triples)} triples" in flat and "Test machine: " in flat
    assert f"curl -s https://lore.kernel.org/all/{msgid}/raw" in message.get_content()


def test_an_alternative_much_faster_than_the_series_is_measured_faster(
        tmp_path, db_url, monkeypatch):
    # The pacing patch alone makes the simulator on one CPU (ONE_CPU_CONFIG) some nine times
    # slower; the reviewer's version waits once per 32 folios. CPU work on one CPU, nothing
    # shared: the difference holds under any load.
    thread = Thread(tmp_path, db_url, monkeypatch, changes=(PACING,),
                    found=("regression", "inconclusive"),  # 6 pairs: the review may not tell
                    base_config=ONE_CPU_CONFIG)
    msgid = thread.reply(1, lighter_pacing(), LIGHTER_PACING_REPLY)
    run_id = thread.compare(msgid, "auto")
    send_run(thread.db, thread.settings, run_id)

    assert all(state == "done" for state, _ in thread.steps(run_id).values())
    assert thread.record(run_id).where == "in place of 1/1"
    with thread.db.session() as session:
        (campaign,) = session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == run_id))
        comparisons = {key: next(m for m in metrics if m["metric"] == THROUGHPUT)
                       for key, metrics in campaign.result["comparisons"].items()}
    assert comparisons["AB"]["verdict"] == "regression", comparisons
    assert comparisons["BC"]["verdict"] == "improvement", comparisons
    (reply,) = thread.replies("alternative")
    _, flat = _body(reply)
    assert "Result, the alternative against the series: improvement." in flat
    assert "the alternative does better" in flat and "in place of 1/1" in flat


def test_a_diff_that_does_not_apply_is_said_only_to_a_reviewer_who_asked(
        tmp_path, db_url, monkeypatch):
    thread = Thread(tmp_path, db_url, monkeypatch)
    stale = thread.reply(2, stale_alternative(), STALE_REPLY)

    unasked = thread.compare(stale, "auto")
    send_run(thread.db, thread.settings, unasked)
    steps = thread.steps(unasked)
    assert steps["apply-alternative"][0] == "failed"
    assert "does not apply in place of 2/2 nor on top of the series" in \
        str(steps["apply-alternative"][1])
    assert steps["report"][0] == "done" and not thread.replies("alternative")

    asked = thread.compare(stale, f"email:{REVIEWER[1]}")
    send_run(thread.db, thread.settings, asked)
    (reply,) = thread.replies("alternative")
    message, flat = _body(reply)
    assert message["In-Reply-To"] == f"<{stale}>" and f".r{asked}." in reply.message_id
    record = thread.record(asked)
    assert record.tried == ("in place of 2/2", "on top of the series")
    assert record.failed_at and all(at.startswith("mm/vmscan.c:") for at in record.failed_at)
    assert ("It does not apply in place of 2/2 nor on top of the series" in flat
            and "nothing was built or measured" in flat)
    assert f"Does not apply at: {', '.join(record.failed_at)}" in flat

    # A diff written against the whole series goes on top of it.
    series = files_after(BATCH_COUNTERS)
    on_top = thread.reply(2, git_diff(series, files_after((Change(
        "mm/vmscan.c", "\t\tsc_count(sc, PGDEACTIVATE);",
        ("\t\tsc_count(sc, PGDEACTIVATE);\t/* in the same batch */",), "", ""),), series)))
    run_id = thread.compare(on_top, "auto")
    with thread.db.session() as session:
        steps_by_name = {s.name: s.id for s in session.get(Run, run_id).steps}
    run_apply_step(thread.db, thread.settings, steps_by_name["apply"])
    run_apply_alternative_step(thread.db, thread.settings, steps_by_name["apply-alternative"])
    record = thread.record(run_id)
    assert (record.mode, record.where, record.tried) == (
        "on top", "on top of the series", ("in place of 2/2", "on top of the series"))
    vmscan = thread.review.tree / "mm/vmscan.c"
    assert "/* in the same batch */" in git_output(thread.review.tree, "show",
                                                   f"{record.commit}:mm/vmscan.c")
    assert "in the same batch" not in vmscan.read_text()  # the checkout is never touched
