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

import email
import email.policy
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from bot.mail.parse import parse_message
from bot.mail.record import UnparseableMessage


@dataclass(frozen=True)
class MessageText:
    subject: str
    sender: str  # "Name <email>", "Name" or "email"; "" when unknown
    body: str
    msgid: str | None = None  # without angle brackets; None for reduced files
    reduced: bool = False  # True when read as a reduced file, not as mail
    unreadable: str | None = None  # why no text could be read (binary data); None when it could


# Larger files are refused before any reading: a claims mail is a few hundred kilobytes at most.
MAX_BYTES = 4_000_000
# A file with more control bytes than this share is binary data, not text.
_BINARY_SHARE = 0.05


_SENDER_LINE = re.compile(r"^\[(.+)\]$")


def read_message_text(raw: bytes) -> MessageText:
    """Subject, sender and body of a message file: as mail when it is mail, else reduced; binary
    data and files over MAX_BYTES give no body and say why."""
    if len(raw) > MAX_BYTES:
        return MessageText("", "", "", unreadable=f"{len(raw):,} bytes, over {MAX_BYTES:,}")
    if _looks_binary(raw):
        return MessageText("", "", "", unreadable="binary data, not text")
    try:
        parsed = parse_message(raw)
    except UnparseableMessage:
        return read_reduced(raw.decode("utf-8", errors="replace"))
    name, email = parsed.sender.name, parsed.sender.email
    sender = f"{name} <{email}>" if name and email else name or email
    body = parsed.body if parsed.body.strip() else html_text(raw)
    return MessageText(parsed.subject.raw, sender, body, parsed.msgid)


def _looks_binary(raw: bytes) -> bool:
    head = raw[:65536]
    if b"\x00" in head:
        return True
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return bool(head) and control / len(head) > _BINARY_SHARE


class _TextOfHtml(HTMLParser):
    """The text of an HTML part, one line per block element, <pre> kept as it is."""

    _BREAKS = frozenset({"br", "p", "div", "tr", "li", "pre", "h1", "h2", "h3", "table"})

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._BREAKS:
            self.parts.append("\n")
        elif tag == "td":
            self.parts.append("  ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._BREAKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def html_text(raw: bytes) -> str:
    """The text of a mail's HTML part (for HTML-only mail, whose plain body is empty)."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    part = message.get_body(preferencelist=("html",)) if hasattr(message, "get_body") else None
    if part is None:
        return ""
    try:
        html = part.get_content()
    except (LookupError, ValueError):
        return ""
    parser = _TextOfHtml()
    parser.feed(html if isinstance(html, str) else "")
    return "".join(parser.parts)


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
