"""Read-side queries of the status site: plain dataclasses shared by the pages and the JSON API.

Nothing here writes. The front page shows one row per series: its latest version and the
series' latest run (by id), with the state of each stage of that run (apply, build, bench,
report) and of the newest reply the bot wrote for the run's version. The series page adds every
version, run, step, campaign and reply; each review run lists its follow-ups (bot.runs.follow_ups:
kind, state, outcome, reply) and each follow-up names the review it follows. Lab campaign
results are shown as stored by the bench step (`LabCampaign.result`); `verdict_rows` reads them
for the verdict tables.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa
from pydantic import PlainSerializer
from sqlalchemy.orm import Session, selectinload

from bot.config import Settings
from bot.config.lab_hosts import configured_hosts, queue_names
from bot.db.models import (
    LabCampaign,
    LabSample,
    MailingList,
    Message,
    MessageList,
    OutboxReply,
    Patch,
    Run,
    RunStep,
    Series,
    SeriesVersion,
    iso_utc,
)
from bot.runs.outcome import decide, main_verdicts
from bot.runs.records import ApplyRecord, ReportRecord
from bot.series.views import STAGES as STAGES  # the status page's columns (app.py)
from bot.series.views import Stage, series_views
from bot.web.queues import queue_lengths

RUN_STATES = ("queued", "running", "done", "failed", "cancelled", "superseded")
NEVER_RUN = "none"  # the state filter's value for series no run was made for
ACTIVE_CAMPAIGN_STATES = ("queued", "running")



# A time as the JSON API writes it: the CLI's format, ISO 8601 with `T` and `+00:00` (not
# pydantic's `Z`), so one format is used everywhere (README.md, "JSON shapes").
When = Annotated[dt.datetime, PlainSerializer(iso_utc, return_type=str, when_used="json")]


@dataclass
class SeriesFilter:
    """The front page's filters; empty strings match everything."""

    list_name: str = ""
    state: str = ""  # a run state, or NEVER_RUN
    author: str = ""  # a substring of the author's name or address, any case


@dataclass
class SeriesRow:
    """A series as `/api/series` lists it: the shape of `lorelab series list --json`, which
    bot.series.views.series_views builds for both (README.md, "JSON shapes")."""

    id: int
    title: str
    author: dict[str, str]  # name, email
    change_id: str | None
    lists: list[str]
    latest_version: int | None
    updated: str | None  # ISO 8601 with the offset
    versions: list[dict[str, Any]]  # bot.series.views.version_dict, without patches
    author_name: str
    author_email: str
    complete: bool  # the latest version has every patch
    received: int
    expected: int
    run_id: int | None  # the series' latest run, on whichever version
    run_version: int | None
    run_kind: str | None
    run_state: str | None
    stages: list[Stage]
    url: str

    @classmethod
    def from_view(cls, view: dict[str, Any]) -> SeriesRow:
        return cls(**{**view, "stages": [Stage(**stage) for stage in view["stages"]]})


@dataclass
class StepView:
    name: str
    state: str
    host: str | None
    attempts: int
    queued_at: When
    started_at: When | None
    finished_at: When | None
    seconds: float | None
    error: str | None
    result: dict[str, Any]
    log_excerpt: str


@dataclass
class SampleView:
    metric: str
    value: float
    unit: str
    kernel: str  # "A" (base) or "B" (patched)
    pair_index: int
    position: int
    # The place in the campaign's run order: arms * pair_index + position, where a campaign
    # has 2 arms (A and B in pairs) or 3 (A, B and C in triples: a compare follow-up).
    slot: int
    host: str
    boot_id: str
    accel: str
    time: When
    warmup: bool


@dataclass
class CampaignView:
    id: int
    run_id: int | None  # None: asked for with `lorelab bench`
    benchmark: str
    parameters: dict[str, Any]
    kernel_a: str
    kernel_b: str
    kernel_c: str | None  # a compare follow-up's third kernel (the reviewer's alternative)
    arm: str | None  # what kernel B is within a follow-up: "prefix 2/4", "aligned"
    host: str
    runner: str
    seed: int
    warmup_pairs: int
    k_min: int
    k_max: int
    orders: list[str]
    state: str
    error: str | None
    # As the bench step stores it: {"pairs", "stopped_early", "metrics": [{"metric", "unit",
    # "secondary", "direction", "verdict", "words", "change_pct", "ci_pct", "p", "base",
    # "patched", "findings", "notes"}]}
    result: dict[str, Any]
    created_at: When
    started_at: When | None
    finished_at: When | None
    url: str
    samples: list[SampleView] | None = None  # None: not included in this answer


