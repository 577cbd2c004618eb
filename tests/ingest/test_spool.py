"""Prepared batches go from the parse workers to the storing process through a spool of files
in memory: each comes back whole, nothing is left behind, a spool that cannot take a batch
hands it back in-band, and the spools of killed ingests are removed later."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

from bot.config import IngestSettings
from bot.ingest.prepare import PreparedBatch, prepare_all, prepare_batch
from bot.ingest.sources import RawMail
from bot.ingest.spool import (
    ABANDONED_AFTER,
    PREFIX,
    Spool,
    default_root,
    hand_over,
    take_back,
)
from tests.support.paths import REPO


def mails(count: int) -> list[RawMail]:
    return [RawMail((f"From: a{i}@example.org\nSubject: [PATCH] note {i}\n"
                     f"Message-ID: <n{i}@example.org>\nDate: Tue, 1 Dec 2026 09:00:00 +0000\n\n"
                     + "Reclaim words.\n" * 30).encode(), f"test#{i}") for i in range(count)]


def test_a_batch_comes_back_whole_and_its_file_is_gone(tmp_path: Path) -> None:
    batch = prepare_batch(mails(50), IngestSettings())
    with Spool(tmp_path) as spool:
        handed = hand_over(batch, spool.path)
        assert isinstance(handed, str) and Path(handed).parent == Path(spool.path)
        back = take_back(handed, redo=lambda: None)
        assert isinstance(back, PreparedBatch)
        assert back.messages == batch.messages and back.read == 50
        assert not os.listdir(spool.path)
    assert not Path(spool.path).exists()


def test_a_batch_whose_file_was_removed_is_prepared_again(tmp_path: Path) -> None:
    batch = prepare_batch(mails(50), IngestSettings())
    with Spool(tmp_path) as spool:
        handed = hand_over(batch, spool.path)
        os.unlink(handed)  # as systemd-logind's RemoveIPC does at logout
        assert take_back(handed, redo=lambda: "prepared again") == "prepared again"


def test_a_pooled_ingest_leaves_no_spool_behind(tmp_path: Path) -> None:
    settings = IngestSettings(batch_size=40, parse_workers=2)
    got = list(prepare_all([mails(200)[i : i + 40] for i in range(0, 200, 40)], settings))
    assert [b.read for b in got] == [40] * 5
    assert [r.msgid for b in got for r in b.messages] == [f"n{i}@example.org" for i in range(200)]
    assert not list(default_root().glob(f"{PREFIX}{os.getpid()}-*"))


def test_a_spool_that_cannot_take_a_batch_hands_it_back(tmp_path: Path) -> None:
    batch = prepare_batch(mails(50), IngestSettings())
    assert hand_over(batch, str(tmp_path / "gone")) is batch  # its directory was removed
    # A file size limit as a full tmpfs: the write fails (EFBIG) part way through the batch.
    script = (
        "import pickle, resource, signal, sys\n"
        "from bot.ingest.spool import hand_over\n"
        "batch = pickle.loads(sys.stdin.buffer.read())\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))\n"
        f"handed = hand_over(batch, {str(tmp_path)!r})\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))\n"
        "sys.stdout.buffer.write(pickle.dumps(handed))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(batch),
                          capture_output=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    handed = pickle.loads(done.stdout)
    assert isinstance(handed, PreparedBatch) and handed.messages == batch.messages
    assert not list(tmp_path.iterdir()), "the part written was left behind"


def test_spools_of_processes_gone_are_removed_once_untouched(tmp_path: Path) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    old = time.time() - ABANDONED_AFTER - 60

    def spool_of(pid: int, name: str, mtime: float) -> Path:
        path = tmp_path / f"{PREFIX}{pid}-{name}"
        path.mkdir()
        (path / "batch").write_bytes(b"x" * 1000)
        os.utime(path, (mtime, mtime))
        return path

    abandoned = spool_of(ended.pid, "a", old)
    recent = spool_of(ended.pid, "b", time.time())  # another pid namespace's, maybe
    running = spool_of(os.getpid(), "c", old)  # this process is alive
    other = tmp_path / "unrelated"
    other.mkdir()
    with Spool(tmp_path):
        assert not abandoned.exists()
        assert recent.exists() and running.exists() and other.exists()
