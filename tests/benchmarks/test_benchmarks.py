"""The reclaim benchmarks (readtwice, anon-swap, memcached) and the registry: parsers on output
recorded from the real programs, and each benchmark run once for real through the local runner."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from bot.benchmarks import anon_swap as anon_swap_module
from bot.benchmarks.anon_swap import BuildError, anon_swap, build, parse_anon_swap
from bot.benchmarks.memcached import LATENCY, OPS, memcached, parse_memaslap
from bot.benchmarks.readtwice import SECONDS, THROUGHPUT, parse_readtwice, readtwice
from bot.benchmarks.registry import BENCHMARKS, benchmark
from tests.support.paths import FIXTURES
from workers.lab.job import CGROUP_ROOT, memcg_path
from workers.lab.local import LocalRunner, RunFailed

LAB_FIXTURES = FIXTURES / "lab"
MEMASLAP = LAB_FIXTURES / "memcached-memcaslap-t3-T2-c16-X4096.txt"
NO_KERNEL = {"A": Path("/nonexistent"), "B": Path("/nonexistent")}  # a userspace benchmark


def _fstype(path: Path) -> str:
    return subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as client:
        return client.connect_ex(("127.0.0.1", port)) == 0


def _memcg_v2_usable() -> str | None:
    """Why the memcg variant cannot run here, or None when it can."""
    controllers = Path(CGROUP_ROOT) / "cgroup.controllers"
    if not controllers.exists():
        return f"{CGROUP_ROOT} is not a cgroup2 mount (cgroup v1 or hybrid layout)"
    if "memory" not in controllers.read_text().split():
        return f"the memory controller is not enabled in {CGROUP_ROOT}"
    if not os.access(CGROUP_ROOT, os.W_OK):
        return f"{CGROUP_ROOT} is not writable by this user"
    return None


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    directory = tmp_path / "scratch"
    directory.mkdir()
    if _fstype(directory) in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on tmpfs; readtwice needs a disk filesystem")
    return directory


# Parsers, on recorded output


def test_readtwice_throughput_and_seconds_from_recorded_output():
    text = (LAB_FIXTURES / "readtwice-512mb-2files.txt").read_text()
    values = parse_readtwice(text)
    assert values == {THROUGHPUT: 1956.9, SECONDS: 0.523277}
    assert values[THROUGHPUT] == pytest.approx(2 * 512 / values[SECONDS], rel=1e-3)


def test_readtwice_output_without_a_throughput_is_an_error():
    text = (LAB_FIXTURES / "readtwice-512mb-2files.txt").read_text()
    with pytest.raises(ValueError, match="mb_per_s"):
        parse_readtwice(text.replace("mb_per_s: 1956.9", "mb_per_s: inf"))
    with pytest.raises(ValueError, match="mb_per_s"):
        parse_readtwice("readtwice: /dev/shm is on tmpfs; give it a directory on a disk filesystem")


def test_anon_swap_passes_from_recorded_output():
    values = parse_anon_swap((LAB_FIXTURES / "anon-swap-256mb.txt").read_text())
    assert values == {
        "anon-swap.throughput": 4680.1,
        "anon-swap.write_throughput": 2363.0,
        "anon-swap.verify_throughput": 241318.4,
        "anon-swap.seconds": 0.109399,
    }
    with pytest.raises(ValueError, match="mb_per_s"):
        parse_anon_swap("mb: 256\npage_size: 4096\nwrite_seconds: 0.108338\n")


def test_memaslap_throughput_and_mean_latency_from_recorded_output():
    text = MEMASLAP.read_text()
    # The global TPS of the run, and the mean of all requests (not the get or set block's).
    assert parse_memaslap(text) == {OPS: 107064.0, LATENCY: 149.0}
    # Without -S memaslap prints no statistics blocks: the throughput alone.
    head = text[: text.index("\x1b")]
    summary = text[text.index("cmd_get:"):]
    assert parse_memaslap(head + summary) == {OPS: 107064.0}


def test_memaslap_output_cut_short_or_doubled_is_an_error():
    text = MEMASLAP.read_text()
    with pytest.raises(ValueError, match="0 'Run time"):
        parse_memaslap(text[: text.index("Run time:")])
    with pytest.raises(ValueError, match="2 'Run time"):
        parse_memaslap(text + text)


# Building anon-swap


def test_anon_swap_is_built_static_once_per_source(tmp_path):
    binary = build(tmp_path)
    assert binary.name == "anon-swap" and binary.parent.parent == tmp_path
    assert "INTERP" not in subprocess.run(["readelf", "-l", str(binary)], capture_output=True,
                                          text=True, check=True).stdout  # no dynamic loader
    built_at = binary.stat().st_mtime_ns
    assert build(tmp_path) == binary and binary.stat().st_mtime_ns == built_at
    usage = subprocess.run([str(binary), "lots"], capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "positive whole number" in usage.stderr


def test_anon_swap_without_gcc_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BuildError, match="install gcc and libc6-dev"):
        build(tmp_path / "cache")


def test_anon_swap_rebuilds_when_its_source_changes(tmp_path, monkeypatch):
    first = build(tmp_path)
    changed = tmp_path / "anon-swap.c"
    changed.write_text(anon_swap_module.SOURCE.read_text().replace("return 2;", "return 4;", 1))
    monkeypatch.setattr(anon_swap_module, "SOURCE", changed)
    second = build(tmp_path)
    assert second != first and second.exists()
    assert subprocess.run([str(second)], capture_output=True, check=False).returncode == 4


# Each benchmark, run for real on this host


def test_readtwice_runs_locally_and_records_reclaim_counters(scratch):
    runner = LocalRunner(readtwice(mb=64, files=2), NO_KERNEL, timeout=60, scratch=scratch)
    by_name = {s.metric: s for s in runner("A", 0, 0)}
    assert by_name[THROUGHPUT].value > 0 and by_name[THROUGHPUT].unit == "MiB/s"
    assert by_name[SECONDS].value > 0
    counters = {name for name in by_name if name.startswith("proc-vmstat.")}
    assert {"proc-vmstat.pgscan_kswapd", "proc-vmstat.pgsteal_kswapd",
            "proc-vmstat.workingset_refault_file"} <= counters
    # allocstall counts stalls (direct reclaim entries), the others pages.
    assert all(by_name[name].unit == ("stalls" if ".allocstall" in name else "pages")
               for name in counters)
    assert list(scratch.iterdir()) == []  # its files are removed, not left to fill the disk


def test_readtwice_refuses_a_tmpfs_directory():
    shm = Path("/dev/shm")
    if not shm.is_dir() or _fstype(shm) != "tmpfs":
        pytest.skip("/dev/shm is not a tmpfs here")
    runner = LocalRunner(readtwice(mb=8, files=1), NO_KERNEL, timeout=30, scratch=shm)
    with pytest.raises(RunFailed, match="tmpfs; give it a directory on a disk filesystem"):
        runner("A", 0, 0)


def test_readtwice_memcg_reclaims_inside_its_memcg(scratch):
    reason = _memcg_v2_usable()
    if reason:
        pytest.skip(f"readtwice-memcg needs a writable cgroup2 with memory: {reason}")
    bench = benchmark("readtwice-memcg", mb=96, files=2, memcg_max="32M")
    by_name = {s.metric: s for s in LocalRunner(bench, NO_KERNEL, timeout=60,
                                                scratch=scratch)("A", 0, 0)}
    assert by_name[THROUGHPUT].value > 0
    # 96 MB read through a 32 MB memcg: its own reclaim must have scanned pages.
    assert by_name["memcg.pgscan"].value > 0


def test_readtwice_memcg_without_a_memcg_fails_rather_than_runs_unlimited(scratch):
    if _memcg_v2_usable() is None:
        pytest.skip("this host has a usable cgroup2 memory controller")
    bench = benchmark("readtwice-memcg", mb=16, files=1)
    with pytest.raises(RunFailed, match="needs /sys/fs/cgroup to be a cgroup2 mount"):
        LocalRunner(bench, NO_KERNEL, timeout=30, scratch=scratch)("A", 0, 0)
    assert not Path(memcg_path(bench)).exists()  # nothing made where the memcg would be


def test_anon_swap_runs_locally(tmp_path):
    # No swap on this host (see the report): below free memory it measures page faults only.
    bench = anon_swap(mb=64, binary=build(tmp_path))
    by_name = {s.metric: s for s in LocalRunner(bench, NO_KERNEL, timeout=60)("B", 1, 1)}
    assert by_name["anon-swap.throughput"].value > 0
    assert by_name["anon-swap.write_throughput"].unit == "MiB/s"
    assert by_name["anon-swap.seconds"].value > 0
    assert "proc-vmstat.pswpout" in by_name


@pytest.mark.skipif(shutil.which("memcached") is None or shutil.which("memcaslap") is None,
                    reason="memcached and memcaslap (libmemcached-tools) are needed")
def test_memcached_runs_locally_and_stops_its_server():
    port = _free_port()
    bench = memcached(memory_mb=64, seconds=1, threads=2, concurrency=4, value_bytes=1024,
                      window="1k", port=port)
    by_name = {s.metric: s for s in LocalRunner(bench, NO_KERNEL, timeout=60)("A", 0, 0)}
    assert by_name[OPS].value > 0 and by_name[OPS].unit == "ops/s"
    assert by_name[LATENCY].value > 0 and by_name[LATENCY].unit == "us"
    assert not _listening(port)


@pytest.mark.skipif(shutil.which("memcached") is None or shutil.which("memcaslap") is None,
                    reason="memcached and memcaslap (libmemcached-tools) are needed")
def test_memcached_in_the_sandbox_has_a_loopback_of_its_own():
    # A server on the host's 127.0.0.1:PORT is not in the job's network namespace: the job
    # starts its own memcached on that port and measures it, not the other one.
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        bench = memcached(memory_mb=64, seconds=1, threads=2, concurrency=4, value_bytes=1024,
                          window="1k", port=other.getsockname()[1])
        by_name = {s.metric: s for s in LocalRunner(bench, NO_KERNEL, timeout=60)("A", 0, 0)}
    assert by_name[OPS].value > 0


# The registry


def test_an_unknown_benchmark_names_the_known_ones():
    with pytest.raises(ValueError, match="no benchmark 'vm-scalability'") as error:
        benchmark("vm-scalability")
    for name in ("hackbench", "reclaim-sim", "readtwice", "readtwice-memcg", "anon-swap",
                 "memcached", "memcached-memcg"):
        assert name in str(error.value)


def test_an_unknown_parameter_names_the_benchmarks_parameters():
    with pytest.raises(ValueError, match="readtwice: .*its parameters: mb, files"):
        benchmark("readtwice", size=64)


def test_every_registered_benchmark_fills_its_argv(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # where anon-swap is built
    for name in BENCHMARKS:
        bench = benchmark(name)
        assert bench.name == name
        argv = bench.argv(kernel="/boot/bzImage", scratch="/mnt/scratch")
        assert not any("{" in part for part in argv), (name, argv)
        # The qemu runner runs commands in a chroot of this host: programs by absolute path.
        for part in argv:
            if "/" in part and part not in ("/boot/bzImage", "/mnt/scratch"):
                assert Path(part).is_absolute() and Path(part).exists(), (name, part)
        assert bench.main_metrics and all(0 < m.delta < 0.1 for m in bench.metrics)
        assert (bench.memcg_max is not None) == name.endswith("-memcg")
        # A campaign stores the parameters and makes the benchmark again from them to judge it.
        again = benchmark(name, **bench.parameters)
        assert again.argv(kernel="/k", scratch="/s") == bench.argv(kernel="/k", scratch="/s")
        assert again.metrics == bench.metrics and again.memcg_max == bench.memcg_max
    small = benchmark("memcached-memcg", memcg_max="1G")
    assert small.memcg_max == small.parameters["memcg_max"] == "1G"
    assert benchmark("readtwice", mb=64).argv(scratch="/s") == [
        "sh", str(Path(anon_swap_module.__file__).with_name("scripts") / "readtwice.sh"),
        "/s", "64", "0"]
