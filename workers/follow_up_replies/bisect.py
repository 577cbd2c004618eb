"""The bisect follow-up's reply, read from the database: the run's bisection record, its
campaigns' machine, the patches' subjects, and how to reproduce the decisive prefix."""

from __future__ import annotations

import sqlalchemy as sa

from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, configured_hosts
from bot.db.models import LabCampaign, Run, SeriesVersion
from bot.report.compose.bisect_reply import BisectReplyContext, compose_bisect_reply
from bot.report.compose.from_db import (
    answered_message,
    fetch_lines,
    parent_message,
    patches_applied_by,
    reply_options,
    series_info,
)
from bot.report.compose.message import ComposedReply
from bot.report.compose.reproduce import bench_lines
from bot.runs.bisection import Ended
from bot.runs.outcome import RunOutcome
from bot.runs.records import ApplyRecord, BisectRecord, BuildRecord
from workers.reply_context import bench_command, build_steps, machine_of, status_url, tree_info


def bisect_reply(session: sa.orm.Session, settings: Settings, run: Run,
                 outcome: RunOutcome) -> ComposedReply | None:
    """The reply of a bisect run whose bisect step ended (bot.runs.outcome says when)."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    steps = {s.name: s for s in run.steps}
    record = BisectRecord.from_step(steps.get("bisect"))
    probes = {p.prefix: p for p in record.probes}
    campaigns = [session.get(LabCampaign, i) for p in record.probes for i in p.campaigns]
    first = next((c for c in campaigns if c is not None), None)
    host = next((h for h in configured_hosts(settings.lab_hosts) if h.name == record.host),
                LabHostSettings(name=record.host or "lab"))
    machine = None
    if first is not None:
        measured = [s for s in first.samples if not s.warmup]
        machine = machine_of(host, first, measured[0].accel if measured else "none")
    decisive = record.found if record.ended == Ended.FOUND else record.stopped_at
    reproduce: tuple[str, ...] = ()
    if decisive is not None and decisive in probes:
        base = BuildRecord.from_step(steps.get("build-base"))
        applied = fetch_lines(version, run.base_commit or "", patches_applied_by(run))
        build = build_steps(run, settings, base)
        shown = [c for c in campaigns if c is not None and c.id in probes[decisive].campaigns]
        back = record.patches - decisive
        reproduce = (*applied,
                     *([f"git checkout HEAD~{back}   # prefix {decisive}/{record.patches}"]
                       if back else []),
                     *build,
                     f"# and the base: git checkout {(run.base_commit or '')[:12]}, built the "
                     "same way",
                     *bench_lines([bench_command(c, host) for c in shown],
                                  booted=record.runner != "local"))
    ctx = BisectReplyContext(
        parent=parent_message(answered_message(version)),
        series=series_info(version, status_url=status_url(settings, version), run_id=run.id),
        tree=tree_info(settings, run, ApplyRecord.from_step(steps.get("apply"))),
        subjects=tuple(p.message.title for p in sorted(version.applied_patches,
                                                          key=lambda p: p.index)),
        bisection=record, machine=machine,
        warmup_pairs=first.warmup_pairs if first is not None else host.warmup_pairs,
        iterations=host.iterations,
        reproduce=reproduce)
    return compose_bisect_reply(ctx, reply_options(settings.report))
