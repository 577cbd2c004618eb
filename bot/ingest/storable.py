"""The gate every row passes before it is stored: what both databases can hold.

A crafted mail must not be able to stop ingest. PostgreSQL refuses a NUL character in any text
(also inside JSON), a string longer than its column's `String(n)` and an integer outside 32
bits; SQLite refuses an integer outside 64 bits; both refuse a lone surrogate (`\\udcxx`, which
decoding RFC 2047 words can produce). Any of these made the whole batch fail, and every rerun
and every later poll of the source fail the same way (issue 16, item 6). So each message row is
checked against its table's columns, read from the model, and whatever does not fit is changed
to what does, with a note in the message's `problems`; the mail itself is kept as received.

- text: lone surrogates and NUL become U+FFFD; a string longer than its column is cut;
- Message-IDs (`msgid`, `in_reply_to`, every `references` entry) are identities, so they are
  not cut: one longer than `MSGID_MAX` (RFC 5322's 998-character line) is replaced by
  `<sha256-prefix@long-id.lorelab.invalid>`, the same for every mail that names it, so that
  replies to it still thread under it;
- an integer outside 32 bits is set to the nearest bound.
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import JSON, Integer, String

from bot.db.models import Message

MSGID_MAX = 998  # RFC 5322 caps a line at 998 characters, and the msgid columns at that
LONG_ID_DOMAIN = "long-id.lorelab.invalid"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # PostgreSQL's INTEGER, the narrower of the two
_ID_COLUMNS = frozenset({"msgid", "in_reply_to", "claimed_msgid"})


def _columns() -> list[tuple[str, str, int | None]]:
    """(key, "text" | "int" | "json", length limit) for each column a message row carries."""
    out: list[tuple[str, str, int | None]] = []
    for column in Message.__table__.c:
        kind = column.type
        if isinstance(kind, JSON):
            out.append((column.key, "json", None))
        elif isinstance(kind, String):  # Text is a String without a length
            out.append((column.key, "text", kind.length))
        elif isinstance(kind, Integer):
            out.append((column.key, "int", None))
    return out


_COLUMNS = _columns()
_TEXT_KEYS = tuple(key for key, kind, _ in _COLUMNS if kind == "text")
_LIMITED = tuple((key, limit) for key, kind, limit in _COLUMNS if kind == "text" and limit)
_INT_KEYS = tuple(key for key, kind, _ in _COLUMNS if kind == "int")
_JSON_KEYS = tuple(key for key, kind, _ in _COLUMNS if kind == "json" and key != "references")
_ENCODED_KEYS = (*_TEXT_KEYS, "references", *_JSON_KEYS)  # what `EncodedRowGate` encodes


_UNSTORABLE = re.compile("[\0\ud800-\udfff]")  # NUL, and halves of surrogate pairs


def clean_text(value: str, where: str, notes: list[str]) -> str:
    """`value` with lone surrogates and NUL replaced by U+FFFD (a note says so)."""
    if _UNSTORABLE.search(value) is None:
        return value
    if "\0" in value:
        notes.append(f"{where}: NUL characters replaced")
    if _UNSTORABLE.search(value.replace("\0", "")):
        notes.append(f"{where}: characters that are not Unicode text replaced")
    return _UNSTORABLE.sub("\ufffd", value)


def storable_msgid(value: str, where: str = "Message-ID", notes: list[str] | None = None) -> str:
    """A Message-ID as it can be stored: cleaned, and replaced by a stable stand-in when it is
    longer than `MSGID_MAX`."""
    notes = [] if notes is None else notes
    value = clean_text(value, where, notes)
    if len(value) <= MSGID_MAX:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:40]
    stand_in = f"{digest}@{LONG_ID_DOMAIN}"
    notes.append(f"{where}: {len(value)} characters, over the {MSGID_MAX} a mail line may hold;"
                 f" stored as <{stand_in}>")
    return stand_in


def _clean_json(value: Any, where: str, notes: list[str]) -> Any:
    """`value` itself when every string in it is storable (the usual case: one C-level encode,
    nothing copied), else a copy with each string cleaned."""
    try:
        if b"\\u0000" not in orjson.dumps(value):  # orjson refuses lone surrogates
            return value
    except TypeError:
        pass
    return _cleaned(value, where, notes)


def _cleaned(value: Any, where: str, notes: list[str]) -> Any:
    if isinstance(value, str):
        return clean_text(value, where, notes)
    if isinstance(value, list):
        return [_cleaned(item, where, notes) for item in value]
    if isinstance(value, dict):
        return {clean_text(k, where, notes): _cleaned(v, where, notes) for k, v in value.items()}
    return value


def make_storable(row: dict[str, Any]) -> None:
    """Change the message row in place so that both databases store it; notes go to `problems`.
    A walk over every column: rows are first checked by `EncodedRowGate`, which passes nearly
    every mail without one."""
    notes: list[str] = []
    for key, kind, limit in _COLUMNS:
        value = row.get(key)
        if value is None:
            continue
        if kind == "text":
            if key in _ID_COLUMNS:
                row[key] = storable_msgid(value, key, notes)
                continue
            value = clean_text(value, key, notes)
            if limit is not None and len(value) > limit:
                notes.append(f"{key}: {len(value)} characters, cut to the {limit} stored")
                value = value[:limit]
            row[key] = value
        elif kind == "int" and isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
            row[key] = min(max(value, INT_MIN), INT_MAX)
            notes.append(f"{key}: {value} is out of range; stored as {row[key]}")
        elif kind == "json" and key != "problems":
            if key == "references":
                if value and (max(map(len, value)) > MSGID_MAX
                              or _UNSTORABLE.search("".join(value))):
                    row[key] = [storable_msgid(ref, "References", notes) for ref in value]
            elif value:
                row[key] = _clean_json(value, key, notes)
    problems = row.get("problems")
    if problems is not None:
        row["problems"] = _clean_json(problems, "problems", []) + list(dict.fromkeys(notes))


class EncodedRowGate:
    """Whether a message row needs no change to be stored: the case of nearly every mail, told
    with a few C-level calls on the row as a sequence of the columns `fields`, its JSON columns
    already encoded (`json_text`), before any dict of it is made (building one and walking its
    keys cost as much as compressing the mail). One JSON encoding covers texts, references and
    JSON columns alike: orjson refuses lone surrogates and writes NUL as \\u0000. A row it
    says no to goes through `make_storable` as a dict, which changes it or finds nothing to
    change; so it may say no where it cannot tell (a text holding a literal backslash-u0000),
    never yes where the walk would change something."""

    def __init__(self, fields: Sequence[str]) -> None:
        at = {key: index for index, key in enumerate(fields)}
        # texts and JSON texts, encoded together: the JSON of a NUL holds "\u0000" whether
        # written once or twice, and orjson refuses a lone surrogate
        self._encoded = operator.itemgetter(*(at[key] for key in _ENCODED_KEYS if key in at))
        self._limited = tuple((at[key], limit) for key, limit in _LIMITED if key in at)
        self._ints = operator.itemgetter(*(at[key] for key in _INT_KEYS if key in at))

    def __call__(self, row: Sequence[Any], references: list[str]) -> bool:
        """`references`: the row's, decoded (Message-IDs are not cut: each is checked)."""
        try:
            if b"\\u0000" in orjson.dumps(self._encoded(row)):
                return False
            ints = self._ints(row)
            if min(ints) < INT_MIN or max(ints) > INT_MAX:  # TypeError for a None: no
                return False
        except TypeError:
            return False
        if references and max(map(len, references)) > MSGID_MAX:
            return False
        return all(row[at] is None or len(row[at]) <= limit for at, limit in self._limited)


def clean_quarantine(row: dict[str, Any]) -> None:
    """A quarantine row's texts (its reason may quote the mail) made storable in place."""
    for key in ("source", "reason"):
        row[key] = clean_text(row[key], key, [])
