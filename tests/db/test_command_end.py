"""The end of a `lorelab` process (bot.cli's `_end_quickly`): it skips the interpreter's
teardown, but still closes every database connection, as the teardown did."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.cli import Lorelab

MAIL = (b"From alice@example.org Mon Dec  1 10:00:00 2026\n"
        b"From: Alice <alice@example.org>\n"
        b"To: linux-mm@kvack.org\n"
        b"Message-ID: <end-of-command@example.org>\n"
        b"Date: Mon, 1 Dec 2026 10:00:00 +0000\n"
        b"Subject: a question\n"
        b"\n"
        b"Why?\n")


def test_a_command_leaves_its_sqlite_database_closed(tmp_path: Path) -> None:
    """SQLite's last connection to close folds the write-ahead log back into the file and
    removes it: a connection left open at the end would leave the log behind."""
    database = tmp_path / "lorelab.db"
    mbox = tmp_path / "one.mbox"
    mbox.write_bytes(MAIL)
    lorelab = Lorelab(tmp_path, f"sqlite:///{database}", process=True)
    assert lorelab.json("ingest", "mbox", str(mbox))["stored"] == 1
    assert sorted(path.name for path in tmp_path.glob("lorelab.db*")) == ["lorelab.db"]
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT msgid FROM messages").fetchall() == [
            ("end-of-command@example.org",)]


def test_a_database_still_in_use_at_the_end_is_closed_too(tmp_path: Path) -> None:
    """As one a module keeps for the whole process (workers/tasks.py's, in eager mode)."""
    database = tmp_path / "kept.db"
    program = (
        "import sqlalchemy as sa\n"
        "import bot.cli\n"
        "from bot.db.session import Database\n"
        f"KEPT = Database('sqlite:///{database}')\n"
        "with KEPT.session() as session:\n"
        "    session.execute(sa.text('CREATE TABLE t (x INTEGER)'))\n"
        "    session.execute(sa.text('INSERT INTO t VALUES (1)'))\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=120)
    assert sorted(path.name for path in tmp_path.glob("kept.db*")) == ["kept.db"]
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
