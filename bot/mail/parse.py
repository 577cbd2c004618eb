"""Raw list mail (RFC 822 bytes) to a `ParsedMessage`: the one entry point of `bot.mail`.

`parse_message` turns anything that is recognisably a mail message into a record, however
broken (missing Message-ID, bad Date, undecodable words, unknown charsets, truncated MIME,
invalid bytes, huge attachments), noting each oddity in `problems`. Only input that is not a
mail message at all raises `UnparseableMessage`, whose text says what the input looks like so a
maintainer reading the quarantine knows what to do with it. A mail that a list sent wrapped in
one of its own is read as the author's mail inside (`bot.mail.wrapped`).

Cost, measured on 20,000 generated list messages (bench/ingest.py: patches, replies, cover
letters, with the Received, DKIM and ARC headers lore serves) with `recipients=False`: about two
thirds (0.68) of the CPU time of the bare `email.message_from_bytes(raw, policy=compat32)`,
measured interleaved with it on one machine (0.73 there before header blocks were read from
the bytes and a file's hunks checked together). It does not call it: see bot/mail/mime.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re

from bot.mail.automated import AUTOMATED_FIELDS, never_posted
from bot.mail.classify import classify
from bot.mail.diff import scan_diff
from bot.mail.headers import (
    cap_header,
    decode_words,
    fold_whitespace,
    parse_addresses,
    parse_date,
    parse_msgid,
    parse_msgid_list,
)
from bot.mail.mime import PART_FIELDS, Headers, extract_text, first, read_head
from bot.mail.record import Address, MessageKind, ParsedMessage, UnparseableMessage
from bot.mail.relayed import RELAY_FIELDS, relayed_author
from bot.mail.subject import parse_subject
from bot.mail.trailers import find_b4_metadata, find_trailers
from bot.mail.wrapped import wrapped_mail

SYNTHETIC_MSGID_DOMAIN = "lorelab.invalid"

# Fields of which at least one must be present for input to count as a mail message.
_MAIL_FIELDS = frozenset({
    "from", "sender", "reply-to", "to", "cc", "date", "message-id", "subject", "in-reply-to",
    "references", "received", "return-path", "mime-version", "content-type", "list-id",
    "delivered-to", "dkim-signature", "arc-seal", "x-mailer", "user-agent",
})  # fmt: skip
# The fields parse_message reads, with and without To and Cc
_FIELDS = frozenset({
    "message-id", "in-reply-to", "references", "from", "date", "list-id", "subject",
}) | PART_FIELDS | RELAY_FIELDS | AUTOMATED_FIELDS  # fmt: skip
_FIELDS_WITH_RECIPIENTS = _FIELDS | {"to", "cc"}
_REDUCED_SENDER = re.compile(r"\[([^]]+)\]")
_LIST_ID = re.compile(r"<([^<>\s]+)>")


def parse_message(raw: bytes, *, recipients: bool = True, unwrap: bool = True) -> ParsedMessage:
    """Parse one raw message. Raises UnparseableMessage only for input that is not mail.

    `recipients=False` leaves To and Cc empty (ingest stores neither; they cost an eighth).
    `unwrap=False` reads a mail a list wrapped in its own as it came: the mail inside is read
    so, and a wrapper in it is not opened (nesting is the sender's to choose, and unbounded)."""
    raw = bytes(raw)
    problems: list[str] = []
    start = 0
    while raw[start : start + 1] in (b"\n", b"\r"):  # blank lines before the headers
        start += 1
    fields = _FIELDS_WITH_RECIPIENTS if recipients else _FIELDS
    size = len(raw)
    headers, body_start = read_head(raw, start, size, problems, fields)
    # The fields read are mostly mail fields; only without any is the block read for all of them
    if _MAIL_FIELDS.isdisjoint(headers) and not read_head(raw, start, size, [], _MAIL_FIELDS)[0]:
        raise UnparseableMessage(describe_non_message(raw))
    inner = wrapped_mail(headers, raw, body_start) if unwrap else None
    if inner is not None:
        with contextlib.suppress(UnparseableMessage):  # else read as it came
            read = parse_message(inner, recipients=recipients, unwrap=False)
            return _wrapped_by_list(read, headers)

    msgid = parse_msgid(first(headers, "message-id"))
    if msgid is None:
        msgid = f"{hashlib.sha256(raw).hexdigest()[:32]}@{SYNTHETIC_MSGID_DOMAIN}"
        problems.append(f"Message-ID: missing or empty; synthesized <{msgid}> from the sha256")
    in_reply_to = parse_msgid(first(headers, "in-reply-to"))
    references = parse_msgid_list(" ".join(headers.get("references", ())))
    if in_reply_to == msgid:
        problems.append("In-Reply-To: the message replies to itself; ignored")
        in_reply_to = None
    if msgid in references:
        references.remove(msgid)
    if in_reply_to and in_reply_to not in references:
        references.append(in_reply_to)  # as b4 does: the parent is the last reference

    from_value = first(headers, "from")
    if from_value is None:
        problems.append("From: missing")
    senders = parse_addresses(from_value, problems, "From")
    if in_reply_to or references:
        in_reply_to, references = _no_own_address(in_reply_to, references, senders, problems)
    sender = relayed_author(senders[0], headers, problems) if senders else Address("", "")
    to = parse_addresses(", ".join(headers.get("to", ())), problems, "To") if recipients else []
    cc = parse_addresses(", ".join(headers.get("cc", ())), problems, "Cc") if recipients else []
    date = parse_date(first(headers, "date"), problems)
    list_id = _list_id(first(headers, "list-id"))
    subject_value = first(headers, "subject")
    if subject_value is None:
        problems.append("Subject: missing")
    subject_text = cap_header(subject_value or "", problems, "Subject")
    subject = parse_subject(fold_whitespace(decode_words(subject_text, problems, "Subject")))
    problems.extend(subject.notes)

    body = extract_text(headers, raw, body_start, problems)
    scan = scan_diff(body)
    problems.extend(scan.problems)
    replying = bool(in_reply_to or references)
    kind = classify(
        subject,
        has_diff=scan.diff is not None,
        prose=scan.prose,
        replying=replying,
        gives_trailers=(replying and scan.diff is None and not subject.reply
                        and _gives_trailers(scan.prose)),
        never_posted=never_posted(headers, subject.raw),
    )
    diff, files, fingerprint = scan.diff, scan.files, scan.fingerprint
    if kind is MessageKind.COVER and diff is not None:
        # `git format-patch --interdiff` puts the change since the last version in the cover
        # letter: a diff to read, not one the series applies
        diff, files, fingerprint = None, [], None
    if kind is MessageKind.PATCH:
        # a patch's trailers are in its commit message, above the "---" before the diffstat
        trailer_text = scan.lead[: _patch_separator(scan.lead)]
        if scan.diff is None:
            problems.append("a patch posting without a diff")
    else:
        trailer_text = scan.prose
    trailers = find_trailers(
        trailer_text, reply=kind in (MessageKind.REVIEW, MessageKind.INLINE_DIFF)
    )
    base_commit, change_id = find_b4_metadata(scan.prose)

    return ParsedMessage(
        msgid=msgid,
        in_reply_to=in_reply_to,
        references=references,
        sender=sender,
        to=to,
        cc=cc,
        date=date,
        list_id=list_id,
        subject=subject,
        body=body,
        kind=kind,
        diff=diff,
        files=files,
        trailers=trailers,
        base_commit=base_commit,
        change_id=change_id,
        patch_fingerprint=fingerprint,
        problems=problems,
    )


def _wrapped_by_list(parsed: ParsedMessage, headers: Headers) -> ParsedMessage:
    """The author's mail that a list sent wrapped in one of its own (`bot.mail.wrapped`), with
    the wrapper's List-Id where the mail has none."""
    wrapper = parse_msgid(first(headers, "message-id"))
    note = f"sent by the list wrapped in a mail of its own (message/rfc822, <{wrapper}>)"
    list_id = parsed.list_id or _list_id(first(headers, "list-id"))
    return dataclasses.replace(parsed, list_id=list_id, problems=[note, *parsed.problems])


def _patch_separator(text: str) -> int:
    """Offset of the first `---` line (a patch's commit message ends there), or len(text)."""
    pos = 0
    while True:
        if text.startswith("---", pos):
            end = text.find("\n", pos)
            if not text[pos + 3 : len(text) if end < 0 else end].strip():
                return pos
        found = text.find("\n---", pos)
        if found < 0:
            return len(text)
        pos = found + 1


def _list_id(value: str | None) -> str | None:
    if not value:
        return None
    match = _LIST_ID.search(value)
    if match:
        return match[1]
    token = value.strip()
    return token if token and " " not in token else None


def describe_non_message(raw: bytes) -> str:
    """Why `raw` is not a mail message, and what it looks like instead."""
    sample = raw[:4096]
    if not sample.strip():
        return "not an RFC 822 message: the input is empty"
    if b"\0" in sample:
        return f"not an RFC 822 message: binary data (starts with {sample[:16]!r})"
    lines = sample.decode("utf-8", errors="replace").lstrip("\r\n").splitlines()
    first_line = lines[0].strip()
    if len(lines) > 2 and not lines[1].strip():
        sender = _REDUCED_SENDER.fullmatch(lines[2].strip())
        if sender:
            return (
                "not an RFC 822 message: no header lines; it looks like a message body with "
                f"reduced headers (subject {first_line[:200]!r}, sender {sender[1]!r})"
            )
    return (
        "not an RFC 822 message: no header fields such as From:, Date:, Message-ID: or "
        f"Subject: (first line {first_line[:100]!r})"
    )


def _gives_trailers(prose: str) -> bool:
    """Whether `prose` gives a trailer a reply gives (a Signed-off-by is an author's)."""
    return any(t.name != "Signed-off-by" for t in find_trailers(prose, reply=True))


def _no_own_address(in_reply_to: str | None, references: list[str], senders: list[Address],
                    problems: list[str]) -> tuple[str | None, list[str]]:
    """The threading headers less the sender's own address, which `git send-email` was given
    as the id to reply to (Mark Pearson's thinkpad_acpi patches for years, platform-driver-x86:
    every posting one thread under <markpearson@lenovo.com>, where postings years apart of
    one size were read as one sent again)."""
    own = {a.email.lower() for a in senders if a.email}
    if not own or not any(r.lower() in own for r in references):
        return in_reply_to, references
    problems.append("In-Reply-To/References: the sender's own address, not a message; ignored")
    kept = [r for r in references if r.lower() not in own]
    return (None if in_reply_to and in_reply_to.lower() in own else in_reply_to), kept

