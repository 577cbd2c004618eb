"""Parse workers die with the process that started them, even when it is killed (SIGKILL), and
the spool it handed batches through is removed by a later ingest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bot.demo.threads import as_mbox
from tests.support.paths import REPO
from tests.support.spools import remove_spools_of


def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def wait_until(condition, limit: float = 60) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_parse_workers_end_when_their_ingest_is_killed(tmp_path: Path) -> None:
    mails = [(f"From: a{i}@example.org\nTo: linux-mm@kvack.org\nSubject: note {i}\n"
              f"Message-ID: <n{i}@example.org>\nDate: Tue, 1 Dec 2026 09:00:00 +0000\n\n"
              + "Some words about reclaim.\n" * 40).encode() for i in range(30_000)]
    mbox = tmp_path / "big.mbox"
    mbox.write_bytes(as_mbox(mails))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LORELAB_")},
           "LORELAB_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
           "LORELAB_INGEST_PARSE_WORKERS": "2", "LORELAB_INGEST_BATCH_SIZE": "100",
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "PYTHONPATH": str(REPO)}
    ingest = subprocess.Popen(
        [sys.executable, "-c", "from bot.cli import main; main()", "ingest", "mbox", str(mbox),
         "--list", "linux-mm"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: len(children(ingest.pid)) >= 2 or ingest.poll() is not None)
        workers = children(ingest.pid)
        assert ingest.poll() is None and len(workers) >= 2, "the ingest ended before its workers"
    finally:
        ingest.send_signal(signal.SIGKILL)
        ingest.wait()
    assert wait_until(lambda: not any(alive(w) for w in workers), limit=30), \
        [w for w in workers if alive(w)]

    # The killed ingest's spool is left, and removed by a later one once old enough.
    assert remove_spools_of(ingest.pid), "the killed ingest had no spool"
