"""What the replies of a run that got as far as its builds or benchmarks say about it, read
from the database: the tree, the build, the machine, how to reproduce, the author's claims, and
the whole benchmark reply's content (`benchmark_context`).

The review's reply (workers/report_step.py) and the follow-up replies that show the same tables
(workers/follow_up_replies/) read them here, so that each says the same true things the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bot.analysis.claims import analyse_message
from bot.analysis.claims.input import read_message_text
from bot.benchmarks.registry import benchmark as make_benchmark
from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings, configured_hosts
from bot.db.models import LabCampaign, Message, Run, SeriesVersion
from bot.report.compose.campaign import campaign_policy, judge_campaign, stored_judgement
from bot.report.compose.claim_view import claim_from_judged
from bot.report.compose.from_db import (
    answered_message,
    fetch_lines,
    parent_message,
    patches_applied_by,
    series_info,
)
from bot.report.compose.inputs import TreeInfo
from bot.report.compose.machine_facts import machine_from_facts
from bot.report.compose.reproduce import (
    BenchmarkCommand,
    ConfigRecipe,
    bench_lines,
    build_lines,
)
from bot.report.compose.results import BenchmarkReplyContext, BuildInfo, ClaimQuote, Machine
from bot.runs.base import tree_at
from bot.runs.findings import run_campaigns
from bot.runs.records import ApplyRecord, BuildRecord


def benchmark_context(session: sa.orm.Session, settings: Settings, run: Run,
                      outcome: str) -> BenchmarkReplyContext:
    """The benchmark reply's content for a run whose campaigns finished: each judged, the
    machine they ran on, the build, the author's claims, how to reproduce. `outcome` is the
    run's (bot.runs.outcome's label)."""
    version = session.get(SeriesVersion, run.series_version_id)
    assert version is not None
    by_name = {s.name: s for s in run.steps}
    base = BuildRecord.from_step(by_name["build-base"])
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
    return BenchmarkReplyContext(
        parent=parent_message(answered_message(version)),
        series=series_info(version, status_url=status_url(settings, version), run_id=run.id),
        tree=tree_info(settings, run, ApplyRecord.from_step(by_name["apply"])),
        machine=machine_of(host, campaigns[0], measured[0].accel if measured else "none"),
        build=build_info(settings, base, run),
        policy=campaign_policy(campaigns[0], measured),
        benchmarks=results,
        outcome=outcome,
        claims=author_claims(answered_message(version)),
        reproduce=(*reproduce_lines(version, run, settings, base),
                   *bench_lines([bench_command(c, host) for c in campaigns],
                                booted=campaigns[0].runner != "local")))


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


def status_url(settings: Settings, version: SeriesVersion) -> str:
    base = settings.web.base_url
    return f"{base.rstrip('/')}/series/{version.series_id}" if base else ""


def tree_info(settings: Settings, run: Run, apply: ApplyRecord) -> TreeInfo:
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


def build_info(settings: Settings, build: BuildRecord, run: Run) -> BuildInfo:
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


def reproduce_lines(version: SeriesVersion, run: Run, settings: Settings,
               base: BuildRecord) -> tuple[str, ...]:
    """Apply and build, as lorelab did, without lorelab."""
    return (*fetch_lines(version, run.base_commit or "", patches_applied_by(run)),
            *build_steps(run, settings, base))


def build_steps(run: Run, settings: Settings, base: BuildRecord) -> list[str]:
    """The build half of `reproduce_lines`: the config as lorelab made it, and make."""
    recipe = ConfigRecipe(url=_config_url(settings, run), base=settings.build.base_config,
                          fragments=tuple(str(f) for f in settings.build.fragment_files()),
                          sha256=_config_sha256(base))
    return build_lines(recipe, settings.build.targets)


def bench_command(campaign: LabCampaign, host: LabHostSettings) -> BenchmarkCommand:
    """The benchmark's command line as the lab ran it, and how often per kernel."""
    definition = make_benchmark(campaign.benchmark, **campaign.parameters)
    argv = definition.argv(kernel="{kernel}", scratch="/tmp/lorelab-scratch")
    boots = len({s.pair_index for s in campaign.samples if not s.warmup})
    return BenchmarkCommand(argv=tuple(argv), runs=boots * host.iterations,
                            memcg_max=definition.memcg_max,
                            build=str(definition.extra.get("build", "")))


def machine_of(host: LabHostSettings, campaign: LabCampaign, accel: str) -> Machine:
    """The machine the samples came from, as the job read it there (workers/lab/machine.py):
    the guest for a qemu host, the lab machine for an ssh host, this host for a local one."""
    recorded = campaign.machine or {}
    facts: dict[str, Any] = recorded.get("A") or recorded.get("B") or {}
    return machine_from_facts(facts, host=campaign.host, runner=str(facts.get("runner")
                                                                   or campaign.runner),
                              accel=accel, cores=host.cpus)
