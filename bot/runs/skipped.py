"""Steps that did not run for real: each needs what an earlier step makes, and that one failed.

After a failed apply nothing is built or benchmarked; after a failed build nothing is
benchmarked. A worker still takes such a step and ends it failed, saying why
(workers/kernel/steps.py: "not built: the series did not apply"; workers/lab/step.py), so the
record stays true for a resume; progress and `lorelab runs show` call it skipped instead of
"running", then "failed", and the step recorder (bot.runs.steps) logs only the first failure.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.runs.states import StepState

# Step -> the steps whose output it needs.
NEEDS: dict[str, tuple[str, ...]] = {
    "build-base": ("apply",),
    "build-patched": ("apply",),
    "bench": ("build-base", "build-patched", "build-alternative"),
    # the follow-ups' own steps (bot.runs.lifecycle.FOLLOW_UPS)
    "apply-alternative": ("apply",),
    "build-alternative": ("apply-alternative",),
    "build-prefixes": ("apply",),
    "bisect": ("build-base", "build-prefixes"),
}


def failed_need(name: str, states: Mapping[str, str]) -> str | None:
    """The step whose failure step `name` is skipped for (the first one: after a failed
    apply the bench is skipped for the apply, not for the builds skipped with it), or None."""
    for need in NEEDS.get(name, ()):
        if states.get(need) == StepState.FAILED:
            return failed_need(need, states) or need
    return None
