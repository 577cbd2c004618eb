"""Offline mail sources: mbox files, maildirs and standard input, read as raw bytes.

Each yields `RawMail` items with a position that names where the mail came from, so that a
quarantined item can be found again. An mbox is streamed line by line: a 20,000-message archive
never sits in memory at once. A plain (uncompressed) mbox can also be handed out as `MboxSlice`s,
byte ranges of whole entries that parse workers read and split themselves: the process that
stores then never copies the mail.
"""

from __future__ import annotations

import gzip
import io
import mmap
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# An entry is read up to this many bytes and no further: a gzip mbox of 1 MB can hold one entry
# of 1 GiB, which would otherwise sit in memory whole before its size is checked. Beyond it the
# first MAX_ENTRY_BYTES + 1 bytes stand for the entry (the rest is skipped while decompressing),
# over any sane [ingest] max_message_bytes, so it is quarantined with its headers kept.
MAX_ENTRY_BYTES = 64 * 1024 * 1024
# mboxrd escapes any "From " line in a body as ">From ", ">>From " ...; unescape one level.
# Anchored on a newline, not `^` with re.MULTILINE: the regex engine then jumps from one
# "\n>" to the next instead of trying every byte (five times faster on a patch mail).
_MBOXRD_ESCAPED = re.compile(rb"\n>(>*From )")


@dataclass(frozen=True)
class RawMail:
    data: bytes
    origin: str  # e.g. "mbox:/srv/linux-mm.mbox#17", "maildir:/srv/Maildir/cur/123:2,S"


class SourceError(OSError):
    """A source that cannot be read at all (missing file, not an mbox); says what to check."""


def _open(path: Path) -> BinaryIO:
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if path.is_dir():
        raise SourceError(f"{path}: is a directory; for a maildir use `lorelab ingest maildir`")
    fh: BinaryIO = path.open("rb")
    if fh.read(2) == b"\x1f\x8b":
        fh.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    fh.seek(0)
    return fh


def iter_mbox(path: str | Path) -> Iterator[RawMail]:
    """Messages of an mbox (mboxrd or mboxo, optionally gzipped), in file order.

    A file that does not start with a "From " line is taken as one single message, which is
    what `git format-patch` writes without --stdout and what people save from a mail client.
    The file is read in large chunks and split with bytes.find: line by line in Python costs
    as much as parsing the mail.
    """
    path = Path(path)
    with _open(path) as fh:
        head = fh.read(5)
        if not head:
            return
        if head != b"From ":
            yield RawMail(head + fh.read(MAX_ENTRY_BYTES + 1 - len(head)), f"file:{path}")
            return
        for index, chunk in enumerate(_split(fh, head), start=1):
            yield RawMail(_message_of(chunk), f"mbox:{path}#{index}")


@dataclass(frozen=True)
class MboxSlice:
    """Whole entries of a plain mbox file, by byte range, numbered from `first` (1-based)."""

    path: str
    start: int
    end: int
    first: int

    def mails(self) -> list[RawMail]:
        """The messages of the slice, as `iter_mbox` gives them (origins included)."""
        with open(self.path, "rb") as fh:
            fh.seek(self.start)
            data = fh.read(self.end - self.start)
        bounds = _entry_bounds(data)
        if bounds is None:  # an entry over the limit: cut where `_split`'s reads cut it
            messages = map(_message_of, _split(io.BytesIO(data[5:]), data[:5]))
        else:
            messages = (_message_at(data, *bound) for bound in bounds)
        return [RawMail(message, f"mbox:{self.path}#{number}")
                for number, message in enumerate(messages, start=self.first)]


@dataclass(frozen=True)
class MboxFile:
    """An mbox to ingest: by slices when it is a plain file, else message by message."""

    path: Path

    def __iter__(self) -> Iterator[RawMail]:
        return iter_mbox(self.path)

    def plain(self) -> bool:
        """Uncompressed and starting with a From_ line: it can be sliced."""
        with _open(self.path) as fh:
            return isinstance(fh, io.BufferedReader) and fh.read(5) == b"From "

    def slices(self, per_slice: int) -> Iterator[MboxSlice]:
        """Slices of `per_slice` entries each; only the separators are looked at here."""
        with self.path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            start, first, count, at = 0, 1, 0, 0
            while (at := m.find(b"\nFrom ", at + 1)) >= 0:
                count += 1
                if count == per_slice:
                    yield MboxSlice(str(self.path), start, at + 1, first)
                    start, first, count = at + 1, first + count, 0
            if start < len(m):
                yield MboxSlice(str(self.path), start, len(m), first)


