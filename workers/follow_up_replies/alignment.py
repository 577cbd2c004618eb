"""The align follow-up's reply, read from the database: the review's changed main metrics and
the align run's figures for them (judged by bot/runs/alignment.py), how its builds forced
alignment, the machine, and how to reproduce the aligned builds."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, configured_hosts
from bot.db.models import Run, SeriesVersion
from bot.report.compose.alignment_reply import AlignmentReplyContext, compose_alignment_reply
from bot.report.compose.campaign import campaign_policy, stored_judgement
from bot.report.compose.from_db import answered_message, parent_message, reply_options, series_info
from bot.report.compose.message import ComposedReply
from bot.report.compose.reproduce import bench_lines
from bot.runs.alignment import judge_alignment
from bot.runs.findings import headline, run_campaigns
from bot.runs.outcome import RunOutcome
from bot.runs.records import ApplyRecord, BuildRecord
from workers.kernel.alignment import ForcedAlignment
from workers.reply_context import bench_command, machine_of, reproduce_lines, status_url, tree_info


def alignment_reply(session: sa.orm.Session, settings: Settings, run: Run,
                    outcome: RunOutcome) -> ComposedReply | None:
    """The reply of an align run whose campaigns ran (bot.runs.outcome says when); None when
    its review found no change to set beside the aligned kernels' figures."""
    review = session.get(Run, run.parent_run_id) if run.parent_run_id is not None else None
    campaigns = run_campaigns(session, run, done=True)
    if review is None or not campaigns:
        return None
    judged = judge_alignment(headline(run_campaigns(session, review, done=True)),
                             headline(campaigns))
    if not judged:
        return None
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    steps = {s.name: s for s in run.steps}
    base = BuildRecord.from_step(steps["build-base"])
    alignment = ForcedAlignment.from_shown(base.alignment)
    first = campaigns[0]
    measured = [s for s in first.samples if not s.warmup]
    host = next((h for h in configured_hosts(settings.lab_hosts) if h.name == first.host),
                LabHostSettings(name=first.host))
    judgement = stored_judgement(first)
    main = next((m for m in judgement.metrics if not m.secondary), None) if judgement else None
    # The reproduce lines build as the aligned builds did: the option's fragment, or KCFLAGS.
    shown = dataclasses.replace(settings, build=alignment.shown_settings(settings.build))
    ctx = AlignmentReplyContext(
        parent=parent_message(answered_message(version)),
        series=series_info(version, status_url=status_url(settings, version), run_id=run.id),
        tree=tree_info(settings, run, ApplyRecord.from_step(steps["apply"])),
        alignment=alignment.shown,
        metrics=tuple(judged),
        machine=machine_of(host, first, measured[0].accel if measured else "none"),
        policy=campaign_policy(first, measured),
        interval_label=main.comparison.interval_label if main else "95% interval",
        reproduce=(*reproduce_lines(version, run, shown, base),
                   *bench_lines([bench_command(c, host) for c in campaigns],
                                booted=first.runner != "local")))
    return compose_alignment_reply(ctx, reply_options(settings.report))
