"""The `local` runner and the pair loop together, on simulators built from the stand-in tree."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from bot.analysis.verdict import Verdict
from bot.benchmarks.definition import Benchmark
from bot.benchmarks.simulator import THROUGHPUT, simulator
from bot.demo.simtree import BATCH_COUNTERS, SIM_FILES
from workers.lab.local import LocalRunner, RunFailed
from workers.lab.pairs import run_pairs

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]


def _build(root: Path, *, batched: bool) -> Path:
    """The simulator, built with the tree's own Makefile; with the batching series applied when
    `batched` (each patch replaces one line, as bot.demo.simtree's Change says)."""
    for name, text in SIM_FILES.items():
        if batched:
            for change in BATCH_COUNTERS:
                if change.path == name:
                    text = text.replace(change.old, change.variants[0])
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for goal in ("defconfig", "bzImage"):
        subprocess.run(["make", "-s", "O=out", goal], cwd=root, check=True, capture_output=True,
                       timeout=120)
    return root / "out" / "arch" / "x86" / "boot" / "bzImage"


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sim")
    return {"base": _build(root / "base", batched=False),
            "batched": _build(root / "batched", batched=True)}


def test_one_local_run_gives_samples_and_reclaim_counter_changes(kernels):
    runner = LocalRunner(simulator(ops_per_cpu=100_000), {"A": kernels["base"],
                                                         "B": kernels["base"]})
    samples = runner("B", 3, 1)
    by_name = {s.metric: s for s in samples}
    throughput = by_name[THROUGHPUT]
    assert throughput.value > 0 and throughput.unit == "ops/s"
    assert (throughput.kernel, throughput.pair_index, throughput.position) == ("B", 3, 1)
    assert throughput.accel == "none" and throughput.host and throughput.boot_id
    # The simulator's own counters; the host's /proc/vmstat says nothing about a program that
    # stands for a kernel, so none of it is recorded.
    assert by_name["reclaim-sim.pgscan"].value > 0
    assert not any(name.startswith("proc-vmstat.") for name in by_name)


def test_a_a_on_the_base_simulator_declares_no_change(kernels):
    # The host is shared and the simulator's CV is large (10-20% here), so judge against a
    # 25% delta: the A/A claim is that no change of that size is declared.
    bench = simulator(ops_per_cpu=300_000, delta=0.25)
    runner = LocalRunner(bench, {"A": kernels["base"], "B": kernels["base"]}, timeout=60)
    result = run_pairs(runner, bench.metrics, seed=20261130, warmup_pairs=1, k_max=30)
    comparison = result.comparisons[THROUGHPUT]
    assert comparison.stopped
    assert not (comparison.changed and comparison.beyond_delta)
    assert len(result.warmups) > 0 and len(result.orders) == result.pairs


# The series is faster only with two CPUs updating the shared counters (bot.demo.simtree): with
# another test busy on one of them, the simulator's two threads share the other and the gain goes.
@pytest.mark.alone
def test_the_batching_series_is_an_improvement_of_the_base_simulator(kernels):
    # Runs of a quarter of a second: shorter ones drown the gain in a shared machine's noise.
    bench = simulator(ops_per_cpu=3_000_000)
    runner = LocalRunner(bench, {"A": kernels["base"], "B": kernels["batched"]}, timeout=60)
    result = run_pairs(runner, bench.metrics, seed=5, warmup_pairs=1, k_max=30)
    comparison = result.comparisons[THROUGHPUT]
    assert comparison.verdict is Verdict.IMPROVEMENT
    assert comparison.change_pct > 5
    assert result.stopped_early


def test_a_run_that_fails_or_prints_no_result_is_a_run_failure(tmp_path):
    script = tmp_path / "bench.sh"
    script.write_text("#!/bin/sh\necho 'no result'\nexit $1\n")
    script.chmod(0o755)
    bench = Benchmark(name="broken", command=("{kernel}", "{code}"), parameters={"code": 0},
                      parse=simulator().parse, metrics=simulator().metrics)
    runner = LocalRunner(bench, {"A": script, "B": script}, timeout=10)
    with pytest.raises(RunFailed, match="ops/s"):
        runner("A", 0, 0)
    failing = LocalRunner(replace(bench, parameters={"code": 3}),
                          {"A": script, "B": script})
    with pytest.raises(RunFailed, match="exited 3"):
        failing("A", 0, 0)
    slow = tmp_path / "slow.sh"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    with pytest.raises(RunFailed, match="timed out"):
        LocalRunner(bench, {"A": slow, "B": slow}, timeout=0.2)("A", 0, 0)


def test_a_program_built_from_a_patch_runs_without_secrets_network_or_a_writable_tree(
        tmp_path, monkeypatch):
    # The "kernel" is the patched program, under the worker's home: it tries to read a secret
    # from its environment and one from the home's .ssh, reach a server on this host, and
    # write next to itself. None of that may work.
    import socket

    secret = "lorelab-secret-" + str(id(tmp_path))
    monkeypatch.setenv("LORELAB_SMTP_PASSWORD", secret)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519").write_text(secret)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe = tmp_path / "probe.sh"
        probe.write_text(
            "#!/bin/sh\n"
            "env | grep -c lorelab-secret || true\n"
            f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo isolated\n"
            f"touch {tmp_path}/written 2>/dev/null && echo wrote || echo read-only\n"
            f"cat {tmp_path}/.ssh/id_ed25519 2>/dev/null || echo hidden\n"
            "echo 'ops/s: 1'\n")
        probe.chmod(0o755)
        outputs: list[str] = []

        def parse(output: str) -> dict[str, float]:
            outputs.append(output)
            return simulator().parse(output)

        bench = Benchmark(name="probe", command=("bash", "{kernel}"), parameters={},
                          parse=parse, metrics=simulator().metrics)
        LocalRunner(bench, {"A": probe, "B": probe}, timeout=30)("A", 0, 0)
        server.settimeout(0.5)
        with pytest.raises(TimeoutError):
            server.accept()  # nobody connected
    assert outputs[0].splitlines()[:4] == ["0", "isolated", "read-only", "hidden"]
    assert not (tmp_path / "written").exists()