def split_mbox_bytes(data: bytes) -> Iterator[bytes]:
    """The messages of an mbox held in memory (a search result, a thread download)."""
    if not data.startswith(b"From "):
        if data.strip():
            yield data
        return
    for entry in _split(io.BytesIO(data[5:]), data[:5]):
        if message := _message_of(entry):
            yield message


def _split(fh: BinaryIO, head: bytes, size: int = 1 << 22,
           limit: int = MAX_ENTRY_BYTES) -> Iterator[bytes]:
    """Each mbox entry, From_ line included, as bytes; one over `limit` as its first
    `limit` + 1 bytes, the rest skipped as it is read."""
    buf = head
    skipping = False  # the rest of an entry over the limit
    while chunk := fh.read(size):
        buf += chunk
        start = 0
        while (i := buf.find(b"\nFrom ", start + 1)) >= 0:
            if not skipping:
                yield buf[start : i + 1]
            skipping = False
            start = i + 1
        buf = buf[start:]
        if not skipping and len(buf) > limit:
            yield buf[: limit + 1]
            skipping = True
        if skipping:
            buf = buf[-6:]  # enough to find a separator split between two reads
    if buf and not skipping:
        yield buf


def _entry_bounds(data: bytes) -> list[tuple[int, int, bool]] | None:
    """(start, end, escaped) of each entry of an mbox held whole in memory, cut as `_split` cuts
    it; None if one is over MAX_ENTRY_BYTES (where `_split` cuts those depends on where its reads
    end). `escaped`: the entry may have a ">From " line to unescape; where it is False it has
    none. Offsets instead of `_split`'s copies: the entries of a slice are then copied once, each
    as its message, where `_split` and `_message_of` copied the whole slice five times. One
    pass over every "From " finds both the separators and the escapes (a second pass for
    ">From " in each entry cost as much again)."""
    bounds = []
    start = 0
    escaped = False
    at = data.find(b"From ")
    while at >= 0:
        if at >= 2 and data[at - 1] == 0x0A:  # "\nFrom ", past the first line: a separator
            bounds.append((start, at, escaped))
            start, escaped = at, False
        elif at and data[at - 1] == 0x3E:  # ">From "
            escaped = True
        at = data.find(b"From ", at + 5)
    if start < len(data):
        bounds.append((start, len(data), escaped))
    if any(end - start > MAX_ENTRY_BYTES for start, end, _ in bounds):
        return None
    return bounds


def _message_at(data: bytes, start: int, end: int, escaped: bool) -> bytes:
    """`_message_of(data[start:end])`, copying only the message out of `data`."""
    newline = data.find(b"\n", start, end)
    if newline < 0:
        return b""
    if escaped and data.find(b">From ", newline + 1, end) >= 0:
        return _message_of(data[start:end])
    if data.endswith(b"\n\n", newline + 1, end):
        end -= 1
    elif data.endswith(b"\r\n\r\n", newline + 1, end):
        end -= 2
    return data[newline + 1 : end]


def _message_of(entry: bytes) -> bytes:
    """An mbox entry without its From_ line, mboxrd escaping undone, separator line dropped."""
    newline = entry.find(b"\n")
    body = entry[newline + 1 :] if newline >= 0 else b""
    if b">From " in body:
        body = _MBOXRD_ESCAPED.sub(rb"\n\1", b"\n" + body)[1:]  # the first line too
    # The blank line before the next From_ separator belongs to the mbox, not the message.
    if body.endswith(b"\n\n"):
        body = body[:-1]
    elif body.endswith(b"\r\n\r\n"):
        body = body[:-2]
    return body


def iter_maildir(path: str | Path) -> Iterator[RawMail]:
    """Messages in a maildir's new/ and cur/ folders, in name order (delivery order)."""
    root = Path(path)
    subdirs = [root / "new", root / "cur"]
    if not any(d.is_dir() for d in subdirs):
        raise SourceError(f"{root}: not a maildir (no new/ or cur/ folder)")
    for sub in subdirs:
        if not sub.is_dir():
            continue
        for entry in sorted(sub.iterdir()):
            if entry.is_file() and not entry.name.startswith("."):
                yield RawMail(entry.read_bytes(), f"maildir:{entry}")


def read_stdin(stream: BinaryIO) -> RawMail:
    """One message from a mail server's delivery pipe (an optional leading From_ line dropped)."""
    data = stream.read()
    if data.startswith(b"From "):
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
    return RawMail(data, "stdin")
