"""Patches corrected after a run applied them: the version is measured again.

A version's patches can change after its review run applied them: the author sends a corrected
patch in reply to the cover letter (`[PATCH v5 3/6 REPLACE]`, or the same number and title a
day later; bot.series.grouping takes the later copy), or a patch that arrived late takes the
place another held. The run measured the patches as they were (its apply step records their
Message-IDs, `ApplyRecord.patches`), and its reply says so; the version as it now stands was
never measured. The planner gives it a new review run like the last one (same tree,
benchmarks, lab host and requested base) and stops that run if it has not finished, so that it
does not reply about patches the author replaced. A run that has not applied yet needs nothing:
it applies the patches as they are then.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session, selectinload

from bot.db.models import Message, Patch, Run, RunStep, SeriesVersion
from bot.runs.records import ApplyRecord


@dataclass(frozen=True)
class Corrected:
    version: SeriesVersion
    run: Run  # the version's last review run, which applied other patches
    replaced: tuple[int, ...]  # the numbers of the patches that changed since


def corrected_versions(session: Session, since: dt.datetime) -> list[Corrected]:
    """The complete versions posted since `since` whose last review run applied other patches
    than they now hold."""
    last = (sa.select(sa.func.max(Run.id)).where(Run.kind == "review",
                                                 Run.parent_run_id.is_(None))
            .group_by(Run.series_version_id))
    # Only a version that changed after its run was made can hold other patches.
    rows = session.execute(
        sa.select(SeriesVersion, Run, RunStep)
        .join(Run, Run.series_version_id == SeriesVersion.id)
        .join(RunStep, sa.and_(RunStep.run_id == Run.id, RunStep.name == "apply"))
        .where(Run.id.in_(last), SeriesVersion.complete.is_(True),
               SeriesVersion.updated_at > Run.created_at,
               sa.or_(SeriesVersion.date.is_(None), SeriesVersion.date >= since))
        .order_by(SeriesVersion.id)
        # the patches' ids only: a statement for all, no mail decompressed
        .options(selectinload(SeriesVersion.patches).joinedload(Patch.message)
                 .load_only(Message.id, Message.msgid))).all()
    out = []
    for version, run, step in rows:
        applied = ApplyRecord.from_step(step).patches
        if not applied:  # not applied yet, or recorded before patches were
            continue
        now = tuple(p.message.msgid for p in version.applied_patches)
        if now != applied:
            replaced = tuple(i for i, msgid in enumerate(now, 1)
                             if i > len(applied) or applied[i - 1] != msgid)
            out.append(Corrected(version, run, replaced))
    return out