@dataclass
class ReplyRef:
    """The reply a run wrote: enough to find it on the series page and in the outbox."""

    id: int
    kind: str
    state: str
    message_id: str


@dataclass
class FollowUpView:
    """A follow-up of a review run (bot.runs.follow_ups), as its review lists it."""

    id: int
    kind: str  # bisect, align, compare, experiment
    state: str
    outcome: str
    why: str
    trigger: str
    options: dict[str, Any]
    benchmarks: list[str]
    reply: ReplyRef | None
    url: str


@dataclass
class RunView:
    id: int
    kind: str
    state: str
    tree: str
    trigger: str
    benchmarks: list[str]
    runner: str | None
    series_version_id: int
    series_id: int | None
    version: int | None
    title: str | None
    requested_base: str | None
    base_commit: str | None
    base_reason: str | None
    patched_commit: str | None
    created_at: When
    updated_at: When
    steps: list[StepView]
    campaigns: list[CampaignView]
    url: str
    outcome: str = ""  # what the run found (bot.runs.outcome): "regression", "does not apply"
    why: str = ""
    parent_run_id: int | None = None  # a follow-up: the review run it follows
    options: dict[str, Any] = field(default_factory=dict)  # a follow-up: what it was asked for
    reply: ReplyRef | None = None  # the reply this run wrote, if any
    follow_ups: list[FollowUpView] = field(default_factory=list)  # a review's, oldest first
    # The patches its apply step applied, in order, by the Message-IDs their mails carry (a
    # correction sent since may have replaced one in the version: bot.runs.corrections).
    patches: list[str] = field(default_factory=list)


@dataclass
class ReplyView:
    id: int
    kind: str
    state: str
    reason: str | None
    subject: str
    message_id: str
    series_version_id: int | None
    author: str
    lists: list[str]
    decided_by: str | None
    created_at: When
    sent_at: When | None
    message: str  # the reply exactly as it is (or was) sent
    text: str  # as a reader sees it: the main headers and the decoded body


@dataclass
class SeriesDetail:
    series: dict[str, Any]  # the stable shape of `lorelab series show --json`
    runs: list[RunView]  # newest first, every version
    replies: list[ReplyView]  # newest first, every version


@dataclass
class QueueView:
    name: str
    length: int | None  # None: not known (eager mode, or the broker did not answer)
    note: str  # what the length means, or why it is not known


@dataclass
class HostView:
    name: str
    runner: str
    cpus: int
    memory_mb: int
    accel: str
    address: str
    queue: QueueView
    campaigns: list[CampaignView]  # running or queued on this host


@dataclass
class HostsView:
    broker: str  # the broker without credentials, or "" in eager mode
    hosts: list[HostView]
    queues: list[QueueView]  # every queue: git, build and one per lab host
    recent_campaigns: list[CampaignView] = field(default_factory=list)


@dataclass
class SideStats:
    n: int | None
    median: float | None
    robust_cv: float | None


@dataclass
class MetricVerdict:
    """One row of a verdict table, read from a campaign's stored result."""

    metric: str
    unit: str
    secondary: bool
    direction: str
    verdict: str
    words: str
    change_pct: float | None
    ci_pct: tuple[float, float] | None
    p: float | None
    base: SideStats
    patched: SideStats
    findings: list[str]
    notes: list[str]


# ---------------------------------------------------------------------------------------------
# The front page


def list_names(session: Session) -> list[str]:
    return sorted(session.scalars(sa.select(MailingList.name)))


def _filtered(filters: SeriesFilter) -> sa.Select[tuple[Series]]:
    query = sa.select(Series)
    if filters.author:
        needle = filters.author.lower()
        query = query.where(sa.or_(
            sa.func.lower(Series.author_name).contains(needle, autoescape=True),
            sa.func.lower(Series.author_email).contains(needle, autoescape=True),
        ))
    if filters.list_name:
        on_list = (
            sa.select(Patch.id)
            .join(SeriesVersion, SeriesVersion.id == Patch.series_version_id)
            .join(MessageList, MessageList.message_id == Patch.message_id)
            .join(MailingList, MailingList.id == MessageList.list_id)
            .where(SeriesVersion.series_id == Series.id, MailingList.name == filters.list_name)
        )
        query = query.where(on_list.exists())
    if filters.state:
        latest_run = (
            sa.select(sa.func.max(Run.id))
            .join(SeriesVersion, SeriesVersion.id == Run.series_version_id)
            .where(SeriesVersion.series_id == Series.id, Run.parent_run_id.is_(None))
            .correlate(Series)  # also from inside the state's subquery below
            .scalar_subquery()
        )
        if filters.state == NEVER_RUN:
            query = query.where(latest_run.is_(None))
        else:
            state = sa.select(Run.state).where(Run.id == latest_run).scalar_subquery()
            query = query.where(state == filters.state)
    return query


