"""A compare run's outcome: a reviewer's diff that does not apply is "does not apply", with a
reply to the reviewer only when they asked for the run by mail; a measured one is judged by the
alternative against the series."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.report.compose.kinds import ALTERNATIVE
from bot.runs.outcome import Outcome, decide
from bot.runs.records import AlternativeRecord


@dataclass
class Step:
    state: str
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


APPLIED = Step("done", {"base": "b" * 40, "patched": "p" * 40, "applied": 2})
BUILT = Step("done", {"ok": True, "artifact_dir": "/a"})
TRIED = AlternativeRecord(message_id="r@x", answers=2, patches=2,
                          tried=("in place of 2/2", "on top of the series"),
                          failed_at=("mm/vmscan.c:15",), conflicts=("mm/vmscan.c",))


def _steps(alternative: Step, *, measured: bool = False) -> dict[str, Step]:
    later = BUILT if measured else Step("failed", {}, "not built: the alternative did not apply")
    return {"apply": APPLIED, "apply-alternative": alternative, "build-base": BUILT,
            "build-patched": BUILT, "build-alternative": later,
            "bench": Step("done") if measured else Step("failed", {}, "not benchmarked"),
            "report": Step("queued")}


@pytest.mark.parametrize(("trigger", "reply"), [
    ("auto", None), ("cli", None), ("email:rhea@example.net", ALTERNATIVE)])
def test_a_diff_that_does_not_apply_is_answered_only_on_request(trigger, reply):
    failed = Step("failed", TRIED.as_result(), "the alternative does not apply ...")
    found = decide("compare", "failed", _steps(failed), trigger=trigger)
    assert found.outcome is Outcome.NOT_APPLIED and found.reply == reply
    assert "the alternative does not apply" in found.why


def test_an_alternative_that_could_not_be_read_is_never_answered():
    # No message, no diff: nothing was tried, so there is nothing to say "does not apply" of.
    unread = Step("failed", {}, "no alternative: no message <r@x> is stored")
    found = decide("compare", "failed", _steps(unread), trigger="email:rhea@example.net")
    assert found.outcome is Outcome.NOT_APPLIED and found.reply is None


@pytest.mark.parametrize(("verdict", "outcome"), [
    ("improvement", Outcome.IMPROVEMENT), ("no change", Outcome.NO_CHANGE),
    ("inconclusive", Outcome.INCONCLUSIVE)])
def test_a_measured_alternative_is_judged_against_the_series(verdict, outcome):
    applied = Step("done", AlternativeRecord(mode="in place", commit="a" * 40).as_result())
    found = decide("compare", "running", _steps(applied, measured=True), [verdict])
    assert (found.outcome, found.reply) == (outcome, ALTERNATIVE)
