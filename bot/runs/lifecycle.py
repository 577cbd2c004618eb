"""A run's life: made (with its queued steps), cancelled, superseded, retested, resumed, and
what a failed send to the workers leaves on its rows (`record_unsent`).

A run has steps `apply` (kind apply); `apply`, `build-base`, `build-patched` (kind build); or
those and `bench`, `report` (kind review). A follow-up of a review (`FOLLOW_UPS`, made with
`parent_run_id`) has the steps its question needs: `build-prefixes` and `bisect` find the
patch that brings a change; `apply-alternative` and `build-alternative` make the reviewer's
version a third kernel. `create_run` records it; `bot.runs.taskqueue`
sends its unfinished steps to the workers; `bot.runs.steps` records each step's start and
end, so that a crashed step is visible and `pending_steps` finds it again for a resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.config.sections import TreeSettings
from bot.db.models import Run, RunStep, SeriesVersion, utcnow
from bot.runs.base import tree_at
from bot.runs.states import FINISHED, STOPPED, RunState, StepState

STEPS = {
    "apply": ("apply",),
    "build": ("apply", "build-base", "build-patched"),
    "review": ("apply", "build-base", "build-patched", "bench", "report"),
    # Follow-ups of a review (docs/replies.md, "Follow-ups"), each with its own reply.
    "bisect": ("apply", "build-base", "build-prefixes", "bisect", "report"),
    "align": ("apply", "build-base", "build-patched", "bench", "report"),
    "compare": ("apply", "apply-alternative", "build-base", "build-patched",
                "build-alternative", "bench", "report"),
    "experiment": ("apply", "build-base", "build-patched", "bench", "report"),
}
FOLLOW_UPS = ("bisect", "align", "compare", "experiment")


class PlanError(ValueError):
    """A run that cannot be made (no such tree, nothing configured); the text says why."""


def find_tree(settings: Settings, ref: str | None) -> TreeSettings:
    """The kernel tree `ref` names: a configured tree by its name or its path, else the git
    checkout at that path (`lorelab review --tree PATH`); the first configured tree if None."""
    if ref is None:
        if settings.trees:
            return settings.trees[0]
        raise PlanError("no kernel tree: pass --tree PATH or add a [[trees]] table to the config")
    for tree in settings.trees:
        if tree.name == ref:
            return tree
    path = Path(ref)
    if path.is_absolute() or path.exists():
        for tree in settings.trees:
            if Path(tree.path).resolve() == path.resolve():
                return tree
        try:
            return tree_at(ref)
        except ValueError as exc:
            raise PlanError(f"{exc}; a tree is a git checkout of a kernel tree") from None
    if not settings.trees:
        raise PlanError("no kernel trees are configured: add a [[trees]] table to the config")
    raise PlanError(f"no tree {ref!r}; configured: {', '.join(t.name for t in settings.trees)}")


def create_run(session: Session, version: SeriesVersion, *, kind: str, tree: str,
               base: str | None = None, benchmarks: list[str] | None = None,
               runner: str | None = None, trigger: str = "cli", parent: Run | None = None,
               options: dict[str, Any] | None = None) -> Run:
    """A queued run with its queued steps (committed by the caller).

    `benchmarks` and `runner` (a lab host's name) matter to review runs; `trigger` says who
    asked ("cli", "auto", "email:<address>", "retest"). A follow-up kind needs the review run
    it follows (`parent`) and takes what it was asked for as `options`."""
    if kind not in STEPS:
        raise PlanError(f"no run kind {kind!r}; known: {', '.join(STEPS)}")
    if (kind in FOLLOW_UPS) != (parent is not None):
        raise PlanError(f"a {kind} run {'needs' if parent is None else 'takes no'} parent run")
    run = Run(series_version_id=version.id, kind=kind, tree=tree, requested_base=base,
              state=RunState.QUEUED, benchmarks=list(benchmarks or []), runner=runner,
              trigger=trigger, parent_run_id=parent.id if parent is not None else None,
              options=dict(options or {}))
    run.steps = [RunStep(name=name, state=StepState.QUEUED) for name in STEPS[kind]]
    session.add(run)
    session.flush()
    return run


def cancel_run(session: Session, run: Run, *, state: RunState = RunState.CANCELLED) -> bool:
    """Stop a run that has not finished: its unfinished steps will not start (a step already
    running finishes its work, and its result is kept). False when it had finished already.
    `state` is cancelled (asked for) or superseded (a newer version of the series came)."""
    if run.state in FINISHED:
        return False
    for step in run.steps:
        if step.state in (StepState.QUEUED, StepState.FAILED):
            step.state = StepState(state.value)
    run.state = state
    run.updated_at = utcnow()
    return True


def retest_run(session: Session, run: Run, *, trigger: str = "retest") -> Run:
    """A new run like `run` (same version, kind, tree, base, benchmarks, lab host; a
    follow-up's parent and options)."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    parent = session.get(Run, run.parent_run_id) if run.parent_run_id is not None else None
    return create_run(session, version, kind=run.kind, tree=run.tree, base=run.requested_base,
                      benchmarks=list(run.benchmarks or []), runner=run.runner,
                      trigger=trigger, parent=parent, options=dict(run.options or {}))


def pending_steps(run: Run) -> list[RunStep]:
    """Steps still to run, in order: queued, failed, or `running` left by a crashed worker;
    none for a cancelled or superseded run."""
    if run.state in STOPPED:
        return []
    return [s for s in run.steps if s.state != StepState.DONE]


def record_unsent(session: Session, run: Run, error: str, *, lasting: bool) -> None:
    """A dispatch of `run` that failed, on its rows. A passing failure (the broker down) is
    noted on its first unfinished step, which stays queued and unsent: `lorelab run` sends it
    again (bot.runs.reaper). A lasting one (a row that cannot be sent: no such lab host) fails
    the run's unfinished steps with the reason; `lorelab runs resume` after the fix."""
    steps = [s for s in pending_steps(run) if s.state != StepState.FAILED]
    if not steps:
        return
    if not lasting:
        steps[0].error = f"not sent to the workers ({error}); `lorelab run` sends it again"
        steps[0].sent_at = None
        return
    for step in steps:
        step.state = StepState.FAILED
        step.error = f"could not be sent to the workers: {error}"
        step.finished_at = utcnow()
    run.state = RunState.FAILED
    run.updated_at = utcnow()


def resume_run(session: Session, run: Run) -> list[RunStep]:
    """Queue the run's unfinished steps again (after a worker crash, or a fix to the tree);
    the steps to send, none when it has nothing left to do."""
    steps = pending_steps(run)
    for step in steps:
        step.state = StepState.QUEUED
    if steps:
        run.state = RunState.QUEUED
        run.updated_at = utcnow()
    return steps
