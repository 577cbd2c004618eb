"""Runs: what `lorelab apply` and `lorelab build` ask for, and the bodies of their steps.

A run has steps `apply` (kind apply) or `apply`, `build-base`, `build-patched` (kind build).
`create_run` records it, `dispatch` sends its unfinished steps to Celery as a chain (git queue,
then build queue); each step body below records its row before and after (workers.steps), so
that a crashed step is visible and `resume` can send it again.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import Settings, data_dir
from bot.db.models import MailingList, MessageList, Run, RunStep, SeriesVersion, utcnow
from bot.db.session import Database
from bot.plan import (
    BaseNotFound,
    BaseRequest,
    GitTreeLookup,
    TreeSettings,
    choose_base,
    tree_at,
)
from bot.series.mbox import MboxError, am_ready_mbox
from workers import steps
from workers.apply import UnsafePatch, apply_mbox
from workers.build import build_commit
from workers.sandbox import SandboxError

STEPS = {
    "apply": ("apply",),
    "build": ("apply", "build-base", "build-patched"),
    "review": ("apply", "build-base", "build-patched", "bench", "report"),
}
FINISHED = ("done", "failed", "cancelled", "superseded")  # run states that no worker changes


class PlanError(ValueError):
    """A run that cannot be made (no such tree, nothing configured); the text says why."""


def work_dir(settings: Settings) -> Path:
    return Path(settings.build.work_dir) if settings.build.work_dir else data_dir() / "build"


def find_tree(settings: Settings, name: str | None) -> TreeSettings:
    """The configured tree called `name` (the first if None), or the tree at `name` when it is
    a path (`lorelab review --tree PATH` names a run's tree by its path)."""
    for tree in settings.trees:
        if name is None or tree.name == name:
            return tree
    if name is not None and Path(name).is_absolute():
        try:
            return tree_at(name)
        except ValueError as exc:
            raise PlanError(str(exc)) from None
    if not settings.trees:
        raise PlanError("no kernel trees are configured: add a [[trees]] table to the config")
    raise PlanError(f"no tree {name!r}; configured: {', '.join(t.name for t in settings.trees)}")


def create_run(session: Session, version: SeriesVersion, *, kind: str, tree: str,
               base: str | None = None, benchmarks: list[str] | None = None,
               runner: str | None = None, trigger: str = "cli") -> Run:
    """A queued run with its queued steps (committed by the caller).

    `benchmarks` and `runner` (a lab host's name) matter to review runs; `trigger` says who
    asked ("cli", "auto", "email:<address>", "retest")."""
    if kind not in STEPS:
        raise PlanError(f"no run kind {kind!r}; known: {', '.join(STEPS)}")
    run = Run(series_version_id=version.id, kind=kind, tree=tree, requested_base=base,
              state="queued", benchmarks=list(benchmarks or []), runner=runner, trigger=trigger)
    run.steps = [RunStep(name=name, state="queued") for name in STEPS[kind]]
    session.add(run)
    session.flush()
    return run


def cancel_run(session: Session, run: Run, *, state: str = "cancelled") -> bool:
    """Stop a run that has not finished: its unfinished steps will not start (a step already
    running finishes its work, and its result is kept). False when it had finished already.
    `state` is "cancelled" (asked for) or "superseded" (a newer version of the series came)."""
    if run.state in FINISHED:
        return False
    for step in run.steps:
        if step.state in ("queued", "failed"):
            step.state = state
    run.state = state
    run.updated_at = utcnow()
    return True


def retest_run(session: Session, run: Run, *, trigger: str = "retest") -> Run:
    """A new run like `run` (same version, kind, tree, base, benchmarks, lab host)."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    return create_run(session, version, kind=run.kind, tree=run.tree, base=run.requested_base,
                      benchmarks=list(run.benchmarks or []), runner=run.runner,
                      trigger=trigger)


def pending_steps(run: Run) -> list[RunStep]:
    """Steps still to run, in order: queued, failed, or `running` left by a crashed worker;
    none for a cancelled or superseded run."""
    if run.state in ("cancelled", "superseded"):
        return []
    return [s for s in run.steps if s.state != "done"]


def dispatch(run: Run, settings: Settings) -> None:
    """Send the run's unfinished steps to Celery, in order (eager: they run now, here).

    apply and report go to the `git` queue, builds to `build`, and the bench step to the lab
    host's own queue, where one worker runs one benchmark at a time."""
    from celery import chain

    from workers.bench_step import review_host
    from workers.tasks import apply_task, bench_task, build_task, report_task

    tasks = {"apply": apply_task, "build-base": build_task, "build-patched": build_task,
             "bench": bench_task, "report": report_task}
    signatures = []
    for step in pending_steps(run):
        signature = tasks[step.name].si(step.id)
        if step.name == "bench":
            signature = signature.set(queue=review_host(settings, run.runner).queue_name)
        signatures.append(signature)
    if signatures:
        chain(*signatures).apply_async()


def _lists_of(session: Session, version: SeriesVersion) -> tuple[str, ...]:
    message_ids = [p.message_id for p in version.patches]
    if version.cover_message_id:
        message_ids.append(version.cover_message_id)
    names = session.scalars(
        sa.select(MailingList.name).join(MessageList, MessageList.list_id == MailingList.id)
        .where(MessageList.message_id.in_(message_ids)).distinct()
    )
    return tuple(sorted(names))


def run_apply_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Choose the base, apply the series' am-ready mbox there, record what happened."""
    if not steps.start_step(db, step_id, task_id):
        return
    try:
        with db.session() as session:
            step = session.get(RunStep, step_id)
            assert step is not None
            run = step.run
            version = session.get(SeriesVersion, run.series_version_id)
            assert version is not None
            tree = find_tree(settings, run.tree)
            mbox = am_ready_mbox(session, version)
            request = BaseRequest(base_commit=version.base_commit,
                                  prefixes=tuple(version.prefixes or ()),
                                  lists=_lists_of(session, version), explicit=run.requested_base)
            run_id = run.id
        repo = Path(tree.path)
        choice = choose_base(tree, request, GitTreeLookup(repo, mbox))
        result = apply_mbox(repo, work_dir(settings), tree.key, f"run-{run_id}", choice.commit,
                            mbox)
    except (PlanError, BaseNotFound, UnsafePatch, MboxError) as exc:
        steps.finish_step(db, step_id, ok=False, error=str(exc))
        return
    except steps.TransientError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the row; the worker lives on
        steps.finish_step(db, step_id, ok=False, error=f"{exc.__class__.__name__}: {exc}",
                          log=traceback.format_exc())
        return
    record = {
        "base": choice.commit, "base_reason": choice.reason, "base_detail": choice.detail,
        "base_branch": choice.branch, "patched": result.patched, "applied": result.applied,
        "failed_patch": result.failed_patch,
        "conflicts": [{"path": c.path, "hunks": c.hunks} for c in result.conflicts],
    }
    error = None
    if not result.ok:
        files = ", ".join(c.path for c in result.conflicts) or "unknown files"
        error = f"patch {result.failed_patch or '?'} does not apply: conflicts in {files}"
    steps.finish_step(
        db, step_id, ok=result.ok, result=record, log=result.output, error=error,
        run_fields={"base_commit": choice.commit, "base_reason": choice.detail,
                    "patched_commit": result.patched},
    )


def run_build_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Build the base (`build-base`) or the patched tree (`build-patched`) of an applied run."""
    with db.session() as session:
        step = session.get(RunStep, step_id)
        assert step is not None
        run = step.run
        apply = next((s for s in run.steps if s.name == "apply"), None)
        applied = apply is not None and apply.state == "done"
        base, patched, tree_name, name = run.base_commit, run.patched_commit, run.tree, step.name
    if not applied or base is None or patched is None:
        steps.start_step(db, step_id, task_id)
        steps.finish_step(db, step_id, ok=False, error="not built: the series did not apply")
        return
    if not steps.start_step(db, step_id, task_id):
        return
    try:
        tree = find_tree(settings, tree_name)
        commit = base if name == "build-base" else patched
        result = build_commit(Path(tree.path), tree.key, commit, base, settings.build,
                              work_dir(settings))
    except (PlanError, SandboxError) as exc:
        steps.finish_step(db, step_id, ok=False, error=str(exc))
        return
    except Exception as exc:  # noqa: BLE001 - recorded on the row; the worker lives on
        steps.finish_step(db, step_id, ok=False, error=f"{exc.__class__.__name__}: {exc}",
                          log=traceback.format_exc())
        return
    error = None
    if not result.ok:
        first = result.errors[0] if result.errors else None
        error = "build failed" + (f": {first.location} {first.message}".rstrip()
                                  if first else "")
    log = result.log
    if result.errors:
        log = "\n\n".join("\n".join(e.excerpt) for e in result.errors) + "\n\n[...]\n" + \
            log[-2000:]
    steps.finish_step(db, step_id, ok=result.ok, result=result.as_dict(), log=log, error=error)

