"""Bombs before the sandbox: a series whose `GIT binary patch` hunks are small in the mail and
huge once inflated, applied (outside the sandbox) on the stand-in tree. Each apply runs in a
fresh Python process so that its children's peak RSS (getrusage) is its own: the tests count
bytes, not time."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from bot.demo.simtree import make_sim_tree
from tests.support.paths import REPO
from workers.kernel.binary_patch import binary_hunks

GIB = 1 << 30


def _base85_lines(data: bytes) -> str:
    lines = []
    for start in range(0, len(data), 52):
        chunk = data[start:start + 52]
        size = len(chunk)
        prefix = chr(ord("A") + size - 1) if size <= 26 else chr(ord("a") + size - 27)
        lines.append(prefix + base64.b85encode(chunk, pad=True).decode())
    return "\n".join(lines) + "\n"


def _zeros_deflated(size: int) -> tuple[bytes, str]:
    """`size` zero bytes, deflated as git does, and the blob id git expects of them."""
    deflater, blob = zlib.compressobj(9), hashlib.sha1(f"blob {size}\0".encode())
    out, chunk = [], bytes(1 << 20)
    for start in range(0, size, len(chunk)):
        piece = chunk[:min(len(chunk), size - start)]
        out.append(deflater.compress(piece))
        blob.update(piece)
    out.append(deflater.flush())
    return b"".join(out), blob.hexdigest()


def _mail(diff: str) -> bytes:
    return (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Mallory <mallory@example.org>\nDate: Tue, 1 Dec 2026 10:00:00 +0000\n"
        "Subject: [PATCH] firmware: add a blob\n\nA blob.\n---\n" + diff + "--\n2.39.5\n\n"
    ).encode()


def literal_bomb(size: int) -> bytes:
    """A mail adding firmware.bin, `size` zero bytes: about size/1000 on the wire."""
    deflated, blob = _zeros_deflated(size)
    return _mail(
        "diff --git a/firmware.bin b/firmware.bin\nnew file mode 100644\n"
        f"index 0000000000000000000000000000000000000000..{blob}\nGIT binary patch\n"
        f"literal {size}\n{_base85_lines(deflated)}\nliteral 0\nHcmV?d00001\n\n")


def delta_bomb(source: bytes, size: int) -> bytes:
    """A mail whose delta against `source` (mm/vmscan.c) makes a file of `size` bytes by
    copying all of it over and over: a few hundred KiB of instructions."""
    def varint(value: int) -> bytes:
        out = bytearray()
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)

    length = len(source)
    copies = size // length
    copy = bytes([0x80 | 0x10 | 0x20, length & 0xFF, (length >> 8) & 0xFF])  # offset 0
    delta = varint(length) + varint(copies * length) + copy * copies
    deflated = zlib.compress(delta, 9)
    old = hashlib.sha1(f"blob {length}\0".encode() + source).hexdigest()
    new = hashlib.sha1(f"blob {copies * length}\0".encode())
    for _ in range(copies):
        new.update(source)
    return _mail(
        f"diff --git a/mm/vmscan.c b/mm/vmscan.c\nindex {old}..{new.hexdigest()} 100644\n"
        f"GIT binary patch\ndelta {len(delta)}\n{_base85_lines(deflated)}\n"
        "delta 0\nHcmV?d00001\n\n")


_APPLY = """
import json, resource, sys
from pathlib import Path
from workers.kernel.apply import UnsafePatch, apply_mbox
tree, work, mbox, options = sys.argv[1], sys.argv[2], Path(sys.argv[3]).read_bytes(), sys.argv[4]
base = "master"
try:
    result = apply_mbox(Path(tree), Path(work), "sim", "bomb", base, mbox, **json.loads(options))
    outcome = {"ok": result.ok, "output": result.output}
except UnsafePatch as exc:
    outcome = {"refused": str(exc)}
outcome["children_max_rss"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps(outcome))
"""


def _apply_elsewhere(tmp_path: Path, mbox: bytes, **options: int) -> dict:
    tree = make_sim_tree(tmp_path / "linux")
    (tmp_path / "bomb.mbox").write_bytes(mbox)
    proc = subprocess.run([sys.executable, "-c", _APPLY, str(tree), str(tmp_path / "work"),
                           str(tmp_path / "bomb.mbox"), json.dumps(options)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_binary_hunk_sizes_are_read_without_inflating_them(tmp_path):
    source = (make_sim_tree(tmp_path / "linux") / "mm/vmscan.c").read_bytes()
    hunks = list(binary_hunks(delta_bomb(source, GIB)))
    assert hunks[0].kind == "delta" and GIB - len(source) < hunks[0].result_bytes <= GIB
    assert hunks[0].data_bytes < GIB // 1000


def test_a_gigabyte_literal_in_a_small_mail_is_refused_before_git_inflates_it(tmp_path):
    mbox = literal_bomb(GIB)
    assert len(mbox) < 3 << 20  # small on the wire
    outcome = _apply_elsewhere(tmp_path, mbox)
    assert "binary files of more than 64 MiB" in outcome["refused"]
    assert "1073741824" in outcome["refused"]
    assert outcome["children_max_rss"] < 128 << 20  # git never held it (it was 2.1 GB)


def test_a_delta_that_makes_a_gigabyte_is_refused(tmp_path):
    source = (make_sim_tree(tmp_path / "src") / "mm/vmscan.c").read_bytes()
    outcome = _apply_elsewhere(tmp_path, delta_bomb(source, GIB))
    assert "a delta hunk of 10737" in outcome["refused"]  # 1 GiB, to a copy of vmscan.c


@pytest.mark.skipif(not Path("/sys/fs/cgroup").exists(), reason="no cgroup tree")
def test_what_the_size_check_lets_through_is_bounded_by_git_ams_memory_limit(tmp_path):
    # Allowed by the size check (512 MiB), over the memory git am gets (96 MiB).
    outcome = _apply_elsewhere(tmp_path, literal_bomb(256 << 20), max_binary_mb=512,
                               memory_mb=96)
    if "no memory cgroup on this host" in outcome.get("output", ""):
        pytest.skip("this host gives no memory cgroup")
    assert outcome["ok"] is False
    assert "git am exceeded its memory limit (96 MiB)" in outcome["output"]
    assert outcome["children_max_rss"] < 160 << 20  # inflating it all takes 256 MiB and more
