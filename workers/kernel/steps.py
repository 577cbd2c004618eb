"""The `apply` and `build-*` steps of a run: choose the base and apply the series there, then
build the base and the patched tree. Each runs under `bot.runs.steps.run_step`, which records
the step's start and end.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import Settings, data_dir
from bot.db.models import MailingList, MessageList, SeriesVersion
from bot.db.session import Database
from bot.git import GitError, git_output
from bot.runs.base import BaseNotFound, BaseRequest, GitTreeLookup, choose_base
from bot.runs.lifecycle import PlanError, find_tree
from bot.runs.lru import changes_lru_gen
from bot.runs.records import AlternativeRecord, ApplyRecord, BuildRecord
from bot.runs.states import StepState
from bot.runs.steps import StepEnd, StepFailed, run_step, stored_step
from bot.series.mbox import MboxError, am_ready_mbox
from workers.kernel.alignment import forced_alignment
from workers.kernel.apply import UnsafePatch, apply_mbox
from workers.kernel.build import build_commit
from workers.kernel.sandbox import SandboxError


def work_dir(settings: Settings) -> Path:
    """Where worktrees, builds and their artifacts live ([build] work_dir)."""
    return Path(settings.build.work_dir) if settings.build.work_dir else data_dir() / "build"


def series_changes_lru_gen(repo: Path, base: str, patched: str) -> bool:
    """Whether the applied series changes lru_gen code, read from the tree (bot.runs.lru)."""

    def base_file(path: str) -> str | None:
        try:
            return git_output(repo, "show", f"{base}:{path}")
        except GitError:
            return None  # a file the series adds

    return changes_lru_gen(git_output(repo, "diff", "-U0", base, patched), base_file)


def run_apply_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Choose the base, apply the series' am-ready mbox there, record what happened."""
    run_step(db, step_id, task_id, lambda: _apply(db, settings, step_id))


def _apply(db: Database, settings: Settings, step_id: int) -> StepEnd:
    try:
        with db.session() as session:
            step = stored_step(session, step_id)
            run = step.run
            version = session.get(SeriesVersion, run.series_version_id)
            assert version is not None
            tree = find_tree(settings, run.tree)
            mbox = am_ready_mbox(session, version)
            patches = tuple(p.message.msgid for p in version.applied_patches)
            request = BaseRequest(base_commit=version.base_commit,
                                  prefixes=tuple(version.prefixes or ()),
                                  lists=_lists_of(session, version), explicit=run.requested_base)
            run_id = run.id
        repo = Path(tree.path)
        choice = choose_base(tree, request, GitTreeLookup(repo, mbox))
        result = apply_mbox(repo, work_dir(settings), tree.key, f"run-{run_id}", choice.commit,
                            mbox, max_binary_mb=settings.build.max_binary_mb,
                            memory_mb=settings.build.apply_memory_mb,
                            max_file_mb=settings.build.max_file_mb)
    except (PlanError, BaseNotFound, UnsafePatch, MboxError) as exc:
        raise StepFailed(str(exc)) from None
    record = ApplyRecord(
        base=choice.commit, base_reason=choice.reason, base_detail=choice.detail,
        base_branch=choice.branch, patched=result.patched, applied=result.applied,
        failed_patch=result.failed_patch,
        conflicts=result.conflicts, patches=patches,
        changes_lru_gen=bool(result.ok and result.patched)
        and series_changes_lru_gen(repo, choice.commit, str(result.patched)))
    error = None
    if not result.ok:
        files = ", ".join(c.path for c in result.conflicts) or "unknown files"
        error = f"patch {result.failed_patch or '?'} does not apply: conflicts in {files}"
    return StepEnd(ok=result.ok, result=record.as_result(), log=result.output, error=error,
                   run_fields={"base_commit": choice.commit, "base_reason": choice.detail,
                               "patched_commit": result.patched})


def run_build_step(db: Database, settings: Settings, step_id: int,
                   task_id: str | None = None) -> None:
    """Build the base (`build-base`), the patched tree (`build-patched`) or a compare run's
    alternative (`build-alternative`, the commit its apply-alternative step made) of an applied
    run."""
    run_step(db, step_id, task_id, lambda: _build(db, settings, step_id))


def _build(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        run = step.run
        apply = next((s for s in run.steps if s.name == "apply"), None)
        applied = apply is not None and apply.state == StepState.DONE
        base, patched, tree_name, name = run.base_commit, run.patched_commit, run.tree, step.name
        kind = run.kind
        # A compare run's third kernel: the commit its apply-alternative step made.
        alternative = AlternativeRecord.from_step(next(
            (s for s in run.steps if s.name == "apply-alternative" and s.state == StepState.DONE),
            None)).commit
    if not applied or base is None or patched is None:
        raise StepFailed("not built: the series did not apply")
    if name == "build-alternative" and alternative is None:
        raise StepFailed("not built: the alternative did not apply")
    try:
        tree = find_tree(settings, tree_name)
        commit = {"build-base": base, "build-alternative": alternative}.get(name) or patched
        # An align follow-up builds both kernels with every function aligned: its question.
        alignment = forced_alignment(Path(tree.path), base) if kind == "align" else None
        result = build_commit(Path(tree.path), tree.key, commit, base,
                              alignment.build_settings(settings.build) if alignment
                              else settings.build, work_dir(settings),
                              alignment.kcflags if alignment else "")
    except (PlanError, SandboxError) as exc:
        raise StepFailed(str(exc)) from None
    record = BuildRecord.from_build(result)
    if alignment is not None:
        record = dataclasses.replace(record, alignment=alignment.shown)
        if (refused := alignment.not_taken(result.artifact_dir)) is not None:
            raise StepFailed(refused, result=record.as_result())
    error = None
    if not result.ok:
        first = result.errors[0] if result.errors else None
        if first is not None and first.message.startswith("build exceeded its"):
            error = first.message  # a limit stopped it: its own fault, said as such
        else:
            error = "build failed" + (f": {first.location} {first.message}".rstrip()
                                      if first else "")
    log = result.log
    if result.errors:
        log = "\n\n".join("\n".join(e.excerpt) for e in result.errors) + "\n\n[...]\n" + \
            log[-2000:]
    return StepEnd(ok=result.ok, result=record.as_result(), log=log, error=error)


def _lists_of(session: Session, version: SeriesVersion) -> tuple[str, ...]:
    message_ids = [p.message_id for p in version.patches]
    if version.cover_message_id:
        message_ids.append(version.cover_message_id)
    names = session.scalars(
        sa.select(MailingList.name).join(MessageList, MessageList.list_id == MailingList.id)
        .where(MessageList.message_id.in_(message_ids)).distinct()
    )
    return tuple(sorted(names))
