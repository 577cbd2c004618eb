"""An mbox handed to the parse workers as byte ranges (`MboxSlice`) gives exactly what reading it
in the storing process gave: the same messages, mboxrd escaping undone, the same origins (what
`lorelab quarantine list` shows), whatever the slice size. Where ranges may be cut is
tests/ingest/test_mbox_entry_bounds.py's."""

from __future__ import annotations

import gzip
from pathlib import Path

from bot.config import IngestSettings
from bot.db.session import open_database
from bot.ingest.sources import MboxFile, iter_mbox
from bot.ingest.store import ingest
from tests.cli import Lorelab
from tests.ingest.test_mbox_entry_bounds import read_sliced

FROM = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"


def message(n: int, body: bytes = b"Hello.\n") -> bytes:
    return (f"From: Ada <ada@example.org>\nSubject: note {n}\nMessage-ID: <n{n}@example.org>\n"
            f"Date: Tue, 02 Jan 2024 10:00:00 +0000\n\n").encode() + body


def mbox(path: Path) -> Path:
    entries = [message(n) for n in range(1, 8)]
    entries[2] = message(3, b"Quoted:\n>From the start, escaped.\n")  # mboxrd: >>From on disk
    entries[4] = b"this is not mail at all\n"
    entries[5] = message(6).replace(b"\n", b"\r\n")
    data = b"".join(FROM + e.replace(b"\n>From ", b"\n>>From ") + b"\n" for e in entries)
    path.write_bytes(data)
    return path


def test_slices_give_what_the_reader_gives(tmp_path: Path) -> None:
    path = mbox(tmp_path / "list.mbox")
    whole = list(iter_mbox(path))
    assert len(whole) == 7 and b"\n>From the start" in whole[2].data
    source = MboxFile(path)
    assert source.plain()
    for per_slice, ranges in ((1, 7), (2, 4), (3, 3), (7, 1), (100, 1)):
        slices = source.slices(per_slice)
        assert len(slices) == ranges  # of the mean entry size: every entry counted in a file
        sliced = read_sliced(path, [0] + [piece.end for piece in slices])  # this small
        assert sliced == [(m.data, m.origin) for m in whole], per_slice
    packed = tmp_path / "list.mbox.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert not MboxFile(packed).plain() and list(MboxFile(packed)) == [
        m.__class__(m.data, m.origin.replace("list.mbox", "list.mbox.gz")) for m in whole
    ]


def test_mboxrd_unescaping_takes_one_level_off_each_from_line_and_nothing_else(
    tmp_path: Path
) -> None:
    on_disk = b">From the first line\n>>From quoted twice\nnot >From a line start\n>Fromage\n"
    path = tmp_path / "rd.mbox"
    path.write_bytes(FROM + b"Subject: s\n\n" + on_disk + b"\n")
    (got,) = iter_mbox(path)
    assert got.data == (b"Subject: s\n\nFrom the first line\n>From quoted twice\n"
                        b"not >From a line start\n>Fromage\n")


def test_workers_reading_slices_store_and_quarantine_the_same(tmp_path: Path) -> None:
    """SQLite only: reading is the point here; storing is tested on both databases."""
    db_url = f"sqlite:///{tmp_path / 'lorelab.db'}"
    db = open_database(db_url)
    path = mbox(tmp_path / "list.mbox")
    settings = IngestSettings(batch_size=2, parse_workers=2)
    summary = ingest(db, MboxFile(path), settings=settings, list_name="linux-mm")
    assert (summary.read, summary.stored, summary.quarantined) == (7, 6, 1)
    db.dispose()
    (bad,) = Lorelab(tmp_path, db_url).json("quarantine", "list")
    assert bad["source"] == f"mbox:{path}#5"


def test_quarantined_entries_keep_their_number_in_the_file_past_empty_slices(
    tmp_path: Path
) -> None:
    """A worker numbers the entries of its slice from 1; the storing process renumbers the
    quarantine rows in the file. An entry larger than a slice leaves the slices after the one
    its From_ line starts in without an entry."""
    entries = [message(n) for n in range(1, 31)]
    entries[6] = b"\n"  # empty
    entries[11] = message(12, b"y" * 200_000 + b"\n")  # over max_message_bytes, many slices
    entries[24] = b" \n"  # empty too, another sha256
    path = tmp_path / "list.mbox"
    path.write_bytes(b"".join(FROM + e + b"\n" for e in entries))
    settings = IngestSettings(batch_size=3, parse_workers=2, max_message_bytes=100_000)
    slices = MboxFile(path).slices(settings.batch_size)
    assert len(slices) == 10 and sum(not piece.mails() for piece in slices) > 3
    db_url = f"sqlite:///{tmp_path / 'lorelab.db'}"
    db = open_database(db_url)
    summary = ingest(db, MboxFile(path), settings=settings, list_name="linux-mm")
    assert (summary.read, summary.stored, summary.quarantined) == (30, 27, 3)
    db.dispose()
    quarantined = Lorelab(tmp_path, db_url).json("quarantine", "list")
    assert {row["source"] for row in quarantined} == {f"mbox:{path}#{n}" for n in (7, 12, 25)}
