"""Acting on `#lorelab` commands in stored mail: the I/O edge of the email command language.

For each stored reply that holds command lines (bot.commands.language), in date order, in one
transaction per mail:
1. the series version it is about: the nearest of its References (the mail it answers first)
   that is a patch, a cover letter or a posting's anchor, else the newest version in its thread;
2. for each command, in line order: the sender's rate limit (bot.commands.policy, counting the
   sender's `CommandRequest` rows in the window), then whether it was understood, then whether
   the sender may run it (the series author; the M:/R: people of the tree's MAINTAINERS for the
   files the version touches who are on the thread; the allow-list);
3. a `CommandRequest` row, unique per (mail, line): a mail handled twice, or by two processes
   at once, is acted on once;
4. the action: `test` makes a review run, `retest` repeats the version's latest review run (or
   makes one), `stop` cancels the version's unfinished runs; runs are created, not dispatched:
   the caller sends `CommandOutcome.run_ids` to the workers after the commit;
5. the answer, composed with bot.report.compose.command_reply and stored in the outbox.

Mail from the bot itself, mail marked Auto-Submitted (RFC 3834), patches and cover letters, and
mail dated more than `max_age_hours` ago (a backfill) are not read for commands.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.benchmarks.registry import BENCHMARKS
from bot.commands.language import HELP, Command, parse_commands
from bot.commands.maintainers import Maintainers, read_maintainers
from bot.commands.policy import (
    PastRequest,
    RateDecision,
    Requester,
    may_run,
    on_allow_list,
    rate_decision,
    who_may,
)
from bot.config import Settings
from bot.config.sections import CommandSettings
from bot.db.models import CommandRequest, Message, Patch, Run, SeriesVersion, utcnow
from bot.db.session import Database
from bot.mail import parse_message
from bot.report.compose.command_reply import CommandAnswer, compose_command_reply
from bot.report.compose.from_db import parent_message, reply_options
from bot.report.compose.inputs import ParentMessage
from bot.report.deliver.outbox import enqueue
from bot.runs.lifecycle import cancel_run, create_run, find_tree, retest_run
from bot.runs.planner import planned_tree
from bot.runs.states import FINISHED
from bot.runs.suites import suite_for

# Messages that are postings, not replies to them: never read for commands.
NOT_REPLIES = ("patch", "cover", "pull-request")
_CHUNK = 500  # message ids per query

# request states (CommandRequest.state), by outcome
_STATES = {"queued": "accepted", "stopped": "accepted", "help": "answered",
           "not-understood": "answered", "refused": "refused", "limited": "limited"}


@dataclass(frozen=True)
class CommandOutcome:
    """What one command line led to. `run_ids`: runs made, for the caller to dispatch."""

    message_id: str
    line: int
    sender: str
    command: str  # test, retest, stop, help, or unknown
    outcome: str  # queued, stopped, help, not-understood, refused, limited
    detail: str
    series_version_id: int | None
    request_id: int
    run_ids: tuple[int, ...] = ()
    outbox_id: int | None = None  # the stored answer; None when not answered

    def to_dict(self) -> dict[str, Any]:
        """`lorelab commands scan --json`: one of these per command."""
        return {**dataclasses.asdict(self), "run_ids": list(self.run_ids)}


def handle_command_mails(db: Database, settings: Settings, message_ids: Sequence[str], *,
                         now: dt.datetime | None = None) -> list[CommandOutcome]:
    """Act on the commands in the stored messages `message_ids` (without angle brackets)
    not acted on before; the outcomes of those acted on now. `now`: the clock (tests)."""
    if not settings.commands.enabled:
        return []
    now = now or utcnow()
    handler = _Handler(settings, now)
    outcomes: list[CommandOutcome] = []
    for message_id, commands in _mails_with_commands(db, settings, message_ids, now):
        with db.session() as session:
            message = session.scalar(sa.select(Message).where(Message.msgid == message_id))
            assert message is not None
            outcomes += handler.handle_mail(session, message, commands)
    return outcomes


def _mails_with_commands(db: Database, settings: Settings, message_ids: Sequence[str],
                         now: dt.datetime) -> Iterator[tuple[str, list[Command]]]:
    """(message id, its commands) for each reply holding any, oldest first."""
    oldest = now - dt.timedelta(hours=settings.commands.max_age_hours)
    bot_address = settings.report.identity().sender.key
    benchmarks = sorted(BENCHMARKS)
    found: list[tuple[dt.datetime, int, str, list[Command]]] = []
    for start in range(0, len(message_ids), _CHUNK):
        chunk = list(dict.fromkeys(message_ids[start : start + _CHUNK]))
        with db.session() as session:
            rows = session.execute(
                sa.select(Message.id, Message.msgid, Message.date, Message.raw)
                .where(Message.msgid.in_(chunk), Message.kind.not_in(NOT_REPLIES),
                       Message.in_reply_to.is_not(None), Message.from_email != bot_address,
                       sa.or_(Message.date.is_(None), Message.date >= oldest))
            ).all()
        for row_id, msgid, date, raw in rows:
            # Cheap test first: base64 is the only transfer encoding that can hide the word.
            lowered = raw.lower()
            if b"#lorelab" not in lowered and b"base64" not in lowered:
                continue
            if _auto_submitted(raw):
                continue
            commands = parse_commands(parse_message(raw).body, benchmarks)
            if commands:
                found.append((date or now, row_id, msgid, commands))
    for _, _, msgid, commands in sorted(found, key=lambda item: (item[0], item[1])):
        yield msgid, commands


def _auto_submitted(raw: bytes) -> bool:
    value = BytesHeaderParser().parsebytes(raw).get("Auto-Submitted", "no")
    return str(value).strip().lower() != "no"


class _Handler:
    """The settings and caches one `handle_command_mails` call shares between mails."""

    def __init__(self, settings: Settings, now: dt.datetime) -> None:
        self.settings = settings
        self.now = now
        self._maintainers: dict[str, Maintainers] = {}  # by tree name

    def maintainers(self, session: Session, version: SeriesVersion) -> Maintainers:
        """The MAINTAINERS of the tree the version is tested on (none without a tree)."""
        if not self.settings.trees:
            return Maintainers([])
        tree = find_tree(self.settings, planned_tree(session, self.settings, version))
        if tree.name not in self._maintainers:
            self._maintainers[tree.name] = read_maintainers(Path(tree.path) / "MAINTAINERS")
        return self._maintainers[tree.name]

    def handle_mail(self, session: Session, message: Message,
                    commands: list[Command]) -> list[CommandOutcome]:
        done = set(session.scalars(sa.select(CommandRequest.line)
                                   .where(CommandRequest.message_id == message.msgid)))
        todo = [c for c in commands if c.line not in done]
        if not todo:
            return []
        version = find_version(session, message)
        parent = parent_message(message)
        # Who the sender is to the series matters only to commands that need permission.
        judged = any(c.understood and c.name in ("test", "retest", "stop") for c in todo)
        requester = self.requester(session, message, parent, version if judged else None)
        outcomes = []
        for command in todo:
            first = command.line == commands[0].line
            outcome = self.handle(session, message, parent, version, requester, command, first)
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    def requester(self, session: Session, message: Message, parent: ParentMessage,
                  version: SeriesVersion | None) -> Requester:
        """The sender as author, maintainer, allow-listed; only the address without `version`."""
        sender = parent.sender.key
        allow_listed = on_allow_list(sender, self.settings.commands.allow_list)
        if version is None:
            return Requester(sender, allow_listed=allow_listed)
        if sender == version.author_email.strip().lower():
            return Requester(sender, author=True, allow_listed=allow_listed)
        maintainers = self.maintainers(session, version).maintainers_for(version.touched_files)
        maintainer = (sender in maintainers
                      and sender in thread_addresses(session, message, version))
        return Requester(sender, maintainer=maintainer, allow_listed=allow_listed)

    def handle(self, session: Session, message: Message, parent: ParentMessage,
               version: SeriesVersion | None, requester: Requester, command: Command,
               first: bool) -> CommandOutcome | None:
        """One command: decided, recorded, done and answered; None when another process
        recorded it first. `first`: the mail's first command, whose answer keys on the mail
        alone (the others' on the mail and their line)."""
        settings = self.settings.commands
        past = session.execute(
            sa.select(CommandRequest.created_at, CommandRequest.state, CommandRequest.outbox_id)
            .where(CommandRequest.sender == requester.address,
                   CommandRequest.created_at > self.now - dt.timedelta(
                       minutes=settings.window_minutes))
        ).all()
        rate = rate_decision([PastRequest(at, state == "limited", outbox_id is not None)
                              for at, state, outbox_id in past], self.now, settings)
        outcome, detail, problems = decide(command, rate, version, requester, settings)
        answer = rate.answer
        request = CommandRequest(
            message_id=message.msgid, line=command.line, sender=requester.address,
            command=command.name, arguments=command.arguments,
            series_version_id=version.id if version else None,
            state=_STATES.get(outcome, "accepted"), reason=detail or None, created_at=self.now)
        try:
            with session.begin_nested():
                session.add(request)
        except IntegrityError:  # recorded by a concurrent handler in between
            return None
        run_ids: tuple[int, ...] = ()
        queue_position = None
        if not outcome:
            assert version is not None
            outcome, detail, run_ids, queue_position = self.act(session, version, command,
                                                                requester.address)
            request.state = _STATES[outcome]
            request.reason = detail
            request.run_id = run_ids[0] if run_ids else None
        outbox_id = None
        if answer:
            reply = compose_command_reply(CommandAnswer(
                parent=parent, command=command.text, outcome=outcome, detail=detail,
                queue_position=queue_position,
                status_url=self.status_url(version) if outcome == "queued" else "",
                problems=problems, commands=HELP if outcome == "help" else (),
                series_version_id=version.id if version else None,
                line=None if first else command.line,
            ), reply_options(self.settings.report))
            row, _ = enqueue(session, reply, self.settings.report)
            outbox_id = request.outbox_id = row.id
        session.flush()
        return CommandOutcome(
            message_id=message.msgid, line=command.line, sender=requester.address,
            command=command.name, outcome=outcome, detail=detail or "; ".join(problems),
            series_version_id=version.id if version else None, request_id=request.id,
            run_ids=run_ids, outbox_id=outbox_id)

    def act(self, session: Session, version: SeriesVersion, command: Command,
            sender: str) -> tuple[str, str, tuple[int, ...], int | None]:
        """Do an allowed test, retest or stop: (outcome, detail, runs made, queue position)."""
        runs = list(session.scalars(sa.select(Run).where(Run.series_version_id == version.id)
                                    .order_by(Run.id)))
        if command.name == "stop":
            stopped = [run for run in runs if cancel_run(session, run)]
            if not stopped:
                return "stopped", f"nothing was queued or running for v{version.version}", (), None
            what = ", ".join(f"run {run.id} ({run.kind} on {run.tree})" for run in stopped)
            return "stopped", f"{what}, of v{version.version}", (), None
        if not version.complete:
            return "refused", (f"v{version.version} of this series is incomplete "
                               f"({version.received} of {version.expected} patches have "
                               "arrived); lorelab tests it once all have. Nothing was queued."
                               ), (), None
        latest = next((run for run in reversed(runs) if run.kind == "review"), None)
        if command.name == "retest" and latest is not None:
            wanted = _Wanted(latest.tree, list(latest.benchmarks or ()), latest.requested_base)
        elif not self.settings.trees:
            return "refused", ("lorelab cannot test this series: no kernel tree is configured. "
                               "Nothing was queued."), (), None
        else:
            suite = suite_for(self.settings.suites, version.touched_files)
            wanted = _Wanted(planned_tree(session, self.settings, version),
                             list(command.benchmarks) or (suite.benchmarks if suite else []),
                             command.base, (suite.lab_host or None) if suite else None)
        # Two people asking for the same test get one run.
        same = next((run for run in runs if run.kind == "review" and run.state not in FINISHED
                     and wanted.is_like(run)), None)
        if same is not None:
            detail = f"{describe_run(same, version)} (asked for already: run {same.id})"
            return "queued", detail, (), queue_position(session, same)
        trigger = f"email:{sender}"
        if command.name == "retest" and latest is not None:
            run = retest_run(session, latest, trigger=trigger)
        else:
            run = create_run(session, version, kind="review", tree=wanted.tree,
                             base=wanted.base, benchmarks=list(wanted.benchmarks),
                             runner=wanted.runner, trigger=trigger)
        return "queued", describe_run(run, version), (run.id,), queue_position(session, run)

    def status_url(self, version: SeriesVersion | None) -> str:
        base = self.settings.web.base_url
        return f"{base.rstrip('/')}/series/{version.series_id}" if base and version else ""


@dataclass(frozen=True)
class _Wanted:
    """The review run a test or retest asks for."""

    tree: str
    benchmarks: list[str]
    base: str | None
    runner: str | None = None  # the suite's lab host

    def is_like(self, run: Run) -> bool:
        return (run.tree, list(run.benchmarks or ()), run.requested_base) == (
            self.tree, list(self.benchmarks), self.base)


def decide(command: Command, rate: RateDecision, version: SeriesVersion | None,
           requester: Requester, settings: CommandSettings) -> tuple[str, str, tuple[str, ...]]:
    """(outcome, detail, problems) of a command before anything is done; outcome "" when it
    is to be done (the action decides its outcome)."""
    if not rate.allowed:
        assert rate.retry_at is not None
        return "limited", (
            f"lorelab takes at most {settings.rate_limit} commands from one sender in "
            f"{settings.window_minutes} minutes, so it did not act on this one. The next is "
            f"taken from {rate.retry_at:%Y-%m-%d %H:%M} UTC; until then further commands are "
            "not answered."), ()
    if not command.understood:
        return "not-understood", "", command.problems
    if command.name == "help":
        return "help", "", ()
    if version is None:
        return "not-understood", "", ("this mail does not answer a patch series lorelab knows "
                                      "(reply to a patch or to the cover letter)",)
    if not may_run(command.name, requester):
        return "refused", f"{who_may(command.name)} Nothing was done.", ()
    return "", "", ()


def queue_position(session: Session, run: Run) -> int | None:
    """1 when no queued review run was asked for before it; None once it is running."""
    if run.state != "queued":
        return None
    ahead = session.scalar(sa.select(sa.func.count(Run.id)).where(
        Run.kind == "review", Run.state == "queued", Run.id < run.id))
    return (ahead or 0) + 1


def describe_run(run: Run, version: SeriesVersion) -> str:
    """E.g. 'hackbench on "mm/vmscan: ..." v2, tree mm, against its base'."""
    what = ", ".join(run.benchmarks or ()) or "the build"
    base = f"against {run.requested_base}" if run.requested_base else "against its base"
    return f'{what} on "{version.title}" v{version.version}, tree {run.tree}, {base}'


def find_version(session: Session, message: Message) -> SeriesVersion | None:
    """The series version a reply is about: the nearest posting among its References, else
    the newest version in its thread."""
    references = [r for r in (message.references or ()) if r]
    if message.in_reply_to and message.in_reply_to not in references:
        references.append(message.in_reply_to)
    if references:
        by_msgid: dict[str, int] = {}
        rows = [
            *session.execute(sa.select(Message.msgid, Patch.series_version_id)
                             .join(Patch, Patch.message_id == Message.id)
                             .where(Message.msgid.in_(references))),
            *session.execute(sa.select(Message.msgid, SeriesVersion.id)
                             .join(SeriesVersion, SeriesVersion.cover_message_id == Message.id)
                             .where(Message.msgid.in_(references))),
            *session.execute(sa.select(SeriesVersion.anchor_msgid, SeriesVersion.id)
                             .where(SeriesVersion.anchor_msgid.in_(references))),
        ]
        for msgid, version_id in rows:
            by_msgid.setdefault(msgid, version_id)
        for msgid in reversed(references):  # the mail it answers first, then up the thread
            if msgid in by_msgid:
                return session.get(SeriesVersion, by_msgid[msgid])
    if message.thread_id is None:
        return None
    return session.scalar(sa.select(SeriesVersion)
                          .where(SeriesVersion.thread_id == message.thread_id)
                          .order_by(SeriesVersion.version.desc(), SeriesVersion.id.desc())
                          .limit(1))


def thread_addresses(session: Session, message: Message, version: SeriesVersion) -> set[str]:
    """Who is on the thread: To and Cc of the version's postings and of the mail answered."""
    messages = [patch.message for patch in version.patches]
    if version.cover is not None:
        messages.append(version.cover)
    if message.in_reply_to:
        answered = session.scalar(sa.select(Message).where(Message.msgid == message.in_reply_to))
        if answered is not None:
            messages.append(answered)
    addresses: set[str] = set()
    for posting in messages:
        parent = parent_message(posting)
        addresses |= {person.key for person in (*parent.to, *parent.cc)}
    return addresses

