"""Acting on `#lorelab` commands in stored mail: the I/O edge of the email command language.

For each stored reply that holds command lines (bot.commands.language, on the decoded body), in
date order, in one transaction per mail:
1. the series version it is about: the nearest of its References (the mail it answers first)
   that is a patch, a cover letter or a posting's anchor, else the newest version in its thread;
2. who vouches for its sender (bot.commands.authenticity): mail nobody vouches for is acted on
   in no way, and answered at most once per thread per day;
3. for each command, in line order: the sender's rate limit (bot.commands.policy, counting the
   sender's verified `CommandRequest` rows in the window), then whether it was understood, then
   whether the sender may run it (the series author; the M:/R: people of the tree's MAINTAINERS
   for the files the version touches who are on the thread; the allow-list);
4. a `CommandRequest` row, unique per (mail, line): a mail handled twice, or by two processes
   at once, is acted on once;
5. the action (bot.commands.actions): `test` and `retest` make or join a review run, `stop`
   cancels the version's unfinished runs, `bisect`, `compare`, `test ... align` and `test` in a
   reviewer's own inline diff make or join a follow-up of the latest review
   (bot.runs.follow_ups); the caller sends `CommandOutcome.run_ids` to the workers after the
   commit;
6. the answer, composed with bot.report.compose.command_reply and stored in the outbox, unless
   the same request was answered already (a joined run, a repeated help or stop: "collapsed"),
   or the thread or the series has had its answers for the window (bot.commands.answers).
A command that fails (a bug, a tree that cannot be read) is recorded as "failed" with the error
on its row, and the mails after it are handled.

Mail from the bot itself, mail marked Auto-Submitted (RFC 3834), patches and cover letters, and
mail dated more than `max_age_hours` ago (a backfill) are not read for commands.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.benchmarks.registry import BENCHMARKS
from bot.commands import answers
from bot.commands.actions import Action, act
from bot.commands.authenticity import Authenticity, verify_sender
from bot.commands.dkim_keys import key_records
from bot.commands.language import HELP, Command, parse_commands
from bot.commands.maintainers import Maintainers, read_maintainers
from bot.commands.policy import (
    ASKS_FOR_RUNS,
    UNVERIFIED_ANSWER_EVERY,
    PastRequest,
    RateDecision,
    Requester,
    answer_allowed,
    may_run,
    on_allow_list,
    rate_decision,
    who_may,
)
from bot.config import Settings
from bot.config.sections import CommandSettings
from bot.db.models import CommandRequest, Message, Patch, SeriesVersion, utcnow
from bot.db.session import Database
from bot.mail import parse_message
from bot.mail.automated import auto_submitted
from bot.report.compose.command_reply import CommandAnswer, compose_command_reply
from bot.report.compose.from_db import parent_message, reply_options
from bot.report.compose.inputs import ParentMessage
from bot.report.compose.message import NoRecipient
from bot.report.deliver.outbox import enqueue
from bot.runs.lifecycle import find_tree
from bot.runs.planner import planned_tree

log = logging.getLogger(__name__)

# The stored mail read for commands: replies, whatever their subject says (some clients drop
# the "Re:"), never postings (patches, cover letters, pull requests).
MAY_HOLD_COMMANDS = sa.and_(Message.in_reply_to.is_not(None),
                            Message.kind.not_in(("patch", "cover", "pull-request")))
_CHUNK = 500  # message ids per query
# Transfer encodings that can hide "#lorelab" in the raw bytes (`=23lorelab`, base64).
_ENCODINGS = (b"base64", b"quoted-printable")

# request states (CommandRequest.state), by outcome
_STATES = {"queued": "accepted", "stopped": "accepted", "help": "answered", "done": "answered",
           "not-understood": "answered", "refused": "refused", "limited": "limited",
           "unverified": "unverified", "failed": "failed"}


@dataclass(frozen=True)
class CommandOutcome:
    """What one command line led to. `run_ids`: runs made, for the caller to dispatch."""

    message_id: str
    line: int
    sender: str
    command: str  # test, retest, stop, bisect, compare, help, or unknown
    # queued, stopped, done, help, not-understood, refused, limited, unverified, failed
    outcome: str
    detail: str
    series_version_id: int | None
    request_id: int | None  # None: the failure could not be recorded either
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
    handler = _Handler(settings, now, key_records(settings.commands))
    outcomes: list[CommandOutcome] = []
    for message_id, commands in _mails_with_commands(db, settings, message_ids, now):
        try:
            with db.session() as session:
                message = session.scalar(sa.select(Message).where(Message.msgid == message_id))
                assert message is not None
                outcomes += handler.handle_mail(session, message, commands)
        except Exception as exc:  # noqa: BLE001 - one mail must not stop the others
            log.exception("commands in <%s> failed", message_id)
            outcomes += record_failure(db, message_id, commands, exc, now)
    return outcomes


def record_failure(db: Database, message_id: str, commands: Sequence[Command],
                   exc: Exception, now: dt.datetime) -> list[CommandOutcome]:
    """Each command of a mail whose handling failed, recorded as "failed" with the error, so
    that it is not tried again at every round; nothing when even that fails."""
    reason = f"{type(exc).__name__}: {exc}"[:2000]
    outcomes = []
    try:
        with db.session() as session:
            sender = session.scalar(sa.select(Message.from_email)
                                    .where(Message.msgid == message_id)) or ""
            done = set(session.scalars(sa.select(CommandRequest.line)
                                       .where(CommandRequest.message_id == message_id)))
            for command in commands:
                if command.line in done:
                    continue
                request = CommandRequest(
                    message_id=message_id, line=command.line, sender=sender,
                    command=command.name, arguments=command.arguments, state="failed",
                    reason=reason, created_at=now)
                session.add(request)
                session.flush()
                outcomes.append(CommandOutcome(message_id, command.line, sender, command.name,
                                               "failed", reason, None, request.id))
    except Exception:  # noqa: BLE001 - the database itself may be what failed
        log.exception("the failure of <%s> could not be recorded", message_id)
        return [CommandOutcome(message_id, c.line, "", c.name, "failed", reason, None, None)
                for c in commands]
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
                .where(Message.msgid.in_(chunk), MAY_HOLD_COMMANDS,
                       Message.from_email != bot_address,
                       sa.or_(Message.date.is_(None), Message.date >= oldest))
            ).all()
        for row_id, msgid, date, raw in rows:
            # Cheap test first: only a transfer encoding can hide the word from the raw bytes.
            lowered = raw.lower()
            if b"#lorelab" not in lowered and not any(e in lowered for e in _ENCODINGS):
                continue
            if _auto_submitted(raw):
                continue
            commands = parse_commands(parse_message(raw).body, benchmarks)
            if commands:
                found.append((date or now, row_id, msgid, commands))
    for _, _, msgid, commands in sorted(found, key=lambda item: (item[0], item[1])):
        yield msgid, commands


def _auto_submitted(raw: bytes) -> bool:
    value = BytesHeaderParser().parsebytes(raw).get("Auto-Submitted")
    return auto_submitted(None if value is None else str(value))


@dataclass
class _Mail:
    """One command mail and what its commands share."""

    message: Message
    parent: ParentMessage
    version: SeriesVersion | None
    authenticity: Authenticity
    requester: Requester | None = None  # worked out when a command first needs it


class _Handler:
    """The settings and caches one `handle_command_mails` call shares between mails."""

    def __init__(self, settings: Settings, now: dt.datetime,
                 dnsfunc: Callable[..., bytes | None]) -> None:
        self.settings = settings
        self.now = now
        self.window_start = now - dt.timedelta(minutes=settings.commands.window_minutes)
        self.dnsfunc = dnsfunc
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
        parent = parent_message(message)
        mail = _Mail(message, parent, find_version(session, message),
                     self.authenticity(message, parent))
        outcomes = []
        for command in todo:
            first = command.line == commands[0].line
            outcome = self.handle(session, mail, command, first)
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    def authenticity(self, message: Message, parent: ParentMessage) -> Authenticity:
        verdict = verify_sender(message.raw, lists=[lst.name for lst in message.lists],
                                settings=self.settings.commands, dnsfunc=self.dnsfunc)
        if verdict.verified and verdict.address != parent.sender.key:
            # A relay's mail (its signature vouches for the relay, not the author it names:
            # bot.mail.relayed), or a From lorelab's parser reads another way: trust neither.
            return Authenticity("", reason=f"it is vouched for as {verdict.address}, but "
                                f"lorelab reads its author as {parent.sender.key}")
        return verdict

    def requester(self, session: Session, mail: _Mail, judged: bool) -> Requester:
        """The sender as author, maintainer, allow-listed (worked out once per mail); only
        the address and the allow-list unless `judged` (a command that needs permission)."""
        if not judged:
            sender = mail.parent.sender.key
            return Requester(sender, allow_listed=on_allow_list(
                sender, self.settings.commands.allow_list))
        if mail.requester is None:
            mail.requester = self._requester(session, mail.message, mail.parent, mail.version)
        return mail.requester

    def _requester(self, session: Session, message: Message, parent: ParentMessage,
                   version: SeriesVersion | None) -> Requester:
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

    def rate(self, session: Session, sender: str) -> RateDecision:
        """The sender's rate limit, counting their verified commands in the window (forged
        mail must not use up someone else's commands)."""
        past = session.execute(
            sa.select(CommandRequest.created_at, CommandRequest.state, CommandRequest.outbox_id)
            .where(CommandRequest.sender == sender,
                   CommandRequest.state.not_in(("unverified", "failed")),
                   CommandRequest.created_at > self.window_start)
        ).all()
        return rate_decision([PastRequest(at, state == "limited", outbox_id is not None)
                              for at, state, outbox_id in past], self.now, self.settings.commands)

    def handle(self, session: Session, mail: _Mail, command: Command,
               first: bool) -> CommandOutcome | None:
        """One command: decided, recorded, done and answered; None when another process
        recorded it first. `first`: the mail's first command, whose answer keys on the mail
        alone (the others' on the mail and their line)."""
        message, version, authenticity = mail.message, mail.version, mail.authenticity
        verified = authenticity.verified
        # Who the sender is to the series matters only to commands that need permission.
        judged = verified and command.understood and command.name in (*ASKS_FOR_RUNS, "stop")
        requester = self.requester(session, mail, judged)
        rate = self.rate(session, requester.address) if verified else RateDecision(True, True)
        outcome, detail, problems = decide(command, rate, version, requester,
                                           self.settings.commands, authenticity)
        request = CommandRequest(
            message_id=message.msgid, line=command.line, sender=requester.address,
            command=command.name, arguments=command.arguments,
            series_version_id=version.id if version else None,
            state=_STATES.get(outcome, "accepted"), reason=detail or None, created_at=self.now,
            thread_id=message.thread_id, authenticated_by=authenticity.verified_by or None)
        try:
            with session.begin_nested():
                session.add(request)
        except IntegrityError:  # recorded by a concurrent handler in between
            return None
        action = Action(outcome, detail)
        if not outcome:
            assert version is not None
            action = act(session, self.settings, version, command, requester.address,
                         self.window_start, message)
            request.state = _STATES[action.outcome]
            request.reason = action.detail
            request.run_id = action.run_id
        elif outcome == "help" and answers.same_answered(
                session, self.window_start, command="help", arguments=[],
                series_version_id=version.id if version else None):
            action = Action(outcome, detail, collapsed=True)
        if action.collapsed:
            request.state = "collapsed"
        outbox_id = None
        if self.may_answer(session, mail, action, rate, first):
            outbox_id = request.outbox_id = self.answer(session, mail, command, action,
                                                        problems, first, request)
        session.flush()
        return CommandOutcome(
            message_id=message.msgid, line=command.line, sender=requester.address,
            command=command.name, outcome=action.outcome,
            detail=action.detail or "; ".join(problems),
            series_version_id=version.id if version else None, request_id=request.id,
            run_ids=action.run_ids, outbox_id=outbox_id)

    def answer(self, session: Session, mail: _Mail, command: Command, action: Action,
               problems: tuple[str, ...], first: bool, request: CommandRequest) -> int | None:
        """The answer stored in the outbox: its id; None when there is nobody to send it to
        (the request's reason says so)."""
        version = mail.version
        try:
            reply = compose_command_reply(CommandAnswer(
                parent=mail.parent, command=command.text,
                # the answer to unverified mail reads like a refusal: the detail says why
                outcome="refused" if action.outcome == "unverified" else action.outcome,
                detail=action.detail, queue_position=action.queue_position,
                status_url=self.status_url(version) if action.outcome == "queued" else "",
                problems=problems, commands=HELP if action.outcome == "help" else (),
                series_version_id=version.id if version else None,
                line=None if first else command.line,
            ), reply_options(self.settings.report))
        except NoRecipient as exc:  # done, and recorded, but there is no one to tell
            request.reason = f"{request.reason or ''} (not answered: {exc})".strip()
            return None
        row, _ = enqueue(session, reply, self.settings.report)
        return row.id

    def may_answer(self, session: Session, mail: _Mail, action: Action, rate: RateDecision,
                   first: bool) -> bool:
        """Whether this command gets an answer: not when the same was answered already, nor
        past the sender's, the thread's or the series' answers for the window, nor for more
        than one unverified mail a day on the thread."""
        if action.collapsed or not rate.answer:
            return False
        thread = {"thread_id": mail.message.thread_id, "message_id": mail.message.msgid}
        if action.outcome == "unverified" and (not first or answers.unverified_answered(
                session, self.now - UNVERIFIED_ANSWER_EVERY, **thread)):
            return False
        series_id = mail.version.series_id if mail.version else None
        on_thread, on_series = answers.answered(session, self.window_start, series_id=series_id,
                                                **thread)
        return answer_allowed(on_thread, on_series, self.settings.commands)

    def status_url(self, version: SeriesVersion | None) -> str:
        base = self.settings.web.base_url
        return f"{base.rstrip('/')}/series/{version.series_id}" if base and version else ""


def decide(command: Command, rate: RateDecision, version: SeriesVersion | None,
           requester: Requester, settings: CommandSettings,
           authenticity: Authenticity) -> tuple[str, str, tuple[str, ...]]:
    """(outcome, detail, problems) of a command before anything is done; outcome "" when it
    is to be done (the action decides its outcome)."""
    if not authenticity.verified:
        who = authenticity.address or "the sender its From field names"
        return "unverified", (
            f"lorelab cannot verify that this mail comes from {who}: {authenticity.reason}. "
            "lorelab acts on commands only in mail that a DKIM signature of the sender's domain, "
            "or the list's mail server, vouches for. Nothing was done. Further commands on "
            "this thread that cannot be verified are not answered for a day."), ()
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
    messages = [patch.message for patch in version.applied_patches]
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

