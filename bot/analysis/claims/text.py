"""A message body as claims are read from it: numbered lines with their quote depth, blocks of
one depth with the speaker whose words they are, and the prose of a block as sentences.

Quoted text (`> `) belongs to the quoted author, named by the "On ..., X wrote:" line above it
when there is one; the unquoted text to the replier. Diffs and signatures are left out of the
blocks: claims are never read from them. Line numbers are 1-based lines of the body.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.mail.relayed import without_relay

# --------------------------------------------------------------------------------------------
# Lines and quote depth


@dataclass(frozen=True)
class BodyLine:
    number: int  # 1-based, in the body
    raw: str  # as written, right-stripped
    depth: int  # number of leading '>' quote marks
    text: str  # without the quote marks, tabs expanded

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "text": self.raw}


_QUOTE_PREFIX = re.compile(r"^((?:[ \t]{0,2}>)+) ?")


def split_body(body: str) -> list[BodyLine]:
    lines = []
    for number, raw in enumerate(body.splitlines(), start=1):
        raw = raw.rstrip()
        match = _QUOTE_PREFIX.match(raw)
        if match:
            depth = match.group(1).count(">")
            text = raw[match.end() :]
        else:
            depth, text = 0, raw
        lines.append(BodyLine(number, raw, depth, text.expandtabs(8)))
    return lines


# --------------------------------------------------------------------------------------------
# Speakers


@dataclass(frozen=True)
class Speaker:
    role: str  # "replier" (the message's own words) or "quoted"
    quote_depth: int
    name: str | None
    email: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "quote_depth": self.quote_depth,
            "name": self.name,
            "email": self.email,
        }

    def describe(self) -> str:
        who = self.name or self.email or ("the replier" if self.role == "replier" else "unknown")
        if self.role == "replier":
            return f"{who} (own words)"
        return f"{who} (quoted, depth {self.quote_depth})"


_ADDRESS = re.compile(r"<?([\w.+-]+@[\w.-]+)>?")
_WROTE = re.compile(r"\b(?:wrote|writes|said)\s*:\s*$", re.IGNORECASE)
_NAME_STOP = re.compile(r"\d|,$|^(?:am|pm|on|at|utc|gmt)$", re.IGNORECASE)


def parse_attribution(text: str) -> tuple[str | None, str | None] | None:
    """Name and email from an "On <date>, Name <email> wrote:" line; None if it is not one."""
    if not _WROTE.search(text):
        return None
    head = _WROTE.split(text)[0].strip()
    email_match = _ADDRESS.search(head)
    email = email_match.group(1).lower() if email_match else None
    if email_match:
        head = head[: email_match.start()].strip()
    head = without_relay(head.strip("\"'"))  # "..., Kairui Song via B4 Relay <devnull+...>"
    words: list[str] = []
    for word in reversed(head.split()):
        if _NAME_STOP.search(word):
            break
        words.insert(0, word)
    name = " ".join(words).strip("\"'") or None
    return name, email


def parse_sender(sender: str) -> tuple[str | None, str | None]:
    """("Name", "email") from "Name <email>", "email" or "Name"."""
    sender = sender.strip().strip("[]").strip()
    email_match = _ADDRESS.search(sender)
    email = email_match.group(1).lower() if email_match else None
    name = sender[: email_match.start()].strip() if email_match else sender
    return (without_relay(name.strip("\"' ")) or None), email


def sender_speaker(sender: str) -> Speaker:
    """The speaker of the message's own (unquoted) words."""
    name, email = parse_sender(sender) if sender else (None, None)
    return Speaker("replier", 0, name, email)


# --------------------------------------------------------------------------------------------
# Blocks of one quote depth, diffs and signatures left out


@dataclass(frozen=True)
class Block:
    """Consecutive lines at one quote depth (blank lines join the block around them)."""

    depth: int
    lines: tuple[BodyLine, ...]  # prose and table lines, diffs and signatures left out
    speaker: Speaker


_DIFF_START = re.compile(r"^(?:diff --git |Index: \S|--- a/|\+\+\+ b/|@@ -\d)")
_DIFF_BODY = re.compile(
    r"^(?:[ +\-@\\]|index |diff |new file|deleted file|similarity|rename |old mode|new mode|===)"
)


# A row of `perf report` (overhead, [self,] command, object, "[k]" or "[.]", symbol) or of its
# call graph ("|--12.50%--foo"): a share of a profile, not a change of anything.
_PROFILE_ROW = re.compile(
    r"^\s*(?:[-+]\s*)?\d+(?:\.\d+)?%\s+(?:\d+(?:\.\d+)?%\s+)?\S.*\s\[[.kgu]\]\s+\S"
    r"|^[\s|`]*[|`]?--\d+(?:\.\d+)?%--"
)


def _diff_resumes(lines: Sequence[BodyLine], i: int, depth: int) -> bool:
    """A line a mail client wrapped out of a diff: diff lines carry on right after it."""
    following = [ln for ln in lines[i + 1 : i + 3] if ln.depth == depth and ln.text]
    return any(re.match(r"^(?:[+\-] |[+\-]$| {2,}\S|@@ )", ln.text) for ln in following)


