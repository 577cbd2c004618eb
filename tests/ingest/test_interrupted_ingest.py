"""Ctrl-C during a long `lorelab ingest mbox`: it says how far it got and how to go on, exits
130, and loses nothing: a second run stores exactly what the first did not."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.cli import Lorelab

MESSAGES = 10_000


def _write_mbox(path: Path, count: int) -> None:
    with path.open("w") as out:
        for n in range(count):
            out.write(f"From ada@example.org Mon Jan  1 00:00:00 2024\n"
                      f"From: Ada <ada@example.org>\nTo: linux-mm@kvack.org\n"
                      f"Subject: question {n}\nMessage-ID: <q{n}@example.org>\n"
                      f"Date: Mon, 1 Jan 2024 00:00:00 +0000\n\n"
                      f"Is {n} a number worth asking about?\n\n")


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_ctrl_c_says_how_far_it_got_and_loses_nothing(tmp_path: Path) -> None:
    mbox, db = tmp_path / "big.mbox", tmp_path / "lorelab.db"
    _write_mbox(mbox, MESSAGES)
    lorelab = Lorelab(tmp_path, f"sqlite:///{db}")
    env = {**lorelab.env, "LORELAB_INGEST_BATCH_SIZE": "100"}
    # In a session of its own: Ctrl-C on a terminal signals the whole process group, the
    # parse workers too.
    proc = subprocess.Popen([sys.executable, "-c", "from bot.cli import main; main()",
                             "ingest", "mbox", str(mbox)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while _stored(db) == 0 and proc.poll() is None:
        time.sleep(0.05)  # waiting for the first batch, not proving anything by time
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    err = stderr.decode()
    assert proc.returncode == 130, err
    said = re.fullmatch(r"lorelab: interrupted after (\d+) stored; run again to continue\n", err)
    assert said, err
    first = _stored(db)
    assert 0 < int(said[1]) == first < MESSAGES  # the count said is what is stored

    again = lorelab.json("ingest", "mbox", str(mbox), LORELAB_INGEST_BATCH_SIZE="100")
    assert again["stored"] == MESSAGES - first
    assert again["duplicates"] == first and again["quarantined"] == 0
    assert _stored(db) == MESSAGES
