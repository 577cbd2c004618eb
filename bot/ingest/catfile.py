"""Reading many blobs of one repository through `git cat-file --batch`, bad objects included.

One long-running process answers blob ids in order without a round trip per blob (a writer
thread feeds ids while the caller reads), which is what makes a backfill fast. Real archives
and partial mirrors have objects that are missing or corrupt: each is answered with the reason
instead of the content, and the read goes on (a fresh process takes over when git dies on a
corrupt object mid-stream). Content is checked against its object id, so a blob that inflates
to the wrong bytes is caught too.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bot.git import BOUNDED_PACK_MAPS


@dataclass(frozen=True)
class Blob:
    """A blob's content, or why there is none (`data` is None exactly when `problem` is set)."""

    oid: str
    data: bytes | None
    problem: str | None = None


def object_id(data: bytes, oid_length: int) -> str:
    """The git object id of a blob with this content (SHA-1, or SHA-256 for 64-digit ids)."""
    digest = hashlib.sha256 if oid_length == 64 else hashlib.sha1
    h = digest(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _last_line(text: bytes) -> str:
    lines = [line for line in text.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def why_unreadable(git_dir: Path, oid: str) -> str:
    """Why `cat-file --batch` said "missing": absent, or present but corrupt (git says which)."""
    proc = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "-t", oid],
                          capture_output=True)
    said = _last_line(proc.stderr)
    if any(word in said for word in ("corrupt", "inflate", "unable to unpack", "bad object")):
        return f"corrupt object: {said}"
    return "missing object (not in the repository)"


class _Batch:
    """One `git cat-file --batch` process fed `oids` by a writer thread."""

    def __init__(self, git_dir: Path, oids: list[str]) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), *BOUNDED_PACK_MAPS, "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=1 << 20,
        )
        self.writer = threading.Thread(target=self._feed, args=(oids,), daemon=True)
        self.writer.start()

    def _feed(self, oids: list[str]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            for oid in oids:
                stdin.write(oid.encode() + b"\n")
            stdin.close()
        except (BrokenPipeError, ValueError):
            pass  # git died on a corrupt object; a new process takes over

    def error_text(self) -> str:
        self.proc.wait()
        self.stderr.seek(0)
        return _last_line(self.stderr.read()) or f"git cat-file exited {self.proc.returncode}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.writer.join(timeout=5)
        for stream in (self.proc.stdout, self.stderr):
            if stream is not None:
                stream.close()


def read_blobs(git_dir: Path, oids: list[str]) -> Iterator[Blob]:
    """Each of `oids`, in order: its content, or the reason it cannot be read."""
    start = 0
    while start < len(oids):
        batch = _Batch(git_dir, oids[start:])
        out = batch.proc.stdout
        assert out is not None
        try:
            while start < len(oids):
                oid = oids[start]
                header = out.readline().split()
                if not header:  # git died: the object it was on is corrupt
                    yield Blob(oid, None, f"corrupt object: {batch.error_text()}")
                    start += 1
                    break
                kind = header[1] if len(header) > 1 else b""
                if kind == b"missing":
                    yield Blob(oid, None, why_unreadable(git_dir, oid))
                    start += 1
                    continue
                size = int(header[2]) if len(header) > 2 else 0
                data = out.read(size)
                if len(data) < size:  # git died mid-stream
                    yield Blob(oid, None, f"corrupt object: {batch.error_text()}")
                    start += 1
                    break
                out.read(1)  # the newline after each object
                if kind != b"blob":
                    yield Blob(oid, None, f"not a blob but a {kind.decode(errors='replace')}")
                elif object_id(data, len(oid)) != oid:
                    yield Blob(oid, None, "corrupt object: content does not match its id")
                else:
                    yield Blob(oid, data)
                start += 1
        finally:
            batch.close()
