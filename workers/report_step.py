"""The `report` step of a review run: the reply the run's outcome calls for, into the outbox.

Which reply, if any, is decided by `bot.runs.outcome.decide` (docs/replies.md): does-not-apply
naming the patch and the conflicting files, build-failure quoting the first errors, or the
benchmark reply from the campaigns' samples. No reply when lorelab could not test the series
(the base does not build, the lab failed: the author cannot fix it, the status page shows why),
nor after `#lorelab stop` for the series (bot.runs.stops). The reply's Message-ID derives from
the series version, so a repeated step finds the stored reply instead of writing a second one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bot.analysis.claims import analyse_message
from bot.analysis.claims.input import read_message_text
from bot.benchmarks.registry import benchmark as make_benchmark
from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, configured_hosts
from bot.db.models import LabCampaign, Message, Run, SeriesVersion
from bot.db.session import Database
from bot.report.compose.benchmark_reply import compose_benchmark_reply
from bot.report.compose.campaign import campaign_policy, judge_campaign, stored_judgement
from bot.report.compose.claim_view import claim_from_judged
from bot.report.compose.failure_reply import (
    BUILD_FAILURE,
    DOES_NOT_APPLY,
    ApplyFailureContext,
    BuildFailureContext,
    compose_apply_failure,
    compose_build_failure,
)
from bot.report.compose.from_db import answered_message, parent_message, reply_options, series_info
from bot.report.compose.inputs import TreeInfo
from bot.report.compose.machine_facts import machine_from_facts
from bot.report.compose.message import ComposedReply
from bot.report.compose.reproduce import (
    BenchmarkCommand,
    ConfigRecipe,
    apply_lines,
    bench_lines,
    build_lines,
)
from bot.report.compose.results import BenchmarkReplyContext, BuildInfo, ClaimQuote, Machine
from bot.report.deliver.outbox import enqueue
from bot.runs.base import tree_at
from bot.runs.findings import run_campaigns
from bot.runs.outcome import RunOutcome, outcome_of
from bot.runs.records import ApplyRecord, BuildRecord, ReportRecord
from bot.runs.steps import StepEnd, run_step, stored_step
from bot.runs.stops import series_stopped

# The reply of each follow-up run (docs/replies.md, "Follow-ups"), by run kind: None when it
# has nothing to say to the list (the reason is the outcome's).
FollowUpReply = Callable[[sa.orm.Session, Settings, Run, RunOutcome], "ComposedReply | None"]
FOLLOW_UP_REPLIES: dict[str, FollowUpReply] = {}


def run_report_step(db: Database, settings: Settings, step_id: int,
                    task_id: str | None = None) -> None:
    run_step(db, step_id, task_id, lambda: _report(db, settings, step_id))


def _report(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        reply, why = compose_for_run(session, settings, step.run)
        if reply is None:
            return StepEnd(result=ReportRecord(why=why).as_result())
        row, new = enqueue(session, reply, settings.report)
        session.flush()
        record = ReportRecord(reply=row.id, message_id=row.message_id, kind=row.kind,
                              state=row.state, new=new, why=why)
        return StepEnd(result=record.as_result())


def compose_for_run(session: sa.orm.Session, settings: Settings,
                    run: Run) -> tuple[ComposedReply | None, str]:
    """The reply a finished review run calls for (bot.runs.outcome), or None and why none."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    if series_stopped(session, version.series_id):
        return None, "#lorelab stop was said for this series: no replies about it"
    outcome = outcome_of(session, run)
    if outcome.reply is None:
        return None, outcome.why
    if run.kind in FOLLOW_UP_REPLIES:
        return FOLLOW_UP_REPLIES[run.kind](session, settings, run, outcome), outcome.why
    by_name = {s.name: s for s in run.steps}
    apply = ApplyRecord.from_step(by_name["apply"])
    parent = parent_message(answered_message(version))
    series = series_info(version, status_url=_status_url(settings, version), run_id=run.id)
    options = reply_options(settings.report)
    tree = _tree_info(settings, run, apply)
    if outcome.reply == DOES_NOT_APPLY:
        index, subject = _failed_patch(version, apply.failed_patch)
        ctx = ApplyFailureContext(
            parent=parent, series=series, tree=tree, failing_patch=index,
            failing_subject=subject, conflicts=apply.conflicted_paths,
            reproduce=tuple(apply_lines(version.anchor_msgid, run.base_commit or apply.base)))
        return compose_apply_failure(ctx, options), outcome.why
    base = BuildRecord.from_step(by_name["build-base"])
    if outcome.reply == BUILD_FAILURE:
        ctx_build = BuildFailureContext(
            parent=parent, series=series, tree=tree, build=_build_info(settings, base, run),
            log=by_name["build-patched"].log_excerpt,
            reproduce=_reproduce(version, run, settings, base))
        return compose_build_failure(ctx_build, options), outcome.why
    campaigns = run_campaigns(session, run, done=True)
    # Each campaign was judged when it ended; a campaign stored before judgements were is
    # judged from its samples.
    results = tuple(stored_judgement(c) or judge_campaign(c, make_benchmark(c.benchmark,
                                                                          **c.parameters))
                    for c in campaigns)
    measured = [s for s in campaigns[0].samples if not s.warmup]
    # The host the campaigns ran on, as they recorded it (its settings, if still configured).
    host = next((h for h in configured_hosts(settings.lab_hosts) if h.name == campaigns[0].host),
                LabHostSettings(name=campaigns[0].host))
    ctx_bench = BenchmarkReplyContext(
        parent=parent, series=series, tree=tree,
        machine=_machine(host, campaigns[0], measured[0].accel if measured else "none"),
        build=_build_info(settings, base, run),
        policy=campaign_policy(campaigns[0], measured),
        benchmarks=results,
        outcome=outcome.label,
        claims=author_claims(answered_message(version)),
        reproduce=(*_reproduce(version, run, settings, base),
                   *bench_lines([_command(c, host) for c in campaigns],
                                booted=campaigns[0].runner != "local")))
    return compose_benchmark_reply(ctx_bench, options), outcome.why