def series_rows(session: Session, filters: SeriesFilter, *, limit: int = 50, offset: int = 0,
                base_url: str = "") -> list[SeriesRow]:
    """The series that pass `filters`, the one with the newest mail first, in the shape of
    `lorelab series list --json` (bot.series.views.series_views builds both)."""
    query = _filtered(filters).order_by(Series.last_mail_at.desc(), Series.id.desc())
    ids = list(session.scalars(query.with_only_columns(Series.id).limit(limit).offset(offset)))
    return [SeriesRow.from_view(view)
            for view in series_views(session, ids, with_patches=False, site_url=base_url)]


# ---------------------------------------------------------------------------------------------
# A series, a run, a campaign


def _seconds(step: RunStep) -> float | None:
    if step.started_at and step.finished_at:
        return round((step.finished_at - step.started_at).total_seconds(), 3)
    return None


def step_view(step: RunStep) -> StepView:
    return StepView(
        name=step.name, state=step.state, host=step.host, attempts=step.attempts,
        queued_at=step.queued_at, started_at=step.started_at, finished_at=step.finished_at,
        seconds=_seconds(step), error=step.error, result=dict(step.result or {}),
        log_excerpt=step.log_excerpt,
    )


def sample_view(sample: LabSample, arms: int = 2) -> SampleView:
    return SampleView(
        metric=sample.metric, value=sample.value, unit=sample.unit, kernel=sample.kernel,
        pair_index=sample.pair_index, position=sample.position,
        slot=arms * sample.pair_index + sample.position, host=sample.host, boot_id=sample.boot_id,
        accel=sample.accel, time=sample.time, warmup=sample.warmup,
    )


def campaign_view(campaign: LabCampaign, *, with_samples: bool = False,
                  base_url: str = "") -> CampaignView:
    return CampaignView(
        id=campaign.id, run_id=campaign.run_id, benchmark=campaign.benchmark,
        parameters=dict(campaign.parameters or {}), kernel_a=campaign.kernel_a,
        kernel_b=campaign.kernel_b, kernel_c=campaign.kernel_c, arm=campaign.arm,
        host=campaign.host, runner=campaign.runner,
        seed=campaign.seed, warmup_pairs=campaign.warmup_pairs, k_min=campaign.k_min,
        k_max=campaign.k_max, orders=list(campaign.orders or []), state=campaign.state,
        error=campaign.error, result=dict(campaign.result or {}),
        created_at=campaign.created_at, started_at=campaign.started_at,
        finished_at=campaign.finished_at, url=f"{base_url}/campaigns/{campaign.id}",
        samples=[sample_view(s, _arms(campaign.kernel_c)) for s in campaign.samples]
        if with_samples else None,
    )


def _reply_id(run: Run) -> int | None:
    report = next((s for s in run.steps if s.name == "report"), None)
    return ReportRecord.from_step(report).reply if report is not None else None


def _replies_of(session: Session, runs: list[Run]) -> dict[int, ReplyRef]:
    """The reply each run wrote, by run id (runs that wrote none are left out)."""
    wanted = {reply_id: run.id for run in runs if (reply_id := _reply_id(run)) is not None}
    found = {}
    for row in session.scalars(sa.select(OutboxReply).where(OutboxReply.id.in_(wanted))):
        found[wanted[row.id]] = ReplyRef(row.id, row.kind, row.state, row.message_id)
    return found


def _run_views(session: Session, runs: list[Run], versions: dict[int, SeriesVersion],
               base_url: str) -> list[RunView]:
    """Views of `runs` (in their order), each review with its follow-ups among `runs`."""
    campaigns = _campaigns_of(session, [r.id for r in runs])
    replies = _replies_of(session, runs)
    views = [_run_view(r, versions.get(r.series_version_id), campaigns[r.id], base_url,
                       replies.get(r.id)) for r in runs]
    applied = {r.id: ApplyRecord.from_step(next((s for s in r.steps if s.name == "apply"),
                                                None)).patches for r in runs}
    wanted = {m for patches in applied.values() for m in patches}
    sent = {msgid: claimed or msgid for msgid, claimed in session.execute(
        sa.select(Message.msgid, Message.claimed_msgid).where(Message.msgid.in_(wanted))
    )} if wanted else {}
    for view in views:
        view.patches = [sent.get(m, m) for m in applied[view.id]]
    by_id = {view.id: view for view in views}
    for view in sorted(views, key=lambda v: v.id):
        parent = by_id.get(view.parent_run_id) if view.parent_run_id is not None else None
        if parent is not None:
            parent.follow_ups.append(FollowUpView(
                id=view.id, kind=view.kind, state=view.state, outcome=view.outcome,
                why=view.why, trigger=view.trigger, options=view.options,
                benchmarks=view.benchmarks, reply=view.reply, url=view.url))
    return views


