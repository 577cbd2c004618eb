"""Header field values turned into plain values: RFC 2047 text, addresses, dates, Message-IDs.

Every function here takes the unfolded text of one header field and never raises on bad input:
what it cannot read it reports by appending a sentence to `problems` and returns a neutral value.
The common shapes of list mail take a fast path (string methods, a precompiled regex); anything
unusual falls back to the standard library, which is correct but several times slower
(email.utils.getaddresses alone costs about 45 us per call, over half of what a bare
email.message_from_bytes costs on a patch mail). Parsed address lists are also cached: every
message of a thread repeats the same To/Cc.
"""

from __future__ import annotations

import codecs
import datetime as dt
import email.errors
import email.header
import email.utils
import functools
import re

from bot.mail.record import Address

# Charset labels seen in list mail that Python does not know, or knows under another name.
_CHARSET_ALIASES = {
    "iso-8859-8-i": "iso-8859-8",
    "iso-8859-8-e": "iso-8859-8",
    "x-unknown": "utf-8",
    "unknown-8bit": "utf-8",
    "unknown": "utf-8",
    "x-user-defined": "latin-1",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030",  # a superset; mail labelled gb2312 often holds gbk characters
    "x-gbk": "gbk",
    "ansi_x3.4-1968": "ascii",
    "utf-8-sig": "utf-8",
    "default": "utf-8",
}


