"""SQLite's page size: a database lorelab makes has 64 KB pages, one made before keeps its 4 KB
pages, and mail of every size goes in and comes back exactly on both (bot/db/session.py)."""

from __future__ import annotations

import contextlib
import random
import sqlite3
from pathlib import Path

from bot.db.session import SQLITE_PAGE_SIZE
from tests.cli import Lorelab

FROM = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"
# Raw mail bytes per message: a one-line reply, a patch near a 4 KB page, and mails that needed
# a chain of overflow pages in 4 KB pages (and one a whole 64 KB page cannot hold).
SIZES = (200, 3_900, 9_000, 70_000, 300_000)


def mails() -> list[bytes]:
    rng = random.Random(7)
    out = []
    for n, size in enumerate(SIZES):
        # hex of random bytes: compresses to about half, as list mail does at most
        body = rng.randbytes(size // 2).hex().encode()
        lines = b"\n".join(body[i : i + 72] for i in range(0, len(body), 72)) + b"\n"
        out.append(f"From: Ada <ada@example.org>\nSubject: [PATCH] size {size}\n"
                   f"Message-ID: <m{n}@example.org>\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n\n"
                   .encode() + lines)  # fmt: skip
    return out


def page_size(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("PRAGMA page_size").fetchone()[0]


def ingest_and_read_back(lorelab: Lorelab, tmp_path: Path) -> None:
    sent = mails()
    (tmp_path / "list.mbox").write_bytes(b"".join(FROM + mail + b"\n" for mail in sent))
    stored = lorelab.json("ingest", "mbox", str(tmp_path / "list.mbox"))
    assert stored["stored"] == len(SIZES) and stored["quarantined"] == 0
    for n, mail in enumerate(sent):
        assert lorelab.run("message", "show", f"m{n}@example.org", "--raw").stdout == mail


def test_a_new_database_has_64_kb_pages_and_keeps_mail_of_every_size(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    lorelab = Lorelab(tmp_path, f"sqlite:///{db}")
    ingest_and_read_back(lorelab, tmp_path)
    assert page_size(db) == SQLITE_PAGE_SIZE == 65536


def test_a_database_made_with_4_kb_pages_keeps_them_and_works(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:  # as lorelab made them before
        conn.execute("PRAGMA page_size=4096")
        conn.execute("PRAGMA journal_mode=WAL")
    lorelab = Lorelab(tmp_path, f"sqlite:///{db}")
    lorelab.run("db", "upgrade")
    ingest_and_read_back(lorelab, tmp_path)
    assert page_size(db) == 4096
