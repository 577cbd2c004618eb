"""A run's progress, one line per step as it changes: "apply: running", "apply: failed",
"build-base: skipped (apply failed)".

A step skipped for a failed step before it (bot.runs.skipped) is started and ended by its
worker all the same; it shows as one "skipped" line, not "running" and then "failed".
"""

from __future__ import annotations

from collections.abc import Callable

from bot.runs.skipped import failed_need
from bot.runs.states import StepState


class StepLines:
    """Turns step events (run, step name, state) into the lines to print, through `say`."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.states: dict[tuple[int, str], str] = {}

    def __call__(self, run: int, name: str, state: str, detail: str = "") -> None:
        need = failed_need(name, {step: seen for (r, step), seen in self.states.items()
                                  if r == run})
        self.states[run, name] = state
        if need is None:
            self.say(f"{name}: {state}{detail}")
        elif state not in (StepState.RUNNING, StepState.QUEUED):
            self.say(f"{name}: skipped ({need} failed)")
