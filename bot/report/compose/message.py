"""What every reply shares: subject, threading headers, recipients, Message-ID, the message.

- Subject: "Re: " and the original subject without its own reply words (one "Re:").
- In-Reply-To: the parent; References: the parent's References, then the parent's Message-ID.
- To the author; Cc the lists first, then the parent's To and Cc, without the author, the bot
  and anyone opted out, capped (lists are never cut by the cap). Only addresses a header can
  carry are written (`ANSWERABLE`): when the author has none (`From: =?utf-8?q?a=40b?=` is a
  name, not an address), the reply goes to the first of the others, the lists first.
- Message-ID: derived from (reply kind, series version id, the version's anchor message-id), so
  composing the same reply again yields the same Message-ID and the outbox refuses a second
  copy. Command answers, which have no series version of their own, key on the command's
  message-id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from email import policy as email_policy
from email.headerregistry import Address
from email.message import EmailMessage

from bot.mail.subject import without_reply_words
from bot.report.compose.inputs import ParentMessage, Person, ReplyOptions
from bot.report.compose.text import Block, render_body
from bot.report.deliver.policy import OptOutList

# Headers folded at 78 columns with "\n" line ends (the stored form; SMTP converts to CRLF).
MAIL_POLICY = email_policy.default.clone(linesep="\n", max_line_length=78)

# An address a reply can be sent to: dot-atom local part, host-name domain, ASCII.
ANSWERABLE = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")


def reply_subject(original: str) -> str:
    """The reply's subject: "Re: " and the original without its reply prefixes or folding."""
    return "Re: " + without_reply_words(" ".join(_printable(original).split()))


def references_for(parent: ParentMessage) -> tuple[str, ...]:
    """The parent's References then the parent itself, each once, oldest first."""
    seen: dict[str, None] = {}
    for msgid in (*parent.references, parent.msgid):
        msgid = msgid.strip().strip("<>")
        if msgid:
            seen.setdefault(msgid, None)
    return tuple(seen)


def reply_message_id(domain: str, kind: str, series_version_id: int | None, anchor: str,
                     *, version: int | None = None, run_id: int | None = None) -> str:
    """The Message-ID (without brackets) of the reply of `kind` to one series version, made
    by run `run_id` (None for replies no run makes, such as command answers).

    The same run's reply always gets the same id (a repeated report step finds it stored); a
    new run of the same version (a retest) gets its own. The digest of the anchor keeps ids
    unique across databases (a restored or new database reuses row ids); the posted version
    number ("v2") and the run keep them readable in logs.
    """
    key = f"{kind}\0{series_version_id}\0{anchor}" + (f"\0{run_id}" if run_id is not None else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    parts = [kind]
    if version is not None:
        parts.append(f"v{version}")
    if run_id is not None:
        parts.append(f"r{run_id}")
    # Short enough that "Message-ID: <...>" stays on one line for domains up to 25 characters.
    return ".".join([*parts, digest]) + f"@{domain}"


def reply_recipients(
    parent: ParentMessage,
    author: Person,
    *,
    bot: Person,
    opt_out: OptOutList,
    cap: int,
) -> tuple[Person, ...]:
    """The Cc list: lists, then the parent's To and Cc, de-duplicated and capped."""
    skip = {author.key, bot.key}
    cc: dict[str, Person] = {}
    lists = [Person("", address) for address in parent.lists]
    people = [*parent.to, *parent.cc, parent.sender]
    for person in (*lists, *people):
        if (not ANSWERABLE.fullmatch(person.email) or person.key in skip or person.key in cc
                or person.key in opt_out):
            continue
        if len(cc) >= max(cap, len(lists)):
            break
        cc[person.key] = person
    return tuple(cc.values())


class NoRecipient(ValueError):
    """The message answered names nobody a reply can be sent to."""


@dataclass(frozen=True)
class ComposedReply:
    """A finished reply and what the outbox needs to know about it without parsing it."""

    message: EmailMessage
    kind: str
    series_version_id: int | None
    message_id: str  # without brackets
    author: str  # the To address
    lists: tuple[str, ...]  # list addresses among the recipients
    recipients: tuple[str, ...]  # every envelope recipient, To first
    body_blocks: tuple[Block, ...]  # the body as composed (tests check the widths per block)

    def as_bytes(self) -> bytes:
        return self.message.as_bytes(policy=MAIL_POLICY)


def compose_reply(
    *,
    kind: str,
    parent: ParentMessage,
    author: Person,
    options: ReplyOptions,
    blocks: Sequence[Block],
    series_version_id: int | None,
    anchor: str,
    version: int | None = None,
    run_id: int | None = None,
) -> ComposedReply:
    """The whole message: headers from the parent and options, the body from `blocks`."""
    identity = options.identity
    opt_out = OptOutList(options.opt_out)
    cc = reply_recipients(parent, author, bot=identity.sender, opt_out=opt_out, cap=options.cc_cap)
    if not ANSWERABLE.fullmatch(author.email):
        if not cc:
            raise NoRecipient(f"nobody to send the reply to <{parent.msgid}> to: its sender "
                             f"{author.formatted()!r} has no address, and it has no list")
        author, cc = cc[0], cc[1:]
    message_id = reply_message_id(identity.domain, kind, series_version_id, anchor,
                                  version=version, run_id=run_id)
    body = render_body(blocks, identity.signature_lines())

    message = EmailMessage(policy=MAIL_POLICY)
    message["From"] = _address(identity.sender)
    message["To"] = _address(author)
    if cc:
        message["Cc"] = [_address(person) for person in cc]
    message["Subject"] = reply_subject(parent.subject)
    message["Date"] = options.date
    message["Message-ID"] = f"<{message_id}>"
    message["In-Reply-To"] = f"<{parent.msgid.strip('<>')}>"
    message["References"] = " ".join(f"<{msgid}>" for msgid in references_for(parent))
    # RFC 3834: vacation responders and other bots must not answer this message.
    message["Auto-Submitted"] = "auto-generated"
    message["X-Lorelab-Kind"] = kind
    message.set_content(body, charset="utf-8", cte="7bit" if body.isascii() else "8bit")

    list_keys = {address.lower() for address in parent.lists}
    return ComposedReply(
        message=message,
        kind=kind,
        series_version_id=series_version_id,
        message_id=message_id,
        author=author.key,
        lists=tuple(p.key for p in (author, *cc) if p.key in list_keys),
        recipients=(author.key, *(p.key for p in cc)),
        body_blocks=tuple(blocks),
    )


def _address(person: Person) -> Address:
    return Address(display_name=" ".join(_printable(person.name).split()),
                   addr_spec=person.email)


def _printable(text: str) -> str:
    """`text` with control characters (CR, LF, NUL, ...) as blanks: a header holds one line."""
    return "".join(char if char.isprintable() else " " for char in text)
