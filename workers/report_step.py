"""The `report` step of a review run: the reply the run's outcome calls for, into the outbox.

Which reply, if any, is decided by `bot.runs.outcome.decide` (docs/replies.md): does-not-apply
naming the patch and the conflicting files, build-failure quoting the first errors, or the
benchmark reply from the campaigns' samples. No reply when lorelab could not test the series
(the base does not build, the lab failed: the author cannot fix it, the status page shows why),
nor after `#lorelab stop` for the series (bot.runs.stops). The reply's Message-ID derives from
the series version, so a repeated step finds the stored reply instead of writing a second one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bot.benchmarks.registry import benchmark as make_benchmark
from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, find_host
from bot.db.models import LabCampaign, Run, SeriesVersion
from bot.db.session import Database
from bot.report.compose.benchmark_reply import compose_benchmark_reply
from bot.report.compose.campaign import campaign_policy, judge_campaign, stored_judgement
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
from bot.report.compose.message import ComposedReply
from bot.report.compose.results import BenchmarkReplyContext, BuildInfo, Machine
from bot.report.deliver.outbox import enqueue
from bot.runs.base import tree_at
from bot.runs.outcome import outcome_of
from bot.runs.records import ApplyRecord, BuildRecord, ReportRecord
from bot.runs.steps import StepEnd, run_step, stored_step
from bot.runs.stops import series_stopped

BOOTS = {"tcg": "TCG guest", "kvm": "KVM guest"}  # a qemu host's accel, as samples record it


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
            reproduce=_reproduce(version, run))
        return compose_apply_failure(ctx, options), outcome.why
    base = BuildRecord.from_step(by_name["build-base"])
    if outcome.reply == BUILD_FAILURE:
        ctx_build = BuildFailureContext(
            parent=parent, series=series, tree=tree, build=_build_info(settings, base),
            log=by_name["build-patched"].log_excerpt, reproduce=_reproduce(version, run))
        return compose_build_failure(ctx_build, options), outcome.why
    campaigns = list(session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == run.id,
                                                                 LabCampaign.state == "done")
                                     .order_by(LabCampaign.id)))
    # Each campaign was judged when it ended; a campaign stored before judgements were is
    # judged from its samples.
    results = tuple(stored_judgement(c) or judge_campaign(c, make_benchmark(c.benchmark,
                                                                          **c.parameters))
                    for c in campaigns)
    measured = [s for s in campaigns[0].samples if not s.warmup]
    host = find_host(settings.lab_hosts, run.runner)
    ctx_bench = BenchmarkReplyContext(
        parent=parent, series=series, tree=tree,
        machine=_machine(host, campaigns[0], measured[0].accel if measured else "none"),
        build=_build_info(settings, base),
        policy=campaign_policy(campaigns[0], measured),
        benchmarks=results,
        reproduce=_reproduce(version, run))
    return compose_benchmark_reply(ctx_bench, options), outcome.why


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


def _build_info(settings: Settings, build: BuildRecord) -> BuildInfo:
    config = settings.build.base_config
    names = [Path(config).name, *(Path(f).stem for f in settings.build.fragments)]
    record: dict[str, Any] = {}
    artifacts = build.artifact_dir
    if artifacts and (Path(artifacts) / "build.json").exists():
        record = json.loads((Path(artifacts) / "build.json").read_text())
    return BuildInfo(config_name="+".join(names), config_hash=str(record.get("config", ""))[:12],
                     compiler=str(record.get("compiler", "")))


def _machine(host: LabHostSettings, campaign: LabCampaign, accel: str) -> Machine:
    """The machine the samples came from, as the job read it there (workers/lab/machine.py):
    the guest for a qemu host, the lab machine for an ssh host, this host for a local one."""
    recorded = campaign.machine or {}
    facts: dict[str, Any] = recorded.get("A") or recorded.get("B") or {}
    if not facts:
        # A campaign stored before machines were recorded: say only what is known.
        return Machine(cpu="CPU not recorded", cores=host.cpus,
                       boot=BOOTS.get(accel, f"{host.runner} lab host"), host=host.name)
    if accel in ("kvm", "tcg"):
        boot = BOOTS[accel]
    else:  # the job ran on a machine's own kernel (ssh) or on this host's (local)
        boot = "virtual machine" if facts.get("virtualized") else "bare metal"
    memory_kb = facts.get("memory_kb")
    cpus = int(facts.get("cpus") or host.cpus)
    per_core = facts.get("threads_per_core")
    return Machine(
        cpu=str(facts.get("cpu") or "unknown CPU"), cores=cpus // per_core if per_core else cpus,
        threads=cpus if per_core else None, l1d=_size(facts.get("l1d")),
        l1i=_size(facts.get("l1i")), l2=_size(facts.get("l2")), l3=_size(facts.get("l3")),
        memory=_memory(memory_kb), numa_nodes=int(facts.get("numa_nodes") or 1), boot=boot,
        host=host.name)


def _size(kernel_size: object) -> str:
    """"32K" (as /sys says) as lscpu prints it: "32 KiB"; "16384K" -> "16 MiB"."""
    text = str(kernel_size or "")
    if not text.endswith("K") or not text[:-1].isdigit():
        return text
    kib = int(text[:-1])
    return f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib} KiB"


def _memory(kb: object) -> str:
    if not isinstance(kb, int) or kb <= 0:
        return ""
    mib = kb / 1024
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def _reproduce(version: SeriesVersion, run: Run) -> tuple[str, ...]:
    lines = [f"b4 am {version.anchor_msgid}"]
    if run.base_commit:
        lines.append(f"git checkout {run.base_commit[:12]} && git am ./*.mbx")
    lines.append(f"lorelab review {version.anchor_msgid} --tree PATH")
    return tuple(lines)