def lookup_charset(label: str | None) -> str | None:
    """The Python codec name for a MIME charset label, or None when Python has no such codec."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = _CHARSET_ALIASES.get(name, name)
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    # "base64", "rot13", "undefined"... are codecs, but not charsets
    if not getattr(info, "_is_text_encoding", True) or info.name == "undefined":
        return None
    return info.name


def decode_bytes(data: bytes, codec: str) -> tuple[str, bool]:
    """`data` as text in `codec`, and whether invalid bytes had to be replaced. Never raises
    (some codecs, such as idna, raise plain UnicodeError or refuse errors="replace")."""
    try:
        return data.decode(codec), False
    except (UnicodeError, LookupError, ValueError):
        pass
    try:
        return data.decode(codec, errors="replace"), True
    except (UnicodeError, LookupError, ValueError):
        return data.decode("utf-8", errors="replace"), True


# Header text decoded or parsed as addresses, per field: a Subject or From is a line or two, and
# the stdlib's decoder costs quadratic time (80,000 encoded words in a 1.5 MB Subject: 11 s).
HEADER_TEXT_CAP = 16 * 1024


def cap_header(value: str, problems: list[str], field: str) -> str:
    """`value`, cut to `HEADER_TEXT_CAP` characters (a note says so)."""
    if len(value) <= HEADER_TEXT_CAP:
        return value
    problems.append(f"{field}: {len(value)} characters; only the first {HEADER_TEXT_CAP} read")
    return value[:HEADER_TEXT_CAP]


def decode_words(value: str, problems: list[str], field: str) -> str:
    """Decode RFC 2047 encoded words (`=?utf-8?q?...?=`); text without them is returned as is."""
    if "=?" not in value:
        return value
    value = cap_header(value, problems, field)
    try:
        chunks = email.header.decode_header(value)
    except (email.errors.HeaderParseError, ValueError, AssertionError) as exc:
        problems.append(f"{field}: undecodable RFC 2047 encoded word ({exc}); kept as written")
        return value
    out: list[str] = []
    for data, charset in chunks:
        if isinstance(data, str):
            out.append(data)
        elif charset is None:
            # decode_header turns unencoded text into bytes with raw-unicode-escape
            out.append(data.decode("raw-unicode-escape", errors="replace"))
        else:
            codec = lookup_charset(charset)
            if codec is None:
                problems.append(f"{field}: unknown charset {charset!r}; read as UTF-8")
                codec = "utf-8"
            text, replaced = decode_bytes(data, codec)
            if replaced:
                problems.append(f"{field}: invalid {charset} bytes in an encoded word replaced")
            out.append(text)
    return "".join(out)


def fold_whitespace(value: str) -> str:
    """Collapse runs of whitespace (including folded header line breaks) to single spaces."""
    return " ".join(value.split())


# Quotes, comments, groups and escapes need the real RFC 5322 parser.
_NEEDS_FULL_PARSER = re.compile(r'["()\\;:]')


def parse_addresses(value: str | None, problems: list[str], field: str) -> list[Address]:
    """All addresses in an address-list header (From, To, Cc), names decoded, emails lower-cased.

    A name without any address (`From: Foo Bar`) comes back as an Address with email "".
    """
    if not value or value.isspace():
        return []
    addresses, notes = _address_list(cap_header(value, problems, field))
    problems.extend(f"{field} {note}" for note in notes)
    return list(addresses)


# The same To/Cc lists come back in every message of a thread; Address is immutable.
@functools.lru_cache(maxsize=4096)
def _address_list(value: str) -> tuple[tuple[Address, ...], tuple[str, ...]]:
    notes: list[str] = []
    if "@" not in value and "<" not in value:
        name = fold_whitespace(decode_words(value, notes, "name"))
        return (Address(name=name, email=""),), tuple(notes)
    pairs = None if _NEEDS_FULL_PARSER.search(value) else _simple_pairs(value)
    if pairs is None:
        try:
            pairs = email.utils.getaddresses([value])
        except Exception as exc:  # the stdlib parser has raised on hostile input before
            return (), (f"unreadable address list ({exc})",)
    result: list[Address] = []
    for name, addr in pairs:
        if not name and not addr:
            continue
        if name and "=?" in name:
            name = fold_whitespace(decode_words(name, notes, "name"))
        result.append(Address(name=name, email=addr.lower()))
    return tuple(result), tuple(notes)


def _simple_pairs(value: str) -> list[tuple[str, str]] | None:
    """(name, address) pairs of `Name <addr>, addr, ...`, or None for any other shape."""
    pairs = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if item[-1] == ">":
            lt = item.rfind("<")
            name, addr = item[:lt].strip(), item[lt + 1 : -1].strip()
            if lt < 0 or "<" in name or ">" in name or ">" in addr or " " in addr:
                return None
            pairs.append((" ".join(name.split()), addr))
        elif "<" in item or ">" in item or " " in item or "\t" in item:
            return None
        else:
            pairs.append(("", item))
    return pairs


_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_ZONES = {"ut": 0, "utc": 0, "gmt": 0, "z": 0, "est": -5, "edt": -4, "cst": -6, "cdt": -5,
          "mst": -7, "mdt": -6, "pst": -8, "pdt": -7}  # fmt: skip
# "Mon, 25 Dec 2023 00:28:14 -0700", the RFC 5322 form nearly all mail uses.
_RFC5322_DATE = re.compile(
    r"\s*(?:[A-Za-z]+,?\s*)?(\d{1,2})\s+([A-Za-z]{3})[A-Za-z]*\.?\s+(\d{2,4})\s+"
    r"(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?\s*(?:([+-])(\d{2})(\d{2})|([A-Za-z]{1,5}))?"
)


def parse_date(value: str | None, problems: list[str]) -> dt.datetime | None:
    """The Date header as a timezone-aware UTC datetime, or None (with a problem) if unusable."""
    if value is None or not value.strip():
        problems.append("Date: missing")
        return None
    match = _RFC5322_DATE.match(value)
    if match:
        day, mon, year, hour, minute, sec, sign, zh, zm, zname = match.groups()
        month = _MONTHS.get(mon.lower())
        offset: int | None = 0
        if sign:
            offset = (int(zh) * 60 + int(zm)) * (-1 if sign == "-" else 1)
        elif zname:
            hours = _ZONES.get(zname.lower())
            offset = None if hours is None else hours * 60
        if month is not None and offset is not None:
            fields = (int(year), month, int(day), int(hour), int(minute), int(sec or 0))
            return _to_utc(value, fields, offset, problems)
    # Anything else (missing weekday comma, odd zones, asctime): the stdlib parser
    try:
        parsed = email.utils.parsedate_tz(value)
    except Exception:  # it has raised IndexError/ValueError on garbage in some versions
        parsed = None
    if parsed is None:
        return _parse_iso_date(value, problems)
    offset_s = parsed[9] or 0
    return _to_utc(value, tuple(parsed[:6]), offset_s // 60, problems)


def _parse_iso_date(value: str, problems: list[str]) -> dt.datetime | None:
    """ISO 8601 dates, which a few tools write; anything else is unusable."""
    try:
        stamp = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        problems.append(f"Date: unparseable {value.strip()[:80]!r}")
        return None
    problems.append(f"Date: not RFC 5322 but ISO 8601: {value.strip()[:80]!r}")
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=dt.UTC)
    return stamp.astimezone(dt.UTC)


def _to_utc(
    value: str, fields: tuple[int, ...], offset_min: int, problems: list[str]
) -> dt.datetime | None:
    year, month, day, hour, minute, sec = fields
    if year < 100:  # RFC 5322 obsolete two-digit years
        year += 2000 if year < 50 else 1900
    if abs(offset_min) >= 24 * 60:
        problems.append(f"Date: impossible timezone in {value.strip()[:80]!r}; taken as UTC")
        offset_min = 0
    try:
        if not offset_min:
            return dt.datetime(year, month, day, hour, minute, min(sec, 59), tzinfo=dt.UTC)
        stamp = dt.datetime(year, month, day, hour, minute, min(sec, 59), tzinfo=dt.UTC)
        return stamp - _offset(offset_min)  # local time minus its offset is UTC
    except (ValueError, OverflowError):
        problems.append(f"Date: impossible date {value.strip()[:80]!r}")
        return None


@functools.lru_cache(maxsize=256)
def _offset(minutes: int) -> dt.timedelta:
    return dt.timedelta(minutes=minutes)


_ANGLE_ID = re.compile(r"<([^<>]+)>")


def parse_msgid(value: str | None) -> str | None:
    """The first Message-ID in a header value, without angle brackets and whitespace."""
    if not value:
        return None
    if value[0] == "<" and value[-1] == ">" and value.count("<") == 1 and " " not in value:
        return value[1:-1] or None  # the usual "<id@host>"
    match = _ANGLE_ID.search(value)
    if match:
        msgid = "".join(match[1].split())
        return msgid or None
    # Some clients drop the brackets; take the first token that looks like an id
    for token in value.split():
        if "@" in token:
            return token.strip("<>")
    token = value.strip()
    return token.strip("<>") if token and " " not in token else None


def parse_msgid_list(value: str | None) -> list[str]:
    """All Message-IDs in a References header, in order, without duplicates."""
    if not value:
        return []
    # The usual "<id> <id> ..." without a regex (it costs 15 ns a character): with whitespace
    # dropped, brackets alternating from a first "<" to a last ">" enclose what _ANGLE_ID finds.
    packed = "".join(value.split())
    if (
        packed[:1] == "<"
        and packed[-1:] == ">"
        and packed.count("<") == packed.count(">") == packed.count("><") + 1
    ):
        ids = packed[1:-1].split("><")
    else:
        ids = ["".join(m.split()) for m in _ANGLE_ID.findall(value)]
        if not ids:
            ids = [t.strip("<>") for t in value.split() if "@" in t]
    unique = dict.fromkeys(ids)
    unique.pop("", None)
    return list(unique)
