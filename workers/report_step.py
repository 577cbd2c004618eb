"""The `report` step of a review run: the reply the run's outcome calls for, into the outbox.

- The series did not apply: a does-not-apply reply naming the patch and the conflicting files.
- The base built but the patched tree did not: a build-failure reply quoting the first errors.
- The benchmarks ran: the benchmark reply, every verdict recomputed from the stored samples.
- Anything else (the base does not build, the lab failed): no reply; the author cannot fix it,
  and the status page shows why. Nor after `#lorelab stop` for the series (bot.stops).
The reply's Message-ID derives from the series version, so a repeated step finds the stored
reply instead of writing a second one.
"""

from __future__ import annotations

import json
import platform
import traceback
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bot.config import Settings
from bot.db.models import LabCampaign, Run, RunStep, SeriesVersion
from bot.db.session import Database
from bot.plan import tree_at
from bot.report.benchmark_reply import compose_benchmark_reply
from bot.report.compose import ComposedReply
from bot.report.context import TreeInfo
from bot.report.failure_reply import (
    ApplyFailureContext,
    BuildFailureContext,
    compose_apply_failure,
    compose_build_failure,
)
from bot.report.from_db import answered_message, parent_message, reply_options, series_info
from bot.report.outbox import enqueue
from bot.report.results import BenchmarkReplyContext, BuildInfo, Machine
from bot.stops import series_stopped
from workers import steps
from workers.benchmarks.registry import benchmark as make_benchmark
from workers.lab.campaign import campaign_policy, judge_campaign
from workers.lab.hosts import LabHostSettings, find_host

BOOTS = {"tcg": "TCG guest", "kvm": "KVM guest", "bare": "bare metal", "none": "bare metal"}


def run_report_step(db: Database, settings: Settings, step_id: int,
                    task_id: str | None = None) -> None:
    if not steps.start_step(db, step_id, task_id):
        return
    try:
        with db.session() as session:
            step = session.get(RunStep, step_id)
            assert step is not None
            run = step.run
            reply, why = compose_for_run(session, settings, run)
            if reply is None:
                result: dict[str, Any] = {"reply": None, "why": why}
            else:
                row, new = enqueue(session, reply, settings.report)
                session.flush()
                result = {"reply": row.id, "message_id": row.message_id, "kind": row.kind,
                          "state": row.state, "new": new, "why": why}
    except Exception as exc:  # noqa: BLE001 - recorded on the row; the worker lives on
        steps.finish_step(db, step_id, ok=False, error=f"{exc.__class__.__name__}: {exc}",
                          log=traceback.format_exc())
        return
    steps.finish_step(db, step_id, ok=True, result=result)


