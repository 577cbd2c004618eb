"""The bisect reply's text (bot/report/compose/bisect_reply.py): the patch named with its
figures, or exactly why not; boots for a booted lab, runs for a local one."""

from __future__ import annotations

import datetime as dt

from bot.report.compose.bisect_reply import BisectReplyContext, compose_bisect_reply
from bot.report.compose.inputs import (
    BotIdentity,
    ParentMessage,
    Person,
    ReplyOptions,
    SeriesInfo,
    TreeInfo,
)
from bot.report.compose.results import Machine
from bot.runs.records import BisectProbe, BisectRecord, MetricFinding
from bot.runs.states import StepState

OPTIONS = ReplyOptions(identity=BotIdentity(sender=Person("lorelab", "lorelab@lab.example.org"),
                                            domain="lab.example.org"),
                       date=dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC))
PARENT = ParentMessage(msgid="cover@example.org", subject="[PATCH 0/4] mm/vmscan: pacing",
                       sender=Person("Ada", "ada@example.org"), lists=("linux-mm@kvack.org",))
SUBJECTS = ("init: a comment", "mm/vmscan: another comment", "mm/vmscan: pace reclaim",
            "init: tidy")
QEMU = Machine(cpu="QEMU Virtual CPU", cores=2, boot="QEMU guest under TCG", host="tcg",
               runner="qemu", kernel="6.1.0")


def metric(change: float | None, low: float | None, high: float | None, verdict: str,
           words: str) -> MetricFinding:
    return MetricFinding("readtwice", "readtwice.throughput", verdict, words, change, low, high)


REVIEW = (metric(-6.1, -7.0, -5.2, "regression", "regression (>= 2%)"),)
NOT_IT = BisectProbe(2, "c2", "does not carry the change", (11,), 14,
                     (metric(0.3, -0.8, 1.2, "no change", "no change of 2% or more"),))
IT = BisectProbe(3, "c3", "carries the change", (12,), 16,
                 (metric(-6.1, -7.0, -5.2, "regression", "regression (>= 2%)"),))


def body(record: BisectRecord, machine: Machine | None = QEMU) -> str:
    ctx = BisectReplyContext(
        parent=PARENT,
        series=SeriesInfo(title="mm/vmscan: pacing", version=1, patches=4,
                          series_version_id=7, anchor_msgid="cover@example.org", run_id=9),
        tree=TreeInfo(tree="akpm/mm", branch="mm-unstable", base="0123456789abcdef"),
        subjects=SUBJECTS, bisection=record, machine=machine,
        reproduce=("git checkout HEAD~1   # prefix 3/4",))
    reply = compose_bisect_reply(ctx, OPTIONS)
    assert reply.kind == "bisect" and reply.message["X-Lorelab-Kind"] == "bisect"
    assert reply.message["In-Reply-To"] == "<cover@example.org>"
    assert ".r9." in reply.message_id  # each follow-up run its own reply
    text = reply.message.get_content()
    assert all(len(line) <= 100 for line in text.splitlines())
    return text


def test_the_patch_is_named_with_each_prefix_figures():
    text = body(BisectRecord(host="tcg", runner="qemu", patches=4, boots_per_step=24,
                             pairs_max=11, review=REVIEW, probes=(NOT_IT, IT), ended="found",
                             found=3, good=2, bad=3, boots=30))
    flat = " ".join(text.split())
    assert ('The change comes with 3/4 "mm/vmscan: pace reclaim": prefix 3/4 carries it and '
            "prefix 2/4 was shown not to.") in flat
    lines = text.splitlines()
    two = next(x for x in lines if x.strip().startswith("prefix 2/4"))
    three = next(x for x in lines if x.strip().startswith("prefix 3/4"))
    assert "+0.30% [-0.80%, +1.20%]" in two and "no change of 2% or more" in two
    assert "-6.10% [-7.00%, -5.20%]" in three and "regression" in three
    assert any(x.strip().startswith("series 4/4") and "(the review)" in x for x in lines)
    assert "It took 30 boots in 2 steps" in flat and "at most 24 boots per step" in flat
    assert "QEMU guest under TCG" in flat
    assert "git checkout HEAD~1 # prefix 3/4" in flat


def test_a_budget_that_ran_out_says_so_and_what_is_known():
    unknown = BisectProbe(3, "c3", "could not tell", (12,), 6,
                          (metric(-2.0, None, None, "inconclusive",
                                  "could not tell: between -100.00% and +inf%"),))
    text = body(BisectRecord(host="tcg", runner="qemu", patches=4, boots_per_step=6,
                             pairs_max=2, review=REVIEW, probes=(NOT_IT, unknown),
                             ended="budget", good=2, bad=4, stopped_at=3, boots=20))
    flat = " ".join(text.split())
    assert ("The boot budget ran out before the patch was found: at prefix 3/4, 6 boots per "
            "step") in flat
    assert ('What is known: the change comes with one of 3/4 "mm/vmscan: pace reclaim" and '
            '4/4 "init: tidy".') in flat
    assert "[unbounded]" in text and "The change comes with" not in flat
    assert "no change" not in next(x for x in text.splitlines() if "prefix 3/4" in x)


def test_prefixes_that_do_not_build_are_named():
    text = body(BisectRecord(host="tcg", runner="qemu", patches=4, boots_per_step=24,
                             pairs_max=11, review=REVIEW, probes=(NOT_IT,),
                             not_built=(3,), ended="not built", good=2, bad=4, boots=14))
    flat = " ".join(text.split())
    assert "The patch could not be pinned down: prefix 3/4 did not build" in flat
    assert 'the change comes with one of 3/4 "mm/vmscan: pace reclaim" and 4/4' in flat


def test_records_read_back_as_written():
    record = BisectRecord(host="tcg", patches=4, review=REVIEW, probes=(NOT_IT, IT),
                          ended="found", found=3, good=2, bad=3, not_built=(1,))

    class Step:
        state = StepState.DONE
        result = record.as_result()

    assert BisectRecord.from_step(Step()) == record
