"""The main job: review one thread end to end (fetch, assemble, apply, build, bench, reply).

`lorelab review` and `lorelab demo` call `review_thread`; the automatic pipeline reaches the
same run steps through Celery. The thread comes from a local mbox, a lore URL, or a message-id
looked up on the configured lore base. What the run found is `bot.runs.outcome.decide`'s; its
exit status is what the command reports. The review's report step queues the follow-ups its
result calls for (bot.runs.follow_ups); `run_follow_ups` runs them (`lorelab review
--follow-ups`), else the next round of `lorelab run` sends them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import sqlalchemy as sa

from bot.benchmarks.spec import from_spec
from bot.config import Settings
from bot.config.lab_hosts import find_host
from bot.config.sections import TreeSettings
from bot.db.models import Message, Patch, Run, SeriesVersion
from bot.db.session import Database
from bot.ingest.sources import RawMail, iter_mbox
from bot.ingest.store import IngestSummary, ingest
from bot.mail import parse_message
from bot.runs.findings import Headline, headline, run_campaigns, run_reply
from bot.runs.lifecycle import PlanError, create_run, find_tree
from bot.runs.outcome import RunOutcome, outcome_of
from bot.runs.states import FINISHED, StepState
from bot.runs.suites import suite_for
from bot.runs.taskqueue import dispatch, send_run

DEFAULT_LORE = "https://lore.kernel.org/all"
_LORE_URL = re.compile(r"^(https?://[^/]+(?:/[^/]+)?)/([^/]+@[^/]+)(?:/.*)?$")

class ReviewError(ValueError):
    """A thread or tree that cannot be reviewed; the text says what to do."""


@dataclass
class ReviewOutcome:
    run_id: int
    series_version_id: int
    title: str
    version: int
    state: str  # the run's state
    outcome: RunOutcome
    reply: bytes | None  # this run's reply as stored in the outbox (sent or waiting)
    reply_state: str | None
    reply_notes: list[str] = field(default_factory=list)  # earlier replies to this version
    headline: list[Headline] = field(default_factory=list)  # main metrics' changes
    ingest: IngestSummary = field(default_factory=IngestSummary)
    steps: list[dict[str, Any]] = field(default_factory=list)
    kind: str = "review"  # or a follow-up's kind (bot.runs.lifecycle.FOLLOW_UPS)
    follow_ups: list[int] = field(default_factory=list)  # run ids of a review's follow-ups

    @property
    def verdict_class(self) -> str:
        """What the run found, in words: "improvement", "does not apply", ..."""
        return self.outcome.label

    @property
    def exit_code(self) -> int:
        code = self.outcome.exit_code
        if code is None:  # a finished review run always has one (bot.runs.outcome)
            raise ValueError(f"run {self.run_id} has not finished: {self.outcome.why}")
        return code


def thread_mails(ref: str, lore_base: str = DEFAULT_LORE) -> tuple[list[RawMail], str | None]:
    """The thread's mails and the message-id asked for (None for a whole mbox file)."""
    path = Path(ref)
    if path.exists():
        return list(iter_mbox(path)), None
    from bot.ingest.http import FetchError
    from bot.ingest.lore import LoreSource

    match = _LORE_URL.match(ref)
    if match:
        base, msgid = match[1], unquote(match[2])
    elif "@" in ref and "/" not in ref:
        base, msgid = lore_base, ref.strip().strip("<>")
    else:
        raise ReviewError(f"{ref!r} is neither a file, a lore URL nor a message-id")
    try:
        raws = LoreSource(base, None).thread(msgid)
    except FetchError as exc:
        raise ReviewError(f"cannot fetch the thread of <{msgid}> from {base}: {exc}; check the "
                          "URL (or [ingest] lore_url) and that the archive answers") from None
    if not raws:
        raise ReviewError(f"{base} has no thread with <{msgid}>")
    return [RawMail(raw, f"lore:{base}/{msgid}#{i}") for i, raw in enumerate(raws, 1)], msgid


def tree_for(settings: Settings, path: str | None) -> TreeSettings:
    """The configured tree at `path`, or one named by the path (bot.runs.lifecycle.find_tree)."""
    try:
        return find_tree(settings, path)
    except PlanError as exc:
        raise ReviewError(str(exc)) from None


def find_version(session: sa.orm.Session, msgids: Iterable[str],
                 asked: str | None) -> SeriesVersion:
    """The series version to review: the one holding `asked`, else the newest complete one
    among the thread's messages."""
    wanted = [asked] if asked else list(msgids)
    rows = session.scalars(
        sa.select(SeriesVersion).join(Patch, Patch.series_version_id == SeriesVersion.id)
        .join(Message, Message.id == Patch.message_id).where(Message.msgid.in_(wanted))
    ).unique().all()
    if not rows and asked:
        rows = session.scalars(sa.select(SeriesVersion).where(
            SeriesVersion.anchor_msgid == asked)).all()
        if rows:  # the cover letter: take the newest version of its series
            rows = list(rows[0].series.versions)
    complete = [v for v in rows if v.complete]
    if not complete:
        raise ReviewError("no complete patch series in that thread"
                          + (f" ({len(rows)} incomplete)" if rows else ""))
    return max(complete, key=lambda v: (v.version, v.id))


