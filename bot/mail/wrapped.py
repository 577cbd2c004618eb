"""Mail a list sent wrapped in a mail of its own: the author's mail inside.

Mailman's DMARC mitigation "wrap message" (Mailman 2.1 and 3) sends a post whose author's domain
publishes a strict DMARC policy as a new mail: `From: Name via List <list@...>`, a Message-ID of
the list server's (`<167888777269.26...@mailman-core.alsa-project.org>`), and as the whole body
(`Content-Type: message/rfc822`) the author's mail as it arrived, with its own Message-ID,
In-Reply-To, References, Date and text. alsa-devel sent every post so for two months of 2023
(460 mails, 221 patches and 33 cover letters): read as they came, every patch was "without a
diff" and no series of those months was in a version.

The author's mail is what a thread names (its replies' In-Reply-To and the other parts of its
series give the inner Message-ID), and its text is the patch: parsing reads it
(`bot.mail.parse`), and b4 is handed it (`bot.series.mbox`). The raw mail stays as received.
"""

from __future__ import annotations

from bot.mail.mime import Headers, first, parse_content_type, read_head

CONTENT_FIELDS = frozenset({"content-type", "content-transfer-encoding"})
# message/rfc822 may only be sent 7bit, 8bit or binary (RFC 2046 5.2.1): the bytes are the mail
_IDENTITY = {None, "7bit", "8bit", "binary"}


def wrapped_mail(headers: Headers, data: bytes, body_start: int) -> bytes | None:
    """The mail that a mail with these header fields (`CONTENT_FIELDS` among them) carries
    as its whole body, or None when it is no wrapper."""
    content_type = first(headers, "content-type")
    if (content_type is None  # nearly all mail is text/plain: no full parse for it
            or content_type.lstrip()[:14].lower() != "message/rfc822"
            or parse_content_type(content_type)[0] != "message/rfc822"):
        return None
    encoding = first(headers, "content-transfer-encoding")
    if (encoding.strip().lower() if encoding else None) not in _IDENTITY:
        return None
    inner = data[body_start:].lstrip(b"\r\n")
    return inner or None


def unwrapped(raw: bytes) -> bytes:
    """`raw`, or the mail it wraps."""
    headers, body_start = read_head(raw, 0, len(raw), [], CONTENT_FIELDS)
    return wrapped_mail(headers, raw, body_start) or raw
