"""What a run found: the one decision every reader of a run shows.

`decide` turns a run's recorded steps (and the main-metric verdicts its lab campaigns stored)
into a `RunOutcome`: the outcome, why, which reply it calls for, and the exit status of
`lorelab review`. The report step writes the reply it names, `lorelab review` exits with its
status, and the status page and `lorelab runs show` print its label; none of them reads the
step states on its own. See docs/replies.md for what each reply says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import LabCampaign, Run
from bot.report.compose.kinds import (
    ALIGNMENT,
    ALTERNATIVE,
    BISECT,
    BUILD_FAILURE,
    DOES_NOT_APPLY,
    EXPERIMENT,
)
from bot.report.compose.kinds import BENCHMARK as BENCHMARK_REPLY
from bot.runs.records import AlternativeRecord, ApplyRecord, BuildRecord
from bot.runs.states import STOPPED, StepState


class Outcome(StrEnum):
    PENDING = "pending"  # a step the answer depends on has not finished
    STOPPED = "stopped"  # cancelled, or superseded by a newer version
    APPLIED = "applied"  # an apply run that applied
    BUILT = "built"  # a build run whose two kernels built
    NOT_APPLIED = "does not apply"  # the series conflicts with its base
    NOT_BUILT = "does not build"  # the base built, the patched tree did not
    NOT_TESTED = "not benchmarked"  # lorelab could not test it: not the series' fault
    IMPROVEMENT = "improvement"
    REGRESSION = "regression"
    NO_CHANGE = "no change"  # every main metric shown not to change by delta or more
    INCONCLUSIVE = "inconclusive"  # lorelab could not tell: never written "no change"
    REPORT_FAILED = "report failed"  # benchmarked, but no reply could be written


# Exit statuses of `lorelab review` (README, "The main job").
EXIT_CODES = {
    Outcome.NO_CHANGE: 0, Outcome.IMPROVEMENT: 10, Outcome.REGRESSION: 11,
    Outcome.NOT_APPLIED: 12, Outcome.NOT_BUILT: 13, Outcome.NOT_TESTED: 14, Outcome.STOPPED: 14,
    Outcome.INCONCLUSIVE: 15, Outcome.REPORT_FAILED: 16,
}
# The main-metric verdict (bot.analysis.verdict.Verdict) that shows the absence of a change of
# interest (identical runs included); any other verdict that is not a change leaves the run
# inconclusive.
NO_CHANGE = "no change"


class StepView(Protocol):
    state: str
    result: dict[str, Any]
    error: str | None


@dataclass(frozen=True)
class RunOutcome:
    outcome: Outcome
    why: str  # one line, for the status page and the report step's record
    reply: str | None = None  # the reply kind it calls for; None: no reply

    @property
    def exit_code(self) -> int | None:
        """`lorelab review`'s exit status; None while the run is pending, or for a run that
        is not a review."""
        return EXIT_CODES.get(self.outcome)

    @property
    def label(self) -> str:
        return self.outcome.value


_UNFINISHED = (StepState.QUEUED, StepState.RUNNING)
# Per run kind: the builds its answer needs (the first is the base), the step that measures,
# and the reply it writes when it measured. A follow-up (bot.runs.lifecycle.FOLLOW_UPS) that
# could not measure writes nothing: its review has replied already.
_BUILDS = {"bisect": ("build-base", "build-prefixes"),
           "compare": ("build-base", "build-patched", "build-alternative")}
_MEASURED_BY = {"bisect": "bisect"}
_BUILT_TREE = {"build-patched": "the patched tree", "build-prefixes": "a prefix of the series",
               "build-alternative": "the alternative"}
_REPLIES = {"review": BENCHMARK_REPLY, "bisect": BISECT, "align": ALIGNMENT,
            "compare": ALTERNATIVE, "experiment": EXPERIMENT}


def decide(kind: str, run_state: str, steps: Mapping[str, StepView],
           verdicts: Iterable[str] = (), *, trigger: str = "") -> RunOutcome:
    """The outcome of a run of `kind` (apply, build, review) in `run_state` whose steps are
    `steps` by name; `verdicts` are the main metrics' verdicts of its finished campaigns;
    `trigger` who asked for it (bot.runs.lifecycle.create_run).

    A review whose report step failed is REPORT_FAILED, whatever the benchmarks found: the
    run's product is its reply, and a run without one must not read as a quiet finding."""
    found = _decide(kind, run_state, steps, verdicts, trigger)
    report = steps.get("report")
    if kind == "review" and report is not None and report.state == StepState.FAILED:
        return RunOutcome(Outcome.REPORT_FAILED,
                          f"no reply: {report.error or 'the report step failed'} "
                          f"(the run found: {found.label})")
    return found


