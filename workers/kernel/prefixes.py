"""A bisect run's `build-prefixes` step: each prefix of the series built, from the cache.

The apply step made one commit per patch on the base (`git rev-list --reverse base..patched`);
prefix i is the tree after patch i. Each is built with `workers.kernel.build.build_commit`, so
that it starts from a copy of the base `O=` directory and ccache (recompiling only what the
patches so far touched), and the artifact cache answers any tree built before: prefix N is the
patched tree the review built. A prefix that does not build is recorded, not fatal: the
bisection skips it (bot.runs.bisection). The step fails only when the whole series (prefix N)
does not build, or the run did not apply.
"""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from bot.db.session import Database
from bot.git import git_output
from bot.runs.lifecycle import PlanError, find_tree
from bot.runs.records import PrefixBuild, PrefixesRecord
from bot.runs.states import StepState
from bot.runs.steps import StepEnd, StepFailed, notify, run_step, stored_step
from workers.kernel.build import BuildResult, build_commit
from workers.kernel.sandbox import SandboxError
from workers.kernel.steps import work_dir


def run_build_prefixes_step(db: Database, settings: Settings, step_id: int,
        task_id: str | None = None) -> None:
    """Build every prefix of the applied series of a bisect run."""
    run_step(db, step_id, task_id, lambda: _build_prefixes(db, settings, step_id))


def _build_prefixes(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        run = step.run
        apply = next((s for s in run.steps if s.name == "apply"), None)
        applied = apply is not None and apply.state == StepState.DONE
        base, patched, tree_name, run_id = (run.base_commit, run.patched_commit, run.tree,
                                            run.id)
    if not applied or base is None or patched is None:
        raise StepFailed("not built: the series did not apply")
    try:
        tree = find_tree(settings, tree_name)
    except PlanError as exc:
        raise StepFailed(str(exc)) from None
    repo = Path(tree.path)
    commits = git_output(repo, "rev-list", "--reverse", f"{base}..{patched}").split()
    built: list[PrefixBuild] = []
    logs: list[str] = []
    for prefix, commit in enumerate(commits, 1):
        notify(run_id, "build-prefixes", f"prefix {prefix}/{len(commits)}")
        try:
            result = build_commit(repo, tree.key, commit, base, settings.build,
                                  work_dir(settings))
        except SandboxError as exc:
            raise StepFailed(str(exc)) from None
        built.append(PrefixBuild(prefix=prefix, commit=commit, ok=result.ok,
                                 artifact_dir=result.artifact_dir, cached=result.cached,
                                 seconds=round(result.seconds, 3), error=_first_error(result)))
        if not result.ok:
            logs.append(f"prefix {prefix}/{len(commits)} ({commit[:12]}): "
                        f"{_first_error(result)}\n" + "\n".join(
                            "\n".join(e.excerpt) for e in result.errors))
    whole = bool(built) and built[-1].ok
    record = PrefixesRecord(ok=whole, base=base, prefixes=tuple(built))
    return StepEnd(ok=whole, result=record.as_result(), log="\n\n".join(logs),
                   error=None if whole else "the whole series does not build")


def _first_error(result: BuildResult) -> str:
    if result.ok:
        return ""
    first = result.errors[0] if result.errors else None
    return (f"{first.location} {first.message}".strip() if first else "build failed")