def review_thread(db: Database, settings: Settings, ref: str, *, tree_path: str | None,
                  benchmarks: list[str] | None = None, runner: str | None = None,
                  base: str | None = None,
                  on_ingested: Callable[[IngestSummary, str], None] | None = None
                  ) -> ReviewOutcome:
    """Fetch and ingest the thread, then apply, build, bench and report it as one run.

    With the embedded default (no broker) every step runs here, now; with a broker the steps go
    to the workers and this waits for the run to finish."""
    try:  # a typo should cost nothing: checked before anything is fetched or built
        find_host(settings.lab_hosts, runner)
        for spec in benchmarks or []:
            from_spec(spec)
    except ValueError as exc:
        raise ReviewError(str(exc)) from None
    mails, asked = thread_mails(ref, settings.ingest.lore_url or DEFAULT_LORE)
    tree = tree_for(settings, tree_path)
    summary = ingest(db, mails, settings=settings.ingest, known_lists=settings.lists)
    # As ingest names them (a mail without a Message-ID gets its deterministic one).
    msgids = [parse_message(m.data).msgid for m in mails]
    with db.session() as session:
        version = find_version(session, msgids, asked)
        if not benchmarks:  # the suite watching the touched files says what to run
            suite = suite_for(settings.suites, version.touched_files)
            benchmarks = list(suite.benchmarks) if suite else []
        run = create_run(session, version, kind="review", tree=tree.name, base=base,
                         benchmarks=benchmarks, runner=runner, trigger="cli")
        run_id, title, number = run.id, version.title, version.version
    if on_ingested is not None:
        on_ingested(summary, f"{title} (v{number})")
    with db.session() as session:
        dispatch(session.get(Run, run_id), settings)  # type: ignore[arg-type]
    if settings.celery.broker_url:
        wait_for_run(db, run_id, timeout=_run_time_limit(settings))
    outcome = run_outcome(db, run_id)
    outcome.ingest = summary
    return outcome


def _run_time_limit(settings: Settings) -> float:
    """The longest a run's steps may take: every step's time limit."""
    celery = settings.celery
    return (3 * celery.build_time_limit + celery.bench_time_limit
            + 3 * celery.apply_time_limit)


def run_follow_ups(db: Database, settings: Settings, review_id: int,
                   on_start: Callable[[int, str], None] | None = None) -> list[ReviewOutcome]:
    """Send the follow-ups the review run queued and wait for each (on the embedded default
    they run here, now, one after the other); what each found, and its reply. `on_start`
    hears (run id, kind) as each is sent."""
    with db.session() as session:
        children = [(run.id, run.kind) for run in session.scalars(
            sa.select(Run).where(Run.parent_run_id == review_id).order_by(Run.id))]
    outcomes = []
    for run_id, kind in children:
        if on_start is not None:
            on_start(run_id, kind)
        if send_run(db, settings, run_id) and settings.celery.broker_url:
            wait_for_run(db, run_id, timeout=_run_time_limit(settings))
        outcomes.append(run_outcome(db, run_id))
    return outcomes


def wait_for_run(db: Database, run_id: int, timeout: float, poll: float = 0.5) -> None:
    """Until the workers finish the run; ReviewError after `timeout` seconds (every step's
    time limit: a run that is not done by then waits for a worker that is not there)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with db.session() as session:
            run = session.get(Run, run_id)
            assert run is not None
            if run.state in FINISHED and all(s.state != StepState.RUNNING for s in run.steps):
                return
        time.sleep(poll)
    raise ReviewError(f"run {run_id} did not finish in {timeout:.0f} s: are workers serving "
                      f"its queues? `lorelab runs show {run_id}` shows where it stands")


def run_outcome(db: Database, run_id: int) -> ReviewOutcome:
    """What a finished review run found, and its reply."""
    with db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        version = session.get(SeriesVersion, run.series_version_id)
        assert version is not None
        found = run_reply(session, run)
        row = found.reply
        campaigns = run_campaigns(session, run)
        return ReviewOutcome(
            run_id=run.id, series_version_id=version.id, title=version.title,
            version=version.version, state=run.state,
            outcome=outcome_of(session, run, campaigns),
            reply=bytes(row.raw) if row else None, reply_state=row.state if row else None,
            reply_notes=found.notes(), headline=headline(campaigns), kind=run.kind,
            follow_ups=list(session.scalars(sa.select(Run.id).where(Run.parent_run_id == run.id)
                                            .order_by(Run.id))),
            steps=[{"name": s.name, "state": s.state, "error": s.error,
                    "seconds": (s.finished_at - s.started_at).total_seconds()
                    if s.finished_at and s.started_at else None} for s in run.steps])
