"""Reply context from stored rows: the message answered, the series, and the reply options.

The composers read only plain dataclasses (bot.report.compose.inputs); this is where the
stages that ask for a reply (the report step, the command handler) turn ORM rows into them.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session, object_session

from bot.config.report import ReportSettings
from bot.db.models import Message, Run, SeriesVersion, utcnow
from bot.mail.subject import version_label
from bot.report.compose.inputs import (
    ParentMessage,
    Person,
    ReplyOptions,
    ResentPatch,
    SeriesInfo,
)
from bot.report.compose.reproduce import apply_lines, raw_apply_lines
from bot.runs.records import ApplyRecord

LORE = "https://lore.kernel.org/r/"


def parent_message(message: Message) -> ParentMessage:
    """The stored message as the message a reply answers (To and Cc from its raw headers)."""
    headers = email.message_from_bytes(message.raw, policy=email.policy.compat32)

    def people(name: str) -> tuple[Person, ...]:
        values = [str(v) for v in headers.get_all(name, [])]
        return tuple(Person(n, a) for n, a in email.utils.getaddresses(values) if a)

    to, cc = people("To"), people("Cc")
    return ParentMessage(
        msgid=message.sent_msgid,
        subject=message.subject,
        sender=Person(message.from_name, message.from_email),
        to=to,
        cc=cc,
        references=tuple(message.references or ()),
        lists=_list_addresses(message, (*to, *cc)),
        date=message.date,
    )


def _list_addresses(message: Message, recipients: tuple[Person, ...]) -> tuple[str, ...]:
    """The lists' addresses: configured ones, else the recipient whose address is the List-Id
    with its "@" as a dot (linux-mm@kvack.org for <linux-mm.kvack.org>), as lists name it."""
    found = {lst.address for lst in message.lists if lst.address}
    list_id = (message.list_id_header or "").strip().strip("<>").lower()
    for person in recipients:
        if list_id and person.key.replace("@", ".") == list_id:
            found.add(person.email)
    return tuple(sorted(found))


def answered_message(version: SeriesVersion) -> Message:
    """What a series reply answers: the cover letter, else patch 1."""
    message = version.first_message
    if message is None:
        raise ValueError(f"series version {version.id} has no messages")
    return message


def patches_applied_by(run: Run) -> tuple[str, ...]:
    """The Message-IDs of the patches `run` applied (a follow-up's: its review's), as its apply
    step recorded them; empty for a record written before they were kept."""
    session = object_session(run)
    parent = (session.get(Run, run.parent_run_id)
              if session is not None and run.parent_run_id is not None else None)
    for owner in (run, parent):
        step = next((s for s in owner.steps if s.name == "apply"), None) if owner else None
        if step is not None:
            return ApplyRecord.from_step(step).patches
    return ()


def fetch_lines(version: SeriesVersion, base: str, tested: Sequence[str] = ()) -> list[str]:
    """How a reader gets a stored version's patches onto `base`: `b4 am` of its first message
    (with `--no-parent` when every patch applied is in that message's subthread; a partial
    reroll's patches of the version it rerolls seldom are) when a dry run of that line on the
    stored thread gives exactly those patches, else each patch's raw mail from lore: where b4
    reads the thread otherwise, lore has parts in threads of their own (lorelab joins
    numbered parts sent with no threading headers), or other stored mails carry a Message-ID of
    them too (then with a comment saying which mail to keep). Each mail by the id it carries.
    `tested`: the patches the run applied (`patches_applied_by`), which a correction sent since
    may have replaced in the version."""
    from bot.series.mbox import b4_am_revision  # imports b4: only where a reply is composed

    first = answered_message(version)
    session = object_session(version)
    assert session is not None, "a stored version"
    applied = [p.message for p in version.applied_patches]
    if tested and [m.msgid for m in applied] != list(tested):
        stored = {m.msgid: m for m in session.scalars(
            sa.select(Message).where(Message.msgid.in_(tested)))}
        if all(msgid in stored for msgid in tested):
            applied = [stored[msgid] for msgid in tested]
    top = first.sent_msgid
    own = all(m is first or m.in_reply_to == top or top in (m.references or ()) for m in applied)
    msgids = [m.sent_msgid for m in applied]
    shared = _carriers(session, [top, *msgids])
    if shared:
        # b4 and lore's raw mail give every mail under such an id: say which one was applied
        return raw_apply_lines(msgids, base, _copy_notes(applied, shared))
    thread = session.scalars(sa.select(Message.raw).where(
        Message.thread_id == first.thread_id).order_by(Message.id)  # arrival: lore's order
    ) if first.thread_id is not None else []
    revision = b4_am_revision(thread, top, msgids, noparent=own)
    if revision is None:
        return raw_apply_lines(msgids, base)
    return apply_lines(top, revision, base, own_subthread=own)


def _carriers(session: Session, msgids: Sequence[str]) -> dict[str, int]:
    """Of these Message-IDs, those more than one stored mail carries, with how many do."""
    counts: dict[str, int] = {}
    for claimed in session.scalars(sa.select(Message.claimed_msgid).where(
            Message.claimed_msgid.in_(msgids))):
        counts[claimed] = counts.get(claimed, 1) + 1  # the first stored, and this copy
    return counts


def _copy_notes(applied: Sequence[Message], shared: dict[str, int]) -> dict[int, str]:
    """For each patch whose Message-ID other mails carry too, by number: which one to keep."""
    return {n: f"the one from {m.from_email}"
               + (f" dated {m.date:%Y-%m-%d %H:%M:%S} UTC" if m.date else "")
               + f" ({shared[m.sent_msgid]} mails carry it)"
            for n, m in enumerate(applied, 1) if m.sent_msgid in shared}


def series_info(version: SeriesVersion, status_url: str = "",
                run_id: int | None = None) -> SeriesInfo:
    return SeriesInfo(
        title=version.title,
        version=version.version,
        patches=version.expected,
        lore_url=f"{LORE}{answered_message(version).sent_msgid}",
        status_url=status_url,
        series_version_id=version.id,
        anchor_msgid=version.anchor_msgid,
        run_id=run_id,
        label=version_label(version.version, version.prefixes),
        resent=_resent(version, run_id),
    )


def _resent(version: SeriesVersion, run_id: int | None) -> tuple[ResentPatch, ...]:
    """The patches review run `run_id` applied in place of the copies the version's review run
    before it applied (a correction sent in between; bot.runs.corrections)."""
    session = object_session(version)
    run = session.get(Run, run_id) if session is not None and run_id is not None else None
    if run is None or run.kind != "review" or not (tested := patches_applied_by(run)):
        return ()
    earlier = session.scalars(sa.select(Run).where(  # type: ignore[union-attr]
        Run.series_version_id == version.id, Run.kind == "review", Run.parent_run_id.is_(None),
        Run.id < run.id).order_by(Run.id.desc()))
    before = next(((r.id, applied) for r in earlier if (applied := patches_applied_by(r))), None)
    if before is None:
        return ()
    changed = [(i, msgid) for i, msgid in enumerate(tested, 1)
               if i > len(before[1]) or before[1][i - 1] != msgid]
    sent = {m.msgid: m for m in session.scalars(  # type: ignore[union-attr]
        sa.select(Message).where(Message.msgid.in_([m for _, m in changed])))} if changed else {}
    return tuple(ResentPatch(i, sent[msgid].sent_msgid, sent[msgid].date, before[0])
                 for i, msgid in changed if msgid in sent)


def reply_options(report: ReportSettings) -> ReplyOptions:
    """How the bot signs and addresses replies, dated now (the date is part of the bytes)."""
    return ReplyOptions(identity=report.identity(), date=utcnow().replace(microsecond=0),
                        opt_out=tuple(report.opt_out), cc_cap=report.cc_cap)