def compose_for_run(session: sa.orm.Session, settings: Settings,
                    run: Run) -> tuple[ComposedReply | None, str]:
    """The reply a finished review run calls for, or None and why none."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    if series_stopped(session, version.series_id):
        return None, "#lorelab stop was said for this series: no replies about it"
    by_name = {s.name: s for s in run.steps}
    apply, base, patched = by_name["apply"], by_name["build-base"], by_name["build-patched"]
    parent = parent_message(answered_message(version))
    series = series_info(version, status_url=_status_url(settings, version))
    options = reply_options(settings.report)
    tree = _tree_info(settings, run, apply)
    if apply.state != "done" or not apply.result.get("applied", True):
        failed = apply.result.get("failed_patch")
        if not failed or not apply.result.get("conflicts") and not apply.result.get("base"):
            return None, f"not applied, and not for a conflict: {apply.error}"
        index, subject = _failed_patch(version, failed)
        ctx = ApplyFailureContext(
            parent=parent, series=series, tree=tree, failing_patch=index,
            failing_subject=subject,
            conflicts=tuple(c["path"] for c in apply.result.get("conflicts", [])),
            reproduce=_reproduce(version, run))
        return compose_apply_failure(ctx, options), "the series does not apply"
    if base.state != "done" or not base.result.get("ok"):
        return None, "the base does not build: not the series' fault"
    if patched.state != "done" or not patched.result.get("ok"):
        ctx_build = BuildFailureContext(
            parent=parent, series=series, tree=tree, build=_build_info(settings, base.result),
            log=patched.log_excerpt, reproduce=_reproduce(version, run))
        return compose_build_failure(ctx_build, options), "the patched tree does not build"
    bench = by_name["bench"]
    if bench.state != "done":
        return None, f"the benchmarks did not run: {bench.error}"
    campaigns = list(session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == run.id,
                                                                 LabCampaign.state == "done")
                                     .order_by(LabCampaign.id)))
    results = tuple(judge_campaign(c, make_benchmark(c.benchmark, **c.parameters))
                    for c in campaigns)
    measured = [s for s in campaigns[0].samples if not s.warmup]
    host = find_host(settings.lab_hosts, run.runner)
    ctx_bench = BenchmarkReplyContext(
        parent=parent, series=series, tree=tree,
        machine=_machine(host, measured[0].accel if measured else "none"),
        build=_build_info(settings, base.result),
        policy=campaign_policy(campaigns[0], measured),
        benchmarks=results,
        reproduce=_reproduce(version, run))
    return compose_benchmark_reply(ctx_bench, options), "benchmarked"


def _status_url(settings: Settings, version: SeriesVersion) -> str:
    base = settings.web.base_url
    return f"{base.rstrip('/')}/series/{version.series_id}" if base else ""


def _tree_info(settings: Settings, run: Run, apply: RunStep) -> TreeInfo:
    tree = next((t for t in settings.trees if t.name == run.tree), None)
    # A tree named by its path (lorelab review --tree) is shown by its directory's name.
    shown = tree.remote if tree and tree.remote else Path(run.tree).name
    return TreeInfo(tree=shown,
                    branch=apply.result.get("base_branch")
                    or (tree.fallback_branch if tree else _checked_out(run.tree)),
                    base=run.base_commit or apply.result.get("base") or "",
                    head=run.patched_commit or "",
                    base_source=run.base_reason or "")


def _checked_out(path: str) -> str:
    try:
        return tree_at(path).fallback_branch
    except ValueError:
        return ""


def _failed_patch(version: SeriesVersion, failed: object) -> tuple[int, str]:
    """(1-based index, subject) of the patch git am stopped at (its subject as git named it)."""
    text = str(failed)
    for patch in version.patches:
        if str(patch.index) == text or patch.message.title in text or text in patch.message.subject:
            return patch.index, patch.message.subject
    return 1, text


def _build_info(settings: Settings, build: dict[str, Any]) -> BuildInfo:
    config = settings.build.base_config
    names = [Path(config).name, *(Path(f).stem for f in settings.build.fragments)]
    record: dict[str, Any] = {}
    artifacts = build.get("artifact_dir")
    if artifacts and (Path(artifacts) / "build.json").exists():
        record = json.loads((Path(artifacts) / "build.json").read_text())
    return BuildInfo(config_name="+".join(names), config_hash=str(record.get("config", ""))[:12],
                     compiler=str(record.get("compiler", "")))


def _machine(host: LabHostSettings, accel: str) -> Machine:
    """The machine the samples came from: this worker's CPU (a guest runs on it), with the
    guest's memory for a qemu host; an ssh host is described by its name alone."""
    model, memory = platform.processor() or platform.machine(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) // (1024 * 1024)} GiB"
                break
    except OSError:
        pass
    if host.runner == "qemu":
        memory = f"{host.memory_mb} MiB"
    elif host.runner == "ssh":
        model, memory = f"lab machine {host.address}", ""
    return Machine(cpu=model, cores=host.cpus, memory=memory, boot=BOOTS.get(accel, accel),
                   host=host.name)


def _reproduce(version: SeriesVersion, run: Run) -> tuple[str, ...]:
    lines = [f"b4 am {version.anchor_msgid}"]
    if run.base_commit:
        lines.append(f"git checkout {run.base_commit[:12]} && git am ./*.mbx")
    lines.append(f"lorelab review {version.anchor_msgid} --tree PATH")
    return tuple(lines)
