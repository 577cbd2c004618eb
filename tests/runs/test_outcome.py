"""One outcome per run: every combination of step states through `decide`, and the exit
status, the reply kind and the label the status page and `runs show` print agree."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.report.compose.benchmark_reply import KIND as BENCHMARK
from bot.report.compose.failure_reply import BUILD_FAILURE, DOES_NOT_APPLY
from bot.runs.outcome import EXIT_CODES, Outcome, decide
from bot.runs.states import RunState


@dataclass
class Step:
    state: str
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


CONFLICT = {"base": "b" * 40, "applied": 0, "failed_patch": "0002 mm: x",
            "conflicts": [{"path": "mm/vmscan.c", "hunks": "<<<"}]}
APPLY = {
    "applied": Step("done", {"base": "b" * 40, "patched": "p" * 40, "applied": 2}),
    "conflict": Step("failed", CONFLICT, "patch 0002 does not apply"),
    "no base": Step("failed", {}, "no base on tree mm"),
    "queued": Step("queued"),
    "running": Step("running"),
}
BUILD = {
    "built": Step("done", {"ok": True, "artifact_dir": "/a"}),
    "broken": Step("failed", {"ok": False}, "build failed: mm/vmscan.c:1:1 error"),
    "not applied": Step("failed", {}, "not built: the series did not apply"),
    "queued": Step("queued"),
}
BENCH = {
    "done": Step("done", {"host": "local", "campaigns": []}),
    "failed": Step("failed", {}, "readtwice on local: boot failed"),
    "queued": Step("queued"),
}
VERDICTS = {"regression": ["no change", "regression", "improvement"],
            "improvement": ["improvement", "no change"], "no change": ["no change"],
            "could not tell": ["no change", "inconclusive"], "none": []}
REPORT = {
    "queued": Step("queued"),
    "done": Step("done", {"reply": 1}),
    "failed": Step("failed", {}, "ValueError: the benchmark tables do not fit"),
}

# (apply, base build, patched build, bench) -> the outcome a maintainer expects.
EXPECTED_SHAPES = {
    Outcome.NOT_APPLIED: "the series conflicts: a does-not-apply reply, exit 12",
    Outcome.NOT_BUILT: "only the patched tree fails: a build-failure reply, exit 13",
    Outcome.NOT_TESTED: "lorelab could not test it: no reply, exit 14",
}


def expected(apply: str, base: str, patched: str, bench: str, verdicts: str) -> Outcome:
    if apply in ("queued", "running"):
        return Outcome.PENDING
    if apply == "conflict":
        return Outcome.NOT_APPLIED
    if apply == "no base":
        return Outcome.NOT_TESTED
    if base == "queued" or patched == "queued":
        return Outcome.PENDING
    if base != "built":
        return Outcome.NOT_TESTED
    if patched != "built":
        return Outcome.NOT_BUILT
    if bench == "queued":
        return Outcome.PENDING
    if bench != "done":
        return Outcome.NOT_TESTED
    # "no change" is earned: metrics that could not be told from noise, or no metric at all,
    # leave the run inconclusive (exit 15), never "no change" (exit 0).
    return {"regression": Outcome.REGRESSION, "improvement": Outcome.IMPROVEMENT,
            "no change": Outcome.NO_CHANGE}.get(verdicts, Outcome.INCONCLUSIVE)


REPLIES = {Outcome.NOT_APPLIED: DOES_NOT_APPLY, Outcome.NOT_BUILT: BUILD_FAILURE,
           Outcome.IMPROVEMENT: BENCHMARK, Outcome.REGRESSION: BENCHMARK,
           Outcome.NO_CHANGE: BENCHMARK, Outcome.INCONCLUSIVE: BENCHMARK}
EXITS = {Outcome.NO_CHANGE: 0, Outcome.IMPROVEMENT: 10, Outcome.REGRESSION: 11,
         Outcome.NOT_APPLIED: 12, Outcome.NOT_BUILT: 13, Outcome.NOT_TESTED: 14,
         Outcome.INCONCLUSIVE: 15, Outcome.REPORT_FAILED: 16}

CASES = list(itertools.product(APPLY, BUILD, BUILD, BENCH, VERDICTS))


@pytest.mark.parametrize(("apply", "base", "patched", "bench", "verdicts"), CASES)
def test_every_combination_of_a_review_run_has_one_agreeing_outcome(
        apply: str, base: str, patched: str, bench: str, verdicts: str) -> None:
    steps = {"apply": APPLY[apply], "build-base": BUILD[base], "build-patched": BUILD[patched],
             "bench": BENCH[bench], "report": Step("queued")}
    outcome = decide("review", RunState.RUNNING, steps, VERDICTS[verdicts])
    want = expected(apply, base, patched, bench, verdicts)
    assert outcome.outcome == want, outcome
    # The reply the report step writes, the exit status of `lorelab review` and the label the
    # web page and `runs show` print are all read off this one value.
    assert outcome.reply == REPLIES.get(want)
    assert outcome.exit_code == EXITS.get(want)
    assert outcome.label == want.value
    assert outcome.why


@pytest.mark.parametrize("verdicts", list(VERDICTS))
def test_a_failed_report_step_is_a_failed_run_whatever_was_found(verdicts: str) -> None:
    steps = {"apply": APPLY["applied"], "build-base": BUILD["built"],
             "build-patched": BUILD["built"], "bench": BENCH["done"], "report": REPORT["failed"]}
    outcome = decide("review", RunState.FAILED, steps, VERDICTS[verdicts])
    assert (outcome.outcome, outcome.exit_code) == (Outcome.REPORT_FAILED, 16)
    assert "do not fit" in outcome.why
    assert expected("applied", "built", "built", "done", verdicts).value in outcome.why


def test_the_base_not_building_is_not_blamed_on_the_series() -> None:
    steps = {"apply": APPLY["applied"], "build-base": BUILD["broken"],
             "build-patched": BUILD["built"], "bench": BENCH["queued"]}
    outcome = decide("review", RunState.FAILED, steps)
    assert (outcome.outcome, outcome.reply, outcome.exit_code) == (Outcome.NOT_TESTED, None, 14)
    assert "base does not build" in outcome.why


def test_a_stopped_run_with_steps_left_is_stopped_not_failed() -> None:
    steps = {"apply": APPLY["applied"], "build-base": Step("cancelled"),
             "build-patched": Step("cancelled")}
    outcome = decide("build", RunState.CANCELLED, steps)
    assert outcome.outcome == Outcome.STOPPED and outcome.reply is None


@pytest.mark.parametrize(("kind", "steps", "want"), [
    ("apply", {"apply": APPLY["applied"]}, Outcome.APPLIED),
    ("apply", {"apply": APPLY["conflict"]}, Outcome.NOT_APPLIED),
    ("build", {"apply": APPLY["applied"], "build-base": BUILD["built"],
               "build-patched": BUILD["built"]}, Outcome.BUILT),
    ("build", {"apply": APPLY["applied"], "build-base": BUILD["built"],
               "build-patched": BUILD["broken"]}, Outcome.NOT_BUILT),
])
def test_apply_and_build_runs(kind: str, steps: dict[str, Step], want: Outcome) -> None:
    assert decide(kind, RunState.DONE, steps).outcome == want


def test_every_exit_status_is_distinct_per_finding() -> None:
    findings = {o: c for o, c in EXIT_CODES.items() if o is not Outcome.STOPPED}
    assert len(set(findings.values())) == len(findings)
