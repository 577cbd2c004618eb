"""Patches already measured: a RESEND, or a new version whose code did not change (only its
changelogs, trailers or cover letter did), gets no review run of its own when another version
of its series sent the same patches and has a review run measuring them the way the planner
would now (the earlier one, as a rule; in a backfill, whichever was planned first).

"The same patches": as many, in the same order, each with the same fingerprint (the idea of
`git patch-id --stable`: the diff without line numbers and whitespace), under the same stated
base-commit. The run must be the planner's kind of run: a review on the same tree, with the same
benchmarks and lab host, on the base lorelab chooses (no `--base`), queued, running or done
(a failed or stopped run measured nothing), and made within the planner's horizon. Measuring
the same code again would spend lab hours on a question already answered, and a second
measurement that falls the other side of the noise would contradict the first in public. A
maintainer who wants it measured again asks (`#lorelab retest` on that run's reply, `#lorelab
test` on the resend); the planner records which run measures the patches
(`SeriesVersion.measured_by_run_id`), and the status page and `lorelab series show` say so,
and what became of that run. Should it be stopped or fail, the planner looks at the version
again (bot.runs.planner).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Run, SeriesVersion
from bot.runs.states import RunState

# Runs that measure, or will: not failed, not cancelled, not superseded.
MEASURING = (RunState.QUEUED, RunState.RUNNING, RunState.DONE)


def fingerprints(version: SeriesVersion) -> tuple[str, ...] | None:
    """The fingerprints of the patches a test of `version` applies, in order; None when one
    has none (a patch without a diff lorelab could read is never taken for another)."""
    prints = tuple(p.message.patch_fingerprint for p in version.applied_patches)
    return None if not prints or None in prints else prints  # type: ignore[return-value]


def measuring_run(session: Session, version: SeriesVersion, *, tree: str,
                  benchmarks: Sequence[str], runner: str | None,
                  since: dt.datetime) -> Run | None:
    """The newest run, made since `since`, of another version of `version`'s series that
    measures the same patches as a review run the planner would make for it now; or None."""
    prints = fingerprints(version)
    if prints is None:
        return None
    others = session.scalars(
        sa.select(SeriesVersion)
        .where(SeriesVersion.series_id == version.series_id, SeriesVersion.id != version.id,
               SeriesVersion.expected == version.expected)
        .order_by(SeriesVersion.id)).all()
    same = [v.id for v in others
            if v.base_commit == version.base_commit and fingerprints(v) == prints]
    if not same:
        return None
    runs = session.scalars(
        sa.select(Run).where(Run.series_version_id.in_(same), Run.kind == "review",
                             Run.tree == tree, Run.runner.is_(None) if runner is None
                             else Run.runner == runner,
                             Run.requested_base.is_(None), Run.state.in_(MEASURING),
                             Run.created_at >= since)
        .order_by(Run.id.desc())).all()
    return next((run for run in runs if sorted(run.benchmarks) == sorted(benchmarks)), None)
