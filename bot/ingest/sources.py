"""Offline mail sources: mbox files, maildirs and standard input, read as raw bytes.

Each yields `RawMail` items with a position that names where the mail came from, so that a
quarantined item can be found again. An mbox is streamed line by line: a 20,000-message archive
never sits in memory at once. A plain (uncompressed) mbox can also be handed out as `MboxSlice`s,
byte ranges of the file whose entries parse workers find, read and split themselves: the process
that stores then neither reads nor copies the mail.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

# An entry is read up to this many bytes and no further: a gzip mbox of 1 MB can hold one entry
# of 1 GiB, which would otherwise sit in memory whole before its size is checked. Beyond it the
# first MAX_ENTRY_BYTES + 1 bytes stand for the entry (the rest is skipped while decompressing),
# over any sane [ingest] max_message_bytes, so it is quarantined with its headers kept.
MAX_ENTRY_BYTES = 64 * 1024 * 1024
_READ_BYTES = 1 << 22  # what `_split` reads at a time
_PROBE_BYTES = 1 << 16  # what a parse worker reads at a time looking for its first entry
# The storing process cuts a plain mbox into ranges of about [ingest] batch_size entries from
# their mean size, measured in this many windows of this many bytes spread over the file (1 MiB
# read, about 150 entries of list mail). Counting every entry to cut exact batches cost it, the
# process everything waits for, 0.11 s of CPU per 143 MB; a fixed typical size would make
# batches of lists with larger or smaller mail (and of tests' tiny mboxes) far off batch_size.
_SAMPLES, _SAMPLE_BYTES = 16, 1 << 16
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
            yield RawMail(_message_of(chunk), _mbox_origin(path, index))


def _mbox_origin(path: str | Path, number: int) -> str:
    """Where the `number`th entry (from 1) of an mbox came from, as quarantine rows say it."""
    return f"mbox:{path}#{number}"


@dataclass(frozen=True)
class MboxSlice:
    """The entries of a plain mbox file whose From_ line starts in bytes [start, end) of it.

    The parse worker finds them itself (an entry starts the file or a line with "From "), so
    the process that hands out slices need not read the file. Their origins are numbered from 1
    in the slice: a worker cannot know how many entries come before; `renumbered` gives each
    its number in the file once that is known.
    """

    path: str
    start: int
    end: int

    def mails(self) -> list[RawMail]:
        """The messages of the slice, as `iter_mbox` gives them, origins numbered in the slice."""
        with open(self.path, "rb") as fh:
            first = _entry_start(fh, self.start)
            if first >= self.end:
                return []  # inside an entry that started in an earlier slice
            last = _entry_start(fh, self.end)  # the next slice's first entry, or the end
            fh.seek(first)
            data = fh.read(last - first)
            bounds = _entry_bounds(data)
            if bounds is None:  # an entry over the limit: cut where `iter_mbox`'s reads cut it
                fh.seek(first + 5)  # `_split` reads on past the slice: take its entries only
                entries = islice(_split(fh, data[:5], offset=first), data.count(b"\nFrom ") + 1)
                messages = list(map(_message_of, entries))
            else:
                messages = [_message_at(data, *bound) for bound in bounds]
        return [RawMail(message, _mbox_origin(self.path, number))
                for number, message in enumerate(messages, start=1)]


def renumbered(origin: str, before: int) -> str:
    """The origin of a mail of an `MboxSlice` numbered in the whole file: `before` entries
    of the file come before the slice's."""
    head, _, number = origin.rpartition("#")
    return f"{head}#{before + int(number)}"


def _entry_start(fh: BinaryIO, at: int) -> int:
    """Where the first entry of a plain mbox at or after offset `at` starts (the file's size if
    none does): offset 0, or right after a newline that "From " follows."""
    if at == 0:
        return 0
    fh.seek(at - 1)
    buf = b""
    while chunk := fh.read(_PROBE_BYTES):
        buf = buf[-5:] + chunk  # a separator split between two reads
        if (found := buf.find(b"\nFrom ")) >= 0:
            return fh.tell() - len(buf) + found + 1
    return fh.tell()


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

    def slices(self, per_slice: int) -> list[MboxSlice]:
        """Byte ranges of the file, in order, of about `per_slice` entries each (none, some: an
        entry can be larger than a range); only a sample of the file is read here."""
        size = self.path.stat().st_size
        sampled, entries = self._sample(size)
        count = -(-size * entries // (per_slice * sampled))  # ranges of per_slice mean entries
        return [MboxSlice(str(self.path), size * k // count, size * (k + 1) // count)
                for k in range(count)]

    def _sample(self, size: int) -> tuple[int, int]:
        """Bytes read and how many entries they hold: `_SAMPLES` windows spread over the file,
        or all of it when it is not larger than they are."""
        with self.path.open("rb") as fh:
            if size <= _SAMPLES * _SAMPLE_BYTES:
                return size, fh.read().count(b"\nFrom ") + 1
            separators = 0
            for k in range(_SAMPLES):
                fh.seek((size - _SAMPLE_BYTES) * k // (_SAMPLES - 1))
                separators += fh.read(_SAMPLE_BYTES).count(b"\nFrom ")
        return _SAMPLES * _SAMPLE_BYTES, max(separators, 1)


def split_mbox_bytes(data: bytes) -> Iterator[bytes]:
    """The messages of an mbox held in memory (a search result, a thread download)."""
    if not data.startswith(b"From "):
        if data.strip():
            yield data
        return
    for entry in _split(io.BytesIO(data[5:]), data[:5]):
        if message := _message_of(entry):
            yield message


def _split(fh: BinaryIO, head: bytes, offset: int = 0) -> Iterator[bytes]:
    """Each mbox entry, From_ line included, as bytes; one over MAX_ENTRY_BYTES as its first
    MAX_ENTRY_BYTES + 1 bytes, the rest skipped as it is read.

    `head`, the first 5 bytes, are at `offset` in the file. An entry up to a read's size over
    the limit is whole if its end is found in the read that takes it over, so the reads end
    where reading from the file's start ends them (at 5 + k * _READ_BYTES): a slice starting
    inside the file is then cut as `iter_mbox` cuts it.
    """
    limit = MAX_ENTRY_BYTES
    buf = head
    skipping = False  # the rest of an entry over the limit
    size = _READ_BYTES - offset % _READ_BYTES
    while chunk := fh.read(size):
        size = _READ_BYTES
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
    it; None if `_split` may cut one: one over MAX_ENTRY_BYTES - 4, as it is with the next From_
    line's first 4 bytes (`_split` cuts it if they end a read, finding no separator yet; where
    it cuts depends on where its reads end). `escaped`: the entry may have a ">From " line to
    unescape; where it is False it has none. Offsets instead of `_split`'s copies: the entries
    of a slice are then copied once, each as its message, where `_split` and `_message_of`
    copied the whole slice five times. One pass over every "From " finds both the separators
    and the escapes (a second pass for ">From " in each entry cost as much again)."""
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
    if any(end - start > MAX_ENTRY_BYTES - 4 for start, end, _ in bounds):
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