def _run_view(run: Run, version: SeriesVersion | None, campaigns: list[LabCampaign],
              base_url: str, reply: ReplyRef | None = None) -> RunView:
    found = decide(run.kind, run.state, {s.name: s for s in run.steps}, main_verdicts(campaigns))
    return RunView(
        outcome=found.label, why=found.why, parent_run_id=run.parent_run_id,
        options=dict(run.options or {}), reply=reply,
        id=run.id, kind=run.kind, state=run.state, tree=run.tree, trigger=run.trigger,
        benchmarks=list(run.benchmarks or []), runner=run.runner,
        series_version_id=run.series_version_id,
        series_id=version.series_id if version else None,
        version=version.version if version else None, title=version.title if version else None,
        requested_base=run.requested_base, base_commit=run.base_commit,
        base_reason=run.base_reason, patched_commit=run.patched_commit,
        created_at=run.created_at, updated_at=run.updated_at,
        steps=[step_view(s) for s in run.steps],
        campaigns=[campaign_view(c, base_url=base_url) for c in campaigns],
        url=f"{base_url}/runs/{run.id}",
    )


def _campaigns_of(session: Session, run_ids: list[int]) -> dict[int, list[LabCampaign]]:
    by_run: dict[int, list[LabCampaign]] = {i: [] for i in run_ids}
    for campaign in session.scalars(
        sa.select(LabCampaign).where(LabCampaign.run_id.in_(run_ids)).order_by(LabCampaign.id)
    ):
        assert campaign.run_id is not None
        by_run[campaign.run_id].append(campaign)
    return by_run


def reply_view(reply: OutboxReply) -> ReplyView:
    return ReplyView(
        id=reply.id, kind=reply.kind, state=reply.state, reason=reply.reason,
        subject=reply.subject, message_id=reply.message_id,
        series_version_id=reply.series_version_id, author=reply.author,
        lists=list(reply.lists or []), decided_by=reply.decided_by,
        created_at=reply.created_at, sent_at=reply.sent_at,
        message=reply.raw.decode("utf-8", "replace"), text=readable(reply.raw),
    )


_SHOWN_HEADERS = ("From", "To", "Cc", "Subject", "Date", "Message-ID", "In-Reply-To")


def readable(raw: bytes) -> str:
    """A mail as a mail reader shows it: the main headers, then the plain-text body decoded
    (quoted-printable and base64 undone)."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    lines = [f"{name}: {message[name]}" for name in _SHOWN_HEADERS if message[name] is not None]
    body = message.get_body(preferencelist=("plain",))
    text = body.get_content() if isinstance(body, EmailMessage) else ""
    return "\n".join(lines) + "\n\n" + text


def series_detail(session: Session, series_id: int, *, base_url: str = "") -> SeriesDetail | None:
    """Everything about one series, or None when there is no such series."""
    series = session.get(Series, series_id)
    if series is None:
        return None
    versions = {v.id: v for v in series.versions}
    runs = list(session.scalars(
        sa.select(Run).where(Run.series_version_id.in_(versions))
        .options(selectinload(Run.steps)).order_by(Run.id.desc())
    ))
    replies = session.scalars(
        sa.select(OutboxReply).where(OutboxReply.series_version_id.in_(versions))
        .order_by(OutboxReply.id.desc())
    )
    return SeriesDetail(
        series=series_views(session, [series.id])[0],
        runs=_run_views(session, runs, versions, base_url),
        replies=[reply_view(r) for r in replies],
    )


def run_detail(session: Session, run_id: int, *, base_url: str = "") -> RunView | None:
    """A run with its steps, campaigns, reply and, for a review, its follow-ups."""
    run = session.get(Run, run_id)
    if run is None:
        return None
    version = session.get(SeriesVersion, run.series_version_id)
    children = list(session.scalars(sa.select(Run).where(Run.parent_run_id == run.id)
                                    .options(selectinload(Run.steps)).order_by(Run.id)))
    versions = {version.id: version} if version is not None else {}
    return _run_views(session, [run, *children], versions, base_url)[0]


def campaign_detail(session: Session, campaign_id: int, *,
                    base_url: str = "") -> CampaignView | None:
    """A campaign with its raw samples, or None when there is no such campaign."""
    campaign = session.get(LabCampaign, campaign_id)
    if campaign is None:
        return None
    return campaign_view(campaign, with_samples=True, base_url=base_url)


def samples_of(session: Session, campaign_ids: list[int]) -> dict[int, list[SampleView]]:
    """The raw samples of several campaigns, in the order they were stored."""
    by_campaign: dict[int, list[SampleView]] = {i: [] for i in campaign_ids}
    for sample, kernel_c in session.execute(
        sa.select(LabSample, LabCampaign.kernel_c)
        .join(LabCampaign, LabCampaign.id == LabSample.campaign_id)
        .where(LabSample.campaign_id.in_(campaign_ids)).order_by(LabSample.id)
    ):
        by_campaign[sample.campaign_id].append(sample_view(sample, _arms(kernel_c)))
    return by_campaign


def _arms(kernel_c: str | None) -> int:
    """How many kernels a campaign's rounds boot: pairs, or triples with a third kernel."""
    return 2 if kernel_c is None else 3


