"""Choosing a runner: a local lab host is refused for real kernels, which it cannot boot."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.benchmarks.readtwice import readtwice
from bot.benchmarks.simulator import simulator
from bot.config.lab_hosts import LabHostSettings
from workers.lab.runners import make_runner


def _image(path: Path, header: bytes) -> Path:
    data = bytearray(0x400)
    data[0x202:0x206] = header
    path.write_bytes(bytes(data))
    return path


def test_a_local_host_refuses_to_compare_kernel_images(tmp_path: Path) -> None:
    # Both sides would run on this host's own kernel: the reply would compare nothing.
    kernels = {"A": _image(tmp_path / "a", b"HdrS"), "B": _image(tmp_path / "b", b"HdrS")}
    local = LabHostSettings(name="here", runner="local")
    with pytest.raises(ValueError, match="boots nothing.*needs a qemu or ssh lab host"):
        make_runner(local, readtwice(mb=8), kernels)
    # Programs (the stand-in tree's "kernels") run on a local host, with a benchmark that runs
    # them; one that measures the host's kernel would compare that kernel with itself.
    programs = {"A": _image(tmp_path / "pa", b"\0\0\0\0"), "B": _image(tmp_path / "pb", b"ELF")}
    assert make_runner(local, simulator(), programs) is not None
    with pytest.raises(ValueError, match="both sides would be this host's kernel"):
        make_runner(local, readtwice(mb=8), programs)
