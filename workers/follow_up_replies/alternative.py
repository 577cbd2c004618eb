"""The compare run's reply, read from the database: the reviewer's message it answers, where
their diff went (the apply-alternative step's record), and the triples campaigns judged again
from their samples as their loop judged them (bot.report.compose.campaign.judge_triples).
Composed by bot/report/compose/alternative_reply.py."""

from __future__ import annotations

import sqlalchemy as sa

from bot.benchmarks.registry import benchmark as make_benchmark
from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, configured_hosts
from bot.db.models import LabCampaign, Message, Run, SeriesVersion
from bot.report.compose.alternative_reply import (
    AlternativeReplyContext,
    NotAppliedContext,
    Placement,
    TriplesCampaign,
    compose_alternative_not_applied,
    compose_alternative_reply,
)
from bot.report.compose.campaign import family_level, judge_triples
from bot.report.compose.from_db import (
    fetch_lines,
    parent_message,
    patches_applied_by,
    reply_options,
    series_info,
)
from bot.report.compose.message import ComposedReply
from bot.report.compose.reproduce import bench_lines, raw_url
from bot.runs.findings import run_campaigns
from bot.runs.outcome import Outcome, RunOutcome
from bot.runs.records import AlternativeRecord, BuildRecord
from workers.reply_context import bench_command, build_steps, machine_of, status_url


def alternative_reply(session: sa.orm.Session, settings: Settings, run: Run,
                      outcome: RunOutcome) -> ComposedReply | None:
    """The reply to the reviewer for compare run `run`; None when their message is gone."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    msgid = str((run.options or {}).get("alternative", "")).strip("<> ")
    message = session.scalar(sa.select(Message).where(Message.msgid == msgid))
    if message is None:
        return None
    step = next((s for s in run.steps if s.name == "apply-alternative"), None)
    record = AlternativeRecord.from_step(step)
    base = run.base_commit or ""
    placement = Placement(where=record.where, answers=record.answers, patches=record.patches,
                          base=base, commit=record.commit or "")
    series = series_info(version, run_id=run.id, status_url=status_url(settings, version))
    options = reply_options(settings.report)
    if outcome.outcome is Outcome.NOT_APPLIED:
        return compose_alternative_not_applied(NotAppliedContext(
            parent=parent_message(message), series=series, placement=placement,
            tried=record.tried, failed_at=record.failed_at, conflicts=record.conflicts,
            failed_patch=record.failed_patch), options)
    campaigns = [c for c in run_campaigns(session, run, done=True) if c.kernel_c is not None]
    if not campaigns:
        return None
    first = campaigns[0]
    host = next((h for h in configured_hosts(settings.lab_hosts) if h.name == first.host),
                LabHostSettings(name=first.host))
    accel = next((s.accel for s in first.samples if not s.warmup), "none")
    built = BuildRecord.from_step(next((s for s in run.steps if s.name == "build-base"), None))
    # The series' own lines build it; the alternative's tree is made before them.
    apply = fetch_lines(version, base, patches_applied_by(run))
    reproduce = (*_alternative_lines(apply, placement, msgid), *build_steps(run, settings, built),
                 *bench_lines([bench_command(c, host) for c in campaigns],
                              booted=first.runner != "local"))
    return compose_alternative_reply(AlternativeReplyContext(
        parent=parent_message(message), series=series, placement=placement,
        outcome=outcome.label, campaigns=tuple(_triples(c) for c in campaigns),
        machine=machine_of(host, first, accel), reproduce=reproduce), options)


def _triples(campaign: LabCampaign) -> TriplesCampaign:
    judged = judge_triples(campaign, make_benchmark(campaign.benchmark, **campaign.parameters))
    label = next(iter(judged.values())).label
    return TriplesCampaign(label=label, comparisons=judged,
                           triples=len({s.pair_index for s in campaign.samples if not s.warmup}),
                           warmups=campaign.warmup_pairs, k_min=campaign.k_min,
                           k_max=campaign.k_max, alpha=family_level(campaign))


def _alternative_lines(apply: list[str], placement: Placement, msgid: str) -> list[str]:
    """The alternative's tree without lorelab: the series (`apply`), back to the patch the
    diff replaces, the diff from the list archive, then the rest of the series."""
    lines = list(apply)
    after = 0
    if placement.answers is not None and placement.where.startswith("in place"):
        after = placement.patches - placement.answers
        lines.append(f"git reset --hard HEAD~{after + 1}")
    lines.append(f"curl -s {raw_url(msgid)} | git apply --index && git commit -qm alternative")
    if after:
        lines.append(f"git cherry-pick ORIG_HEAD~{after}..ORIG_HEAD")
    return lines
