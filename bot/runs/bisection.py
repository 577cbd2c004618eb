"""Which patch of a series brings the change its review found: the bisection rule, pure.

A review of an N-patch series found a change (some main metrics regressed or improved); a
bisect follow-up (docs/replies.md, "Follow-ups: which patch") looks for the first prefix of the
series (its patches 1..i applied) that carries it. Prefix N carries it (the review's result),
prefix 0 is the base. Each bisection step is one campaign per changed benchmark, the base
against one prefix, judged by the same sequential rule as a review; what it says about the
change is `carries`. `bisect` says, from the prefixes that built and what the steps so far
found, which prefix to test next, or that the bisection has ended and why:

- found: prefix i carries the change and prefix i-1 was shown not to (or is the base), so the
  change comes with patch i;
- budget: a step's campaign could not tell (its boots, `[follow_ups] bisect_boots`, ran out
  before its rule decided): the bisection stops there, with what is known so far;
- not built: the prefixes left between the last one shown not to carry the change and the
  first that carries it did not build (as `git bisect skip`): the change comes with one of
  a few patches, named.

Binary search: the next prefix is the built one nearest the middle of what is left.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from bot.analysis.verdict import Verdict

CHANGES = (Verdict.REGRESSION.value, Verdict.IMPROVEMENT.value)


class Carries(StrEnum):
    """What one step's campaign says about a prefix: it carries the change, it was shown not
    to, or it could not tell."""

    YES = "carries the change"
    NO = "does not carry the change"
    UNKNOWN = "could not tell"


class Ended(StrEnum):
    FOUND = "found"
    BUDGET = "budget"  # a step's campaign could not tell within its boots
    NOT_BUILT = "not built"  # the prefixes that would decide it do not build


@dataclass(frozen=True)
class TrackedChange:
    """One main metric the review found changed: in which benchmark run, which way."""

    benchmark: str  # the benchmark run's label, "reclaim-sim ops=3000000"
    metric: str
    verdict: str  # "regression" or "improvement"


def changes_found(verdicts: Iterable[tuple[str, str, str]]) -> tuple[TrackedChange, ...]:
    """The changes to follow, from a review's main-metric verdicts (benchmark, metric,
    verdict): those that are a regression or an improvement."""
    return tuple(TrackedChange(b, m, v) for b, m, v in verdicts if v in CHANGES)


def carries(change: Iterable[TrackedChange], verdicts: Mapping[tuple[str, str], str]) -> Carries:
    """What a prefix's campaigns (main-metric verdicts by (benchmark, metric)) say about the
    change: YES when any changed metric changed the same way again; NO when every changed
    metric was shown not to (no change of interest, or a change the other way); else UNKNOWN
    (a metric the rule could not decide, or not measured)."""
    found = [verdicts.get((c.benchmark, c.metric)) for c in change]
    if any(v == c.verdict for v, c in zip(found, change, strict=True)):
        return Carries.YES
    if found and all(v is not None and (v == Verdict.NO_CHANGE or v in CHANGES) for v in found):
        return Carries.NO
    return Carries.UNKNOWN


@dataclass(frozen=True)
class BisectState:
    """Where a bisection stands. `good` is the last prefix shown not to carry the change (0:
    the base), `bad` the first known to carry it (N at the start: the review's result)."""

    patches: int
    good: int
    bad: int
    next: int | None = None  # the prefix to test next; None when the bisection has ended
    ended: Ended | None = None
    stopped_at: int | None = None  # BUDGET: the prefix whose step could not tell

    @property
    def found(self) -> int | None:
        """The patch that brings the change (1-based), once decided."""
        return self.bad if self.ended is Ended.FOUND else None

    @property
    def suspects(self) -> tuple[int, ...]:
        """The patches that may bring the change, as far as is known."""
        return tuple(range(self.good + 1, self.bad + 1))


def bisect(patches: int, built: Collection[int], tested: Mapping[int, Carries]) -> BisectState:
    """The state of the bisection of an N-patch series (`patches`), whose prefixes `built`
    (1..N-1) built, after the steps `tested` (prefix -> what its campaign said)."""
    if patches < 1:
        raise ValueError(f"a series has at least one patch, not {patches}")
    yes = [p for p, said in tested.items() if said is Carries.YES]
    no = [p for p, said in tested.items() if said is Carries.NO]
    good, bad = max(no, default=0), min(yes, default=patches)
    if good >= bad:
        raise ValueError(f"prefix {good} was shown not to carry the change that prefix {bad} "
                         "carries: not a bisection")
    unknown = sorted(p for p, said in tested.items() if said is Carries.UNKNOWN)
    if unknown:
        return BisectState(patches, good, bad, ended=Ended.BUDGET, stopped_at=unknown[0])
    if bad == good + 1:
        return BisectState(patches, good, bad, ended=Ended.FOUND)
    left = [p for p in built if good < p < bad and p not in tested]
    if not left:
        return BisectState(patches, good, bad, ended=Ended.NOT_BUILT)
    middle = (good + bad) / 2
    return BisectState(patches, good, bad, next=min(left, key=lambda p: (abs(p - middle), p)))


def pairs_within(boots: int, warmup_pairs: int) -> int:
    """The most measured pairs one step's campaign may take within `boots` boots (each pair
    boots both kernels; warm-up pairs count): 0 when the budget allows none."""
    return max(0, boots // 2 - warmup_pairs)