def author_claims(message: Message) -> tuple[ClaimQuote, ...]:
    """The performance claims the posting makes in its author's own words (the cover letter,
    or patch 1 of a series without one), each judged by its own numbers; the reply sets each
    beside what lorelab measured (claim_view.py). Quoted text is someone else's: left out."""
    text = read_message_text(bytes(message.raw))
    if text.unreadable:
        return ()
    found = analyse_message(text.subject, text.sender, text.body, text.msgid)
    return tuple(
        dataclasses.replace(claim_from_judged(judged, text.body), date=message.date,
                            msgid=message.msgid)
        for judged in found.claims if judged.claim.speaker.quote_depth == 0)


def _status_url(settings: Settings, version: SeriesVersion) -> str:
    base = settings.web.base_url
    return f"{base.rstrip('/')}/series/{version.series_id}" if base else ""


def _tree_info(settings: Settings, run: Run, apply: ApplyRecord) -> TreeInfo:
    tree = next((t for t in settings.trees if t.name == run.tree), None)
    # A tree named by its path (lorelab review --tree) is shown by its directory's name.
    shown = tree.remote if tree and tree.remote else Path(run.tree).name
    return TreeInfo(tree=shown,
                    branch=apply.base_branch
                    or (tree.fallback_branch if tree else _checked_out(run.tree)),
                    base=run.base_commit or apply.base,
                    head=run.patched_commit or "",
                    base_source=run.base_reason or "")


def _checked_out(path: str) -> str:
    try:
        return tree_at(path).fallback_branch
    except ValueError:
        return ""


def _failed_patch(version: SeriesVersion, failed: str | None) -> tuple[int, str]:
    """(1-based index, subject) of the patch git am stopped at (its subject as git named it)."""
    text = str(failed)
    for patch in version.patches:
        if str(patch.index) == text or patch.message.title in text or text in patch.message.subject:
            return patch.index, patch.message.subject
    return 1, text


def _build_info(settings: Settings, build: BuildRecord, run: Run) -> BuildInfo:
    config = settings.build.base_config
    names = [Path(config).name, *(Path(f).stem for f in settings.build.fragments)]
    record: dict[str, Any] = {}
    artifacts = build.artifact_dir
    if artifacts and (Path(artifacts) / "build.json").exists():
        record = json.loads((Path(artifacts) / "build.json").read_text())
    return BuildInfo(config_name="+".join(names), config_hash=_config_sha256(build),
                     compiler=str(record.get("compiler", "")),
                     config_url=_config_url(settings, run))


def _config_sha256(build: BuildRecord) -> str:
    """The sha256 of the .config the kernel was built with (what a reader can check)."""
    config = Path(build.artifact_dir or "") / "config"
    return hashlib.sha256(config.read_bytes()).hexdigest() if config.is_file() else ""


def _config_url(settings: Settings, run: Run) -> str:
    """The status page's copy of the base kernel's .config (bot/web), when a site is set."""
    base = settings.web.base_url
    return f"{base.rstrip('/')}/runs/{run.id}/config" if base else ""


def _reproduce(version: SeriesVersion, run: Run, settings: Settings,
               base: BuildRecord) -> tuple[str, ...]:
    """Apply and build, as lorelab did, without lorelab."""
    recipe = ConfigRecipe(url=_config_url(settings, run), base=settings.build.base_config,
                          fragments=tuple(str(f) for f in settings.build.fragment_files()),
                          sha256=_config_sha256(base))
    return (*apply_lines(version.anchor_msgid, run.base_commit or ""),
            *build_lines(recipe, settings.build.targets))


def _command(campaign: LabCampaign, host: LabHostSettings) -> BenchmarkCommand:
    """The benchmark's command line as the lab ran it, and how often per kernel."""
    definition = make_benchmark(campaign.benchmark, **campaign.parameters)
    argv = definition.argv(kernel="{kernel}", scratch="/tmp/lorelab-scratch")
    boots = len({s.pair_index for s in campaign.samples if not s.warmup})
    return BenchmarkCommand(argv=tuple(argv), runs=boots * host.iterations,
                            memcg_max=definition.memcg_max,
                            build=str(definition.extra.get("build", "")))


def _machine(host: LabHostSettings, campaign: LabCampaign, accel: str) -> Machine:
    """The machine the samples came from, as the job read it there (workers/lab/machine.py):
    the guest for a qemu host, the lab machine for an ssh host, this host for a local one."""
    recorded = campaign.machine or {}
    facts: dict[str, Any] = recorded.get("A") or recorded.get("B") or {}
    return machine_from_facts(facts, host=campaign.host, runner=str(facts.get("runner")
                                                                   or campaign.runner),
                              accel=accel, cores=host.cpus)
