"""Reading a message for claim extraction, including files that are not complete RFC 822 mail.

Claims are read from any text a maintainer has at hand: a mail message (parsed by
`bot.mail.parse.parse_message`, which takes anything recognisably mail, however broken), or a
body saved with reduced headers, which `parse_message` refuses, in the form

    Re: [PATCH v4 0/9] per lruvec lru_lock for memcg     <- subject line
                                                         <- blank line
    [Konstantin Khlebnikov <khlebnikov@yandex-team.ru>]  <- sender in brackets (optional)
                                                         <- blank line
    body ...

A file in neither form is read as a bare body. Line numbers that claims report are lines of the
body returned here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.mail.parse import parse_message
from bot.mail.record import UnparseableMessage


@dataclass(frozen=True)
class MessageText:
    subject: str
    sender: str  # "Name <email>", "Name" or "email"; "" when unknown
    body: str
    msgid: str | None = None  # without angle brackets; None for reduced files
    reduced: bool = False  # True when read as a reduced file, not as mail


_SENDER_LINE = re.compile(r"^\[(.+)\]$")


def read_message_text(raw: bytes) -> MessageText:
    """Subject, sender and body of a message file: as mail when it is mail, else reduced."""
    try:
        parsed = parse_message(raw)
    except UnparseableMessage:
        return read_reduced(raw.decode("utf-8", errors="replace"))
    name, email = parsed.sender.name, parsed.sender.email
    sender = f"{name} <{email}>" if name and email else name or email
    return MessageText(parsed.subject.raw, sender, parsed.body, parsed.msgid)


def read_reduced(text: str) -> MessageText:
    """The "subject / blank / [sender] / blank / body" form; a file without it is all body."""
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    # A subject line is followed by a blank line; otherwise the file is a bare body.
    if i + 1 >= len(lines) or lines[i + 1].strip():
        return MessageText("", "", "\n".join(lines[i:]), reduced=True)
    subject = re.sub(r"^Subject:\s*", "", lines[i].strip(), flags=re.IGNORECASE)
    i = _skip_blank(lines, i + 1)
    sender = ""
    if i < len(lines) and (match := _SENDER_LINE.match(lines[i].strip())):
        sender = match.group(1).strip()
        i = _skip_blank(lines, i + 1)
    return MessageText(subject, sender, "\n".join(lines[i:]), reduced=True)


def _skip_blank(lines: list[str], i: int) -> int:
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i