def _prose_mask(lines: Sequence[BodyLine]) -> list[bool]:
    """False for lines inside a diff or a signature, and for rows of a profile: claims are never
    read from those."""
    keep = [True] * len(lines)
    in_diff_at: int | None = None  # depth of the diff being skipped
    signature_at: int | None = None
    for i, line in enumerate(lines):
        if signature_at is not None and line.depth >= signature_at:
            keep[i] = False
            continue
        signature_at = None
        if in_diff_at is not None:
            if line.depth == in_diff_at and (
                not line.text or _DIFF_BODY.match(line.text) or _diff_resumes(lines, i, in_diff_at)
            ):
                keep[i] = False
                continue
            in_diff_at = None
        if _DIFF_START.match(line.text):
            in_diff_at = line.depth
            keep[i] = False
        elif line.text in ("--", "-- "):
            signature_at = line.depth
            keep[i] = False
        elif _PROFILE_ROW.match(line.text) or _in_symbol_list(lines, i):
            keep[i] = False
    return keep


# A row of a short profile, a share and a function's name: "39.73%  lzo1x_1_do_compress".
_SYMBOL_ROW = re.compile(r"^\s*\d+(?:\.\d+)?%\s+[A-Za-z_][\w.]*(?:\s+\([^)]*\))?\s*$")


def _in_symbol_list(lines: Sequence[BodyLine], i: int) -> bool:
    """Whether line i is one of three or more such rows in a row (Yu Zhao's kswapd profiles
    under `patch1-5`, linux-mm 2022): a lone "12% improvement" is no profile."""
    if not _SYMBOL_ROW.match(lines[i].text):
        return False
    run = 1
    for step in (-1, 1):
        k = i + step
        while 0 <= k < len(lines) and run < 3 and _SYMBOL_ROW.match(lines[k].text):
            run += 1
            k += step
    return run >= 3


def split_blocks(lines: Sequence[BodyLine], replier: Speaker) -> list[Block]:
    """Group the body into blocks of one quote depth and say whose words each block is."""
    keep = _prose_mask(lines)
    speakers: dict[int, Speaker] = {0: replier}
    blocks: list[Block] = []
    current: list[BodyLine] = []
    current_depth: int | None = None
    pending_blank: list[BodyLine] = []
    previous_text: dict[int, str] = {}

    def close() -> None:
        if current and current_depth is not None:
            speaker = speakers.get(current_depth) or Speaker("quoted", current_depth, None, None)
            blocks.append(Block(current_depth, tuple(current), speaker))

    for line, kept in zip(lines, keep, strict=True):
        if not line.text.strip():
            pending_blank.append(line)
            continue
        if line.depth != current_depth:
            close()
            current, current_depth, pending_blank = [], line.depth, []
        if kept:
            current.extend(pending_blank)
            current.append(line)
        pending_blank = []
        # An attribution may be split over two lines ("On ..., Name\n<email> wrote:").
        joined = f"{previous_text.get(line.depth, '')} {line.text}".strip()
        found = parse_attribution(line.text)
        if found and found[0] is None:
            found = parse_attribution(joined) or found
        if found:
            speakers[line.depth + 1] = Speaker("quoted", line.depth + 1, found[0], found[1])
        previous_text[line.depth] = line.text
    close()
    return blocks


def message_blocks(body: str, sender: str = "") -> list[Block]:
    """The blocks of a message body sent by `sender` ("Name <email>"; "" when unknown)."""
    return split_blocks(split_body(body), sender_speaker(sender))


# --------------------------------------------------------------------------------------------
# Paragraphs and sentences


@dataclass(frozen=True)
class Sentence:
    text: str
    lines: tuple[BodyLine, ...]


# A list item starts a sentence of its own ("* Better ...", "2) ...", "v1: ...").
_LIST_ITEM = re.compile(r"^\s*(?:[*\-\u2022]\s|\d{1,2}[.)]\s|v\d+:|[a-z][.)]\s)")


def _paragraphs(block: Block, skip: Collection[int]) -> Iterable[list[BodyLine]]:
    paragraph: list[BodyLine] = []
    for line in block.lines:
        # A gap in the numbering is a diff or signature left out, and a skipped line was read as
        # something else (a result line, a table): the paragraph ends there.
        if paragraph and (
            not line.text.strip()
            or line.number in skip
            or line.number != paragraph[-1].number + 1
            or _LIST_ITEM.match(line.text)
        ):
            yield paragraph
            paragraph = []
        if line.text.strip() and line.number not in skip:
            paragraph.append(line)
    if paragraph:
        yield paragraph


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def sentences(block: Block, skip: Collection[int] = ()) -> list[Sentence]:
    """The block's prose split into sentences, each with the lines it spans."""
    found = []
    for paragraph in _paragraphs(block, skip):
        pieces = [line.text.strip() for line in paragraph]
        text = " ".join(pieces)
        # Where each line's text starts and stops in the joined paragraph (both ascending).
        starts, stops, offset = [], [], 0
        for piece in pieces:
            starts.append(offset)
            stops.append(offset + len(piece))
            offset += len(piece) + 1
        begin = 0
        for end in [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
            piece = text[begin:end].strip()
            if piece:
                first, last = bisect.bisect_right(stops, begin), bisect.bisect_left(starts, end)
                found.append(Sentence(piece, tuple(paragraph[first:last])))
            begin = end
    return found