def reply_version(session: Session, reply: OutboxReply) -> tuple[int, int, int] | None:
    """(series id, version number, version id) a reply was written about, if it names one."""
    if reply.series_version_id is None:
        return None
    row = session.execute(
        sa.select(SeriesVersion.series_id, SeriesVersion.version, SeriesVersion.id)
        .where(SeriesVersion.id == reply.series_version_id)
    ).first()
    return (row[0], row[1], row[2]) if row else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _side(value: Any) -> SideStats:
    value = value if isinstance(value, dict) else {}
    n = value.get("n")
    return SideStats(n=n if isinstance(n, int) else None, median=_number(value.get("median")),
                     robust_cv=_number(value.get("robust_cv")))


def verdict_rows(result: dict[str, Any]) -> list[MetricVerdict]:
    """The verdict table of a campaign's stored result, main metrics first; a metric the bench
    step left partly written shows what it has."""
    rows = []
    for entry in result.get("metrics") or []:
        if not isinstance(entry, dict) or "metric" not in entry:
            continue
        ci = entry.get("ci_pct")
        interval = None
        if isinstance(ci, list | tuple) and len(ci) == 2 and all(
                isinstance(x, int | float) for x in ci):
            interval = (float(ci[0]), float(ci[1]))
        rows.append(MetricVerdict(
            metric=str(entry["metric"]), unit=str(entry.get("unit") or ""),
            secondary=bool(entry.get("secondary")), direction=str(entry.get("direction") or ""),
            verdict=str(entry.get("verdict") or "not judged"), words=str(entry.get("words") or ""),
            change_pct=_number(entry.get("change_pct")), ci_pct=interval,
            p=_number(entry.get("p")), base=_side(entry.get("base")),
            patched=_side(entry.get("patched")),
            findings=[str(f) for f in entry.get("findings") or []],
            notes=[str(n) for n in entry.get("notes") or []],
        ))
    return sorted(rows, key=lambda row: row.secondary)


# ---------------------------------------------------------------------------------------------
# Lab hosts and queues


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def lab_hosts(session: Session, settings: Settings, *, base_url: str = "") -> HostsView:
    """Every lab host with its queue and the campaigns running or waiting on it, every queue's
    length (from Redis when the broker is Redis), and the most recent campaigns."""
    hosts = configured_hosts(settings.lab_hosts)
    names = queue_names(settings.lab_hosts)
    lengths = queue_lengths(settings.celery.broker_url, names)
    queues = {name: QueueView(name, *lengths[name]) for name in names}
    active: dict[str, list[LabCampaign]] = {}
    for campaign in session.scalars(
        sa.select(LabCampaign).where(LabCampaign.state.in_(ACTIVE_CAMPAIGN_STATES))
        .order_by(LabCampaign.id)
    ):
        active.setdefault(campaign.host, []).append(campaign)
    recent = session.scalars(sa.select(LabCampaign).order_by(LabCampaign.id.desc()).limit(20))
    return HostsView(
        broker=_without_credentials(settings.celery.broker_url)
        if settings.celery.broker_url else "",
        hosts=[HostView(
            name=h.name, runner=h.runner, cpus=h.cpus, memory_mb=h.memory_mb, accel=h.accel,
            address=h.address, queue=queues[h.queue_name],
            campaigns=[campaign_view(c, base_url=base_url) for c in active.get(h.name, [])],
        ) for h in hosts],
        queues=list(queues.values()),
        recent_campaigns=[campaign_view(c, base_url=base_url) for c in recent],
    )