def _decide(kind: str, run_state: str, steps: Mapping[str, StepView],
            verdicts: Iterable[str], trigger: str) -> RunOutcome:
    stopped = run_state in STOPPED

    def unfinished(name: str) -> RunOutcome | None:
        step = steps.get(name)
        if step is None or step.state in _UNFINISHED or step.state in STOPPED:
            if stopped:
                return RunOutcome(Outcome.STOPPED, f"the run was {run_state}")
            return RunOutcome(Outcome.PENDING, f"{name} has not finished")
        return None

    if (pending := unfinished("apply")) is not None:
        return pending
    apply = steps["apply"]
    record = ApplyRecord.from_step(apply)
    if apply.state != StepState.DONE or not record.applied:
        if record.failed_patch and (record.conflicts or record.base):
            return RunOutcome(Outcome.NOT_APPLIED, f"the series does not apply: {apply.error}",
                              DOES_NOT_APPLY)
        return RunOutcome(Outcome.NOT_TESTED, f"not applied, and not for a conflict: "
                                              f"{apply.error}")
    if kind == "apply":
        return RunOutcome(Outcome.APPLIED, f"applied on {record.base[:12]}")
    follow_up = kind not in ("build", "review")
    if follow_up and "apply-alternative" in steps:
        if (pending := unfinished("apply-alternative")) is not None:
            return pending
        alternative = steps["apply-alternative"]
        if alternative.state != StepState.DONE:
            # Said to the reviewer only when asked by mail (`run.trigger` "email:...": their
            # `#lorelab test`, a `#lorelab compare`), and only of a diff that was tried.
            asked = trigger.startswith("email:") and bool(
                AlternativeRecord.from_step(alternative).tried)
            return RunOutcome(Outcome.NOT_APPLIED,
                              f"the alternative does not apply: {alternative.error}",
                              ALTERNATIVE if asked else None)
    base, *patched = _BUILDS.get(kind, ("build-base", "build-patched"))
    for name in (base, *patched):
        if (pending := unfinished(name)) is not None:
            return pending
    if not _built(steps[base]):
        return RunOutcome(Outcome.NOT_TESTED, "the base does not build: not the series' fault")
    for name in patched:
        if not _built(steps[name]):
            return RunOutcome(Outcome.NOT_BUILT, f"{_BUILT_TREE[name]} does not build",
                              None if follow_up else BUILD_FAILURE)
    if kind == "build":
        return RunOutcome(Outcome.BUILT, "the base and the patched tree build")
    measure = _MEASURED_BY.get(kind, "bench")
    if (pending := unfinished(measure)) is not None:
        return pending
    bench = steps[measure]
    if bench.state != StepState.DONE:
        return RunOutcome(Outcome.NOT_TESTED, f"the benchmarks did not run: {bench.error}")
    finding, why = benchmark_finding(verdicts)
    return RunOutcome(finding, why, _REPLIES[kind])


def benchmark_finding(verdicts: Iterable[str]) -> tuple[Outcome, str]:
    """What benchmarks found from their main metrics' verdicts: any regression, else any
    improvement, else no change when every metric earned it, else inconclusive."""
    found = list(verdicts)
    for verdict in (Outcome.REGRESSION, Outcome.IMPROVEMENT):
        if verdict.value in found:
            return verdict, "benchmarked"
    if found and all(v == NO_CHANGE for v in found):
        return Outcome.NO_CHANGE, "benchmarked"
    undecided = sum(v != NO_CHANGE for v in found)
    return Outcome.INCONCLUSIVE, (
        f"benchmarked; {undecided} of {len(found)} main metrics could not be told from noise"
        if found else "benchmarked, but no main metric was judged")


def _built(step: StepView) -> bool:
    return step.state == StepState.DONE and BuildRecord.from_step(step).ok


def main_verdicts(campaigns: Iterable[LabCampaign]) -> list[str]:
    """The main metrics' verdicts the finished campaigns stored when they were judged."""
    return [m["verdict"] for c in campaigns if c.state == "done"
            for m in (c.result or {}).get("metrics", []) if not m.get("secondary")]


def outcome_of(session: Session, run: Run,
               campaigns: Iterable[LabCampaign] | None = None) -> RunOutcome:
    """`decide` for a stored run (its campaigns read unless given)."""
    if campaigns is None:
        campaigns = session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == run.id))
    return decide(run.kind, run.state, {s.name: s for s in run.steps}, main_verdicts(campaigns),
                  trigger=run.trigger or "")
