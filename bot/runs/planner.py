"""The automatic pipeline's planner: which new series versions get a review run, and where.

A version is planned once: when it is complete, recent, touches a path a suite watches
(bot.runs.suites), and its series was not stopped by `#lorelab stop` (bot.runs.stops). Its tree
is the first whose `list_branches` names one of the version's lists, else the first tree. A newer
version of the same series supersedes the older one's unfinished runs, so the lab never spends
hours on a version nobody will merge; one that sends the same patches as a version with a run
(a RESEND, a reroll of changelogs only) gets none, and records that run (bot.runs.same_patches);
should that run be stopped or fail, the version is planned again, unless a newer version of its
series has a run. A version whose patches were corrected after its run applied them is measured
again (bot.runs.corrections).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import MailingList, MessageList, Patch, Run, SeriesVersion, utcnow
from bot.mail.subject import version_label
from bot.runs.corrections import corrected_versions
from bot.runs.lifecycle import cancel_run, create_run, retest_run
from bot.runs.same_patches import MEASURING, measuring_run
from bot.runs.states import RunState
from bot.runs.stops import series_stopped
from bot.runs.suites import suite_for

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planned:
    run_id: int
    series_version_id: int
    suite: str
    superseded: tuple[int, ...]  # run ids of older versions stopped for this one


def plan_new_versions(session: Session, settings: Settings,
                      now: dt.datetime | None = None) -> list[Planned]:
    """Create review runs for the versions that need one (committed by the caller)."""
    if not settings.plan.auto or not settings.trees:
        return []
    now = now or utcnow()
    horizon = now - dt.timedelta(days=settings.plan.max_age_days)
    has_run = sa.select(Run.id).where(Run.series_version_id == SeriesVersion.id,
                                      Run.kind == "review").exists()
    # A version whose patches another's run was to measure is looked at again when that run
    # was stopped or failed: it measured nothing.
    measured = sa.select(Run.id).where(Run.id == SeriesVersion.measured_by_run_id,
                                       Run.state.in_(MEASURING)).exists()
    candidates = session.scalars(
        sa.select(SeriesVersion).where(SeriesVersion.complete.is_(True), ~has_run, ~measured,
                                       sa.or_(SeriesVersion.date.is_(None),
                                              SeriesVersion.date >= horizon))
        .order_by(SeriesVersion.id)).all()
    planned = []
    for version in candidates:
        suite = suite_for(settings.suites, version.touched_files)
        if suite is None or series_stopped(session, version.series_id):
            continue
        if version.measured_by_run_id is not None and _newer_version_runs(session, version):
            continue  # its run was stopped for a newer version, which this one does not undo
        tree = planned_tree(session, settings, version)
        benchmarks, runner = list(suite.benchmarks), suite.lab_host or None
        measuring = measuring_run(session, version, tree=tree, benchmarks=benchmarks,
                                  runner=runner, since=horizon)
        if measuring is not None:  # which goes on: the same patches do not supersede it
            version.measured_by_run_id = measuring.id
            log.info("series %d %s: the same patches as run %d measures; no run of its own",
                     version.series_id, version_label(version.version, version.prefixes),
                     measuring.id)
            continue
        version.measured_by_run_id = None  # measured by its own run
        superseded = []
        for older in _older_versions(session, version):
            for run in older_runs(session, older):
                if cancel_run(session, run, state=RunState.SUPERSEDED):
                    superseded.append(run.id)
        run = create_run(session, version, kind="review", tree=tree, benchmarks=benchmarks,
                         runner=runner, trigger="auto")
        planned.append(Planned(run.id, version.id, suite.name, tuple(superseded)))
    return planned + _measure_corrections(session, settings, horizon)


def _measure_corrections(session: Session, settings: Settings,
                         horizon: dt.datetime) -> list[Planned]:
    """A new run for each version whose patches were corrected after its last review run
    applied them, which stops that run if it has not finished (bot.runs.corrections)."""
    planned = []
    for found in corrected_versions(session, horizon):
        version, old = found.version, found.run
        suite = suite_for(settings.suites, version.touched_files)
        if (suite is None or series_stopped(session, version.series_id)
                or _newer_version_runs(session, version)):
            continue
        stopped = (old.id,) if cancel_run(session, old, state=RunState.SUPERSEDED) else ()
        run = retest_run(session, old, trigger="auto")
        log.info("series %d %s: patch %s changed since run %d applied them; run %d measures "
                 "them as they are now", version.series_id,
                 version_label(version.version, version.prefixes),
                 ", ".join(map(str, found.replaced)), old.id, run.id)
        planned.append(Planned(run.id, version.id, suite.name, stopped))
    return planned


def older_runs(session: Session, version_id: int) -> list[Run]:
    return list(session.scalars(sa.select(Run).where(Run.series_version_id == version_id)))


def _newer_version_runs(session: Session, version: SeriesVersion) -> bool:
    """Whether a newer version of `version`'s series has a review run."""
    return session.scalar(sa.select(
        sa.select(Run.id).join(SeriesVersion, SeriesVersion.id == Run.series_version_id)
        .where(SeriesVersion.series_id == version.series_id, Run.kind == "review",
               SeriesVersion.version > version.version).exists())) or False


def _older_versions(session: Session, version: SeriesVersion) -> list[int]:
    return list(session.scalars(sa.select(SeriesVersion.id).where(
        SeriesVersion.series_id == version.series_id, SeriesVersion.id != version.id,
        SeriesVersion.version < version.version)))


def planned_tree(session: Session, settings: Settings, version: SeriesVersion) -> str:
    """The tree a version is tested on (also for `#lorelab test`, bot.commands.handler)."""
    lists = set(session.scalars(
        sa.select(MailingList.name).join(MessageList, MessageList.list_id == MailingList.id)
        .join(Patch, Patch.message_id == MessageList.message_id)
        .where(Patch.series_version_id == version.id)))
    for tree in settings.trees:
        if lists & set(tree.list_branches):
            return tree.name
    return settings.trees[0].name
