"""The "is it alignment" rule (bot/runs/alignment.py) and the reply that words it
(bot/report/compose/alignment_reply.py): pure, no database."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.report.compose.alignment_reply import (
    AlignmentReplyContext,
    alignment_body,
    alignment_words,
    compose_alignment_reply,
)
from bot.report.compose.inputs import (
    BotIdentity,
    ParentMessage,
    Person,
    ReplyOptions,
    SeriesInfo,
    TreeInfo,
)
from bot.report.compose.results import Machine, RunPolicy
from bot.report.compose.text import TABLE_WIDTH
from bot.runs.alignment import AlignmentVerdict, judge_alignment, judge_metric, overall
from bot.runs.findings import Headline

BENCH = "reclaim-sim ops=3000000"


def line(verdict: str, change: float, low: float, high: float, words: str = "",
         metric: str = "reclaim-sim.throughput", benchmark: str = BENCH) -> Headline:
    return Headline(1, benchmark, metric, change, (low, high), verdict, words or verdict)


REVIEW = line("regression", -30.0, -36.0, -24.0, "regression (>= 1%)")


@pytest.mark.parametrize(("aligned", "expected"), [
    (line("regression", -28.0, -33.0, -22.0), AlignmentVerdict.SURVIVES),
    (line("no change", 0.2, -0.6, 0.8, "no change of 1% or more"),
     AlignmentVerdict.ALIGNMENT_EFFECT),
    (line("improvement", 4.0, 2.0, 6.0), AlignmentVerdict.ALIGNMENT_EFFECT),  # it reverses
    (line("inconclusive", -2.0, -9.0, 5.0, "could not tell: between -9% and +5%"),
     AlignmentVerdict.COULD_NOT_TELL),
    (line("run another pair", -2.0, -9.0, 5.0), AlignmentVerdict.COULD_NOT_TELL),
    # No change of delta, but as large a change as the review's is not ruled out: not gone.
    (line("no change", -8.0, -40.0, 20.0, "no change of 50% or more"),
     AlignmentVerdict.COULD_NOT_TELL),
    (line("no change", 0.0, float("nan"), float("nan")), AlignmentVerdict.COULD_NOT_TELL),
    (None, AlignmentVerdict.COULD_NOT_TELL),
])
def test_each_aligned_finding_gives_its_verdict(aligned, expected):
    assert judge_metric(REVIEW, aligned) is expected


def test_only_the_reviews_changed_metrics_are_judged_each_against_its_own_aligned_figure():
    review = [REVIEW, line("no change", 0.1, -0.5, 0.7, metric="reclaim-sim.seconds"),
              line("improvement", 12.0, 8.0, 16.0, benchmark="reclaim-sim ops=100")]
    aligned = [line("improvement", 11.0, 7.0, 15.0, benchmark="reclaim-sim ops=100"),
               line("no change", 0.3, -0.4, 0.9)]
    judged = judge_alignment(review, aligned)
    assert [(m.review.benchmark, m.verdict) for m in judged] == [
        (BENCH, AlignmentVerdict.ALIGNMENT_EFFECT),
        ("reclaim-sim ops=100", AlignmentVerdict.SURVIVES)]
    assert overall(judged) is None  # they differ
    assert overall(judged[:1]) is AlignmentVerdict.ALIGNMENT_EFFECT
    assert judge_alignment([line("no change", 0.1, -0.5, 0.7)], aligned) == []


def _context(aligned: Headline | None, alignment: str) -> AlignmentReplyContext:
    return AlignmentReplyContext(
        parent=ParentMessage("pad-1@example.org", "[PATCH] mm/vmscan: add a helper",
                             Person("Ada", "ada@example.org"), lists=("linux-mm@kvack.org",)),
        series=SeriesInfo("mm/vmscan: add a helper", 1, 1, series_version_id=3,
                          anchor_msgid="pad-1@example.org", run_id=9),
        tree=TreeInfo("linux", "master", "a" * 40, "b" * 40),
        alignment=alignment,
        metrics=tuple(judge_alignment([REVIEW], [aligned] if aligned else [])),
        machine=Machine(cpu="Example CPU", cores=2, runner="local", host="here"),
        policy=RunPolicy(runs_per_kernel=8, sequential=True, k_min=5, k_max=16),
        reproduce=("make -j$(nproc) KCFLAGS=-falign-functions=64 bzImage",))


def test_each_verdict_says_why_in_the_aligned_kernels_own_words():
    gone, kept, reversed_ = (judge_alignment([REVIEW], [aligned])[0] for aligned in (
        line("no change", 0.2, -0.6, 0.8, "no change of 1% or more"),
        line("no change", -8.0, -40.0, 20.0, "no change of 50% or more"),
        line("improvement", 4.0, 2.0, 6.0)))
    assert gone.why == ("the aligned kernels show no change of 1% or more, and their interval "
                        "excludes the review's -30.00%")
    assert kept.why == ("the aligned kernels show no change of 50% or more, but their interval "
                        "still holds the review's -30.00%")
    assert reversed_.why == "it reverses: the aligned kernels show an improvement"


def test_the_reply_says_an_effect_that_is_gone_is_likely_alignment_with_both_figures():
    ctx = _context(line("no change", 0.4, -0.5, 1.0, "no change of 5% or more"),
                   "KCFLAGS=-falign-functions=64")
    text = "\n".join(row for block in alignment_body(ctx) for row in block.lines())
    assert "Result: the change does not survive forced alignment: likely a code-alignment" \
        in " ".join(text.split())
    assert "-30.00% [-36.00%, -24.00%]  regression (>= 1%)" in text
    aligned = next(row for row in text.splitlines() if row.startswith("  aligned "))
    assert aligned.split() == ["aligned", "+0.40%", "[-0.50%,", "+1.00%]", "no", "change", "of",
                               "5%", "or", "more"]
    assert "KCFLAGS=-falign-functions=64" in text and "survives" not in text.replace(
        "does not survive", "")
    identity = BotIdentity(Person("lorelab", "bot@lorelab.example"), "lorelab.example")
    reply = compose_alignment_reply(ctx, ReplyOptions(
        identity=identity, date=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)))
    assert reply.message["X-Lorelab-Kind"] == "alignment"
    assert reply.message["In-Reply-To"] == "<pad-1@example.org>"
    assert ".r9." in reply.message_id
    assert all(len(row) <= TABLE_WIDTH for block in reply.body_blocks for row in block.lines())


def test_could_not_tell_is_never_written_as_survives_or_as_alignment():
    ctx = _context(line("inconclusive", -3.0, -12.0, 6.0, "could not tell: between -12% and +6%"),
                   "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y")
    text = " ".join(" ".join(row for block in alignment_body(ctx) for row in block.lines())
                    .split())
    assert "Result: could not tell whether the change survives forced alignment" in text
    assert "code-alignment effect" not in text and "does not survive" not in text
    assert "the aligned kernels show it too" not in text
    assert "with the aligned kernels, could not tell: between -12% and +6%" in text
    assert "CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_64B=y, and CONFIG_EXPERT=y" in text


def test_the_alignment_is_worded_with_its_size_and_exact_option():
    assert alignment_words("CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_32B=y").startswith(
        "every function aligned to 32 bytes (CONFIG_DEBUG_FORCE_FUNCTION_ALIGN_32B=y")
    assert alignment_words("KCFLAGS=-falign-functions=64").startswith(
        "every C function aligned to 64 bytes (KCFLAGS=-falign-functions=64")
