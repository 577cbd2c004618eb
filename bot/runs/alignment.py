"""Is it alignment: whether a change a review found survives forced function alignment.

An align follow-up (run kind "align") builds the review's base and patched trees again with
every function aligned to a cache line (workers/kernel/alignment.py) and runs the same
benchmarks. `judge_alignment` sets each main metric the review found changed beside the same
metric measured with the aligned kernels:

- survives forced alignment: the aligned kernels show the same change (the same verdict,
  regression or improvement);
- likely a code-alignment effect: the change is gone, the aligned comparison showing no change
  of the metric's delta or more with an interval that excludes the review's estimate (a change
  below delta, as large as the review's, is not gone), or it reverses (the opposite verdict);
- could not tell: anything else: the aligned comparison could not tell (inconclusive), its
  interval still holds the review's change, or it did not measure the metric. Never written as
  either of the others.

Pure: the figures come in as `Headline`s (bot/runs/findings.py), the review's and the align
run's, matched by benchmark run and metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.runs.findings import Headline

CHANGES = ("regression", "improvement")
NO_CHANGE = "no change"  # bot.analysis.verdict.Verdict.NO_CHANGE: shown not to change by delta


class AlignmentVerdict(StrEnum):
    SURVIVES = "survives forced alignment"
    ALIGNMENT_EFFECT = "likely a code-alignment effect"
    COULD_NOT_TELL = "could not tell"


@dataclass(frozen=True)
class MetricAlignment:
    """One changed metric of the review, and what the aligned kernels showed of it."""

    review: Headline
    aligned: Headline | None  # None: the align run did not measure it
    verdict: AlignmentVerdict

    @property
    def why(self) -> str:
        """The aligned comparison's finding in words, e.g. "the aligned kernels show no change
        of 1% or more"."""
        if self.aligned is None:
            return "the aligned kernels were not measured on it"
        if self.verdict is AlignmentVerdict.SURVIVES:
            return f"the aligned kernels show the same {self.review.verdict}"
        if self.aligned.verdict in CHANGES:
            return (f"it reverses: the aligned kernels show {_article(self.aligned.verdict)} "
                    f"{self.aligned.verdict}")
        if self.verdict is AlignmentVerdict.ALIGNMENT_EFFECT:  # gone
            return (f"the aligned kernels show {self.aligned.words}, and their interval "
                    f"excludes the review's {self.review.change_pct:+.2f}%")
        if self.aligned.verdict == NO_CHANGE:
            return (f"the aligned kernels show {self.aligned.words}, but their interval still "
                    f"holds the review's {self.review.change_pct:+.2f}%")
        return f"with the aligned kernels, {self.aligned.words}"


def judge_metric(review: Headline, aligned: Headline | None) -> AlignmentVerdict:
    """The rule for one metric the review found changed (its verdict is in CHANGES)."""
    if aligned is None:
        return AlignmentVerdict.COULD_NOT_TELL
    if aligned.verdict == review.verdict:
        return AlignmentVerdict.SURVIVES
    if aligned.verdict in CHANGES:  # the other way: reversed
        return AlignmentVerdict.ALIGNMENT_EFFECT
    low, high = aligned.ci_pct  # NaN when unbounded: then nothing is excluded
    if aligned.verdict == NO_CHANGE and (review.change_pct < low or review.change_pct > high):
        return AlignmentVerdict.ALIGNMENT_EFFECT  # gone
    return AlignmentVerdict.COULD_NOT_TELL


def judge_alignment(review: Sequence[Headline],
                    aligned: Sequence[Headline]) -> list[MetricAlignment]:
    """Each main metric the review found changed, in the review's order, judged against the
    aligned kernels' figures for the same benchmark run and metric."""
    by_metric = {(h.benchmark, h.metric): h for h in aligned}
    judged = []
    for found in review:
        if found.verdict not in CHANGES:
            continue
        measured = by_metric.get((found.benchmark, found.metric))
        judged.append(MetricAlignment(found, measured, judge_metric(found, measured)))
    return judged


def overall(judged: Sequence[MetricAlignment]) -> AlignmentVerdict | None:
    """The verdict all the metrics share; None when they differ (or there are none)."""
    verdicts = {m.verdict for m in judged}
    return verdicts.pop() if len(verdicts) == 1 else None


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
