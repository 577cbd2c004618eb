"""Reply context from stored rows: the message answered, the series, and the reply options.

The composers read only plain dataclasses (bot.report.compose.inputs); this is where the
stages that ask for a reply (the report step, the command handler) turn ORM rows into them.
"""

from __future__ import annotations

import email
import email.policy
import email.utils

from bot.config.report import ReportSettings
from bot.db.models import Message, SeriesVersion, utcnow
from bot.report.compose.inputs import ParentMessage, Person, ReplyOptions, SeriesInfo
from bot.report.compose.reproduce import apply_lines, raw_apply_lines

LORE = "https://lore.kernel.org/r/"


def parent_message(message: Message) -> ParentMessage:
    """The stored message as the message a reply answers (To and Cc from its raw headers)."""
    headers = email.message_from_bytes(message.raw, policy=email.policy.compat32)

    def people(name: str) -> tuple[Person, ...]:
        values = [str(v) for v in headers.get_all(name, [])]
        return tuple(Person(n, a) for n, a in email.utils.getaddresses(values) if a)

    to, cc = people("To"), people("Cc")
    return ParentMessage(
        msgid=message.msgid,
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


def fetch_lines(version: SeriesVersion, base: str) -> list[str]:
    """How a reader gets a stored version's patches onto `base`: `b4 am` of its first message,
    which reads only that message's subthread when every patch applied is in it (a partial
    reroll's patches of the version it rerolls seldom are); each patch's raw mail when some
    are in another thread on lore, which threads by References only (lorelab joins numbered
    parts sent with no threading headers; 16 of cgroups' 3,190 versions)."""
    first = answered_message(version)
    parts = [p.message for p in version.applied_patches]
    if not all(_related(m) & _related(first) for m in parts):
        return raw_apply_lines([m.msgid for m in parts], base)
    own = all(m is first or m.in_reply_to == first.msgid or first.msgid in (m.references or ())
              for m in parts)
    return apply_lines(first.msgid, _b4_revision(first.subject), base, own_subthread=own)


def _b4_revision(subject: str) -> int:
    """The revision b4 reads in `subject`, which its `-v` must name: mostly lorelab's version,
    but b4 reads `[PATCH -v3]` as 1 (bot.mail.subject as 3)."""
    import b4  # costly to import (see bot.mail.subject): only where a reply is composed

    return b4.LoreSubject(subject).revision


def _related(message: Message) -> set[str]:
    """The message-ids that put `message` in a thread: its own and those it replies to."""
    return {message.msgid, *(message.references or ()), *filter(None, [message.in_reply_to])}


def series_info(version: SeriesVersion, status_url: str = "",
                run_id: int | None = None) -> SeriesInfo:
    return SeriesInfo(
        title=version.title,
        version=version.version,
        patches=version.expected,
        lore_url=f"{LORE}{answered_message(version).msgid}",
        status_url=status_url,
        series_version_id=version.id,
        anchor_msgid=version.anchor_msgid,
        run_id=run_id,
    )


def reply_options(report: ReportSettings) -> ReplyOptions:
    """How the bot signs and addresses replies, dated now (the date is part of the bytes)."""
    return ReplyOptions(identity=report.identity(), date=utcnow().replace(microsecond=0),
                        opt_out=tuple(report.opt_out), cc_cap=report.cc_cap)
