"""The states a run and its steps go through, as stored in `runs.state` and `run_steps.state`.

A step is queued, then running while a worker has it, then done or failed; a run is stopped
(cancelled by a maintainer, superseded by a newer version of its series) with its unfinished
steps. StrEnum members compare equal to the stored strings.
"""

from __future__ import annotations

from enum import StrEnum


class StepState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"


# A run goes through the same states as its steps: running while one is, failed when one
# failed, done when all are, stopped with them.
RunState = StepState

# Run states no worker changes any more.
FINISHED = (RunState.DONE, RunState.FAILED, RunState.CANCELLED, RunState.SUPERSEDED)
# Run states a maintainer or a newer version put an end to.
STOPPED = (RunState.CANCELLED, RunState.SUPERSEDED)
