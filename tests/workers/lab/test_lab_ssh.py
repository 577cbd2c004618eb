"""The `ssh` runner against a real sshd on 127.0.0.1, with the kexec replaced by a fake reboot.

The fake reboot (`boot_command`) writes a fresh uuid where `boot_id_command` reads it, and notes
which kernel it was asked to boot; everything else (the copy, the wait for a new boot id, the job,
the results coming back) is what a real lab machine sees.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from bot.benchmarks.definition import Benchmark
from bot.benchmarks.hackbench import TIME_METRIC, hackbench, parse_hackbench
from bot.config.lab_hosts import LabHostSettings
from tests.support.sshd import Sshd, free_port, start_sshd, why_no_sshd
from workers.lab.pairs import run_pairs
from workers.lab.ssh import RunFailed, SshRunner, remote_kernel_path

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.skipif(why_no_sshd() is not None, reason=why_no_sshd() or ""),
]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory) -> Sshd:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """The fake machine's state: its boot id, and a log of the kernels it booted."""
    root = tmp_path / "machine"
    root.mkdir()
    (root / "boot_id").write_text("first-boot\n")
    (root / "jobs").mkdir()
    return root


def lab_host(sshd: Sshd, machine: Path, **changes) -> LabHostSettings:
    m = machine
    host = LabHostSettings(
        name="lab1", runner="ssh", address="127.0.0.1", port=sshd.port, user=sshd.user,
        key=str(sshd.client_key), kernel_dir=str(m / "boot"), job_dir=str(m / "jobs"),
        timeout=30,
        boot_command=(f"cat /proc/sys/kernel/random/uuid > {m}/boot_id; "
                      f"echo {{kernel}} >> {m}/booted; env > {m}/env"),
        boot_id_command=f"cat {m}/boot_id")
    return replace(host, **changes)


def small_benchmark() -> Benchmark:
    """hackbench at its smallest, or a script printing hackbench's output where it is missing."""
    if shutil.which("hackbench"):
        return hackbench(groups=1, loops=20)
    return Benchmark(name="hackbench", command=("sh", "-c", "echo 'Time: 0.010'"),
                     parameters={}, parse=parse_hackbench, metrics=hackbench().metrics)


@pytest.fixture
def kernels(tmp_path: Path) -> dict[str, Path]:
    images = {}
    for name in ("A", "B"):
        images[name] = tmp_path / f"bzImage-{name}"
        images[name].write_bytes(f"kernel {name}\n".encode() + os.urandom(64 * 1024))
    return images


def test_one_run_boots_the_kernel_and_gives_bare_samples_of_that_boot(sshd, machine, kernels,
                                                                      tmp_path, monkeypatch):
    # Debian's ssh_config sends LC_*, and this sshd accepts any variable: the runner sends none.
    monkeypatch.setenv("LC_LORELAB_SECRET", "do-not-send")
    host = lab_host(sshd, machine)
    runner = SshRunner(small_benchmark(), kernels, host, known_hosts=tmp_path / "known_hosts")

    samples = runner("B", 3, 1)

    by_name = {s.metric: s for s in samples}
    time = by_name[TIME_METRIC]
    assert time.value >= 0 and time.unit == "s"
    assert (time.kernel, time.pair_index, time.position) == ("B", 3, 1)
    assert time.accel == "bare" and time.host == "lab1"
    boot_id = (machine / "boot_id").read_text().strip()
    assert boot_id != "first-boot" and {s.boot_id for s in samples} == {boot_id}
    assert any(name.startswith("proc-vmstat.") for name in by_name)
    remote = Path(remote_kernel_path(host, "B"))
    assert remote.read_bytes() == kernels["B"].read_bytes()
    assert (machine / "booted").read_text().split() == [str(remote)]
    assert "LC_LORELAB_SECRET" not in (machine / "env").read_text()
    assert "127.0.0.1" in (tmp_path / "known_hosts").read_text()
    assert list((machine / "jobs").iterdir()) == []  # the job's directory is gone


def test_a_kernel_already_on_the_machine_is_not_copied_again(sshd, machine, kernels, tmp_path):
    host = lab_host(sshd, machine)
    runner = SshRunner(small_benchmark(), kernels, host, known_hosts=tmp_path / "known_hosts")
    runner("A", 0, 0)
    remote = Path(remote_kernel_path(host, "A"))
    os.utime(remote, (1_000_000_000, 1_000_000_000))
    runner("A", 1, 0)
    assert remote.stat().st_mtime == 1_000_000_000
    # A changed image under the same name is copied: the check is by content.
    kernels["A"].write_bytes(b"rebuilt kernel A\n")
    runner("A", 2, 0)
    assert remote.read_bytes() == b"rebuilt kernel A\n"
    assert len((machine / "booted").read_text().split()) == 3


def test_a_boot_id_that_never_changes_is_a_kernel_that_did_not_boot(sshd, machine, kernels,
                                                                   tmp_path):
    host = lab_host(sshd, machine, timeout=1,
                    boot_command="echo 'kexec_load failed: Operation not permitted' >&2; exit 1")
    runner = SshRunner(small_benchmark(), kernels, host, known_hosts=tmp_path / "known_hosts")
    with pytest.raises(RunFailed, match="did not boot") as failure:
        runner("A", 0, 0)
    message = str(failure.value)
    assert "first-boot" in message and "kexec_load failed" in message


def test_a_benchmark_failing_on_the_machine_is_a_run_failure_with_its_stderr(sshd, machine,
                                                                              kernels, tmp_path):
    failing = Benchmark(name="hackbench", command=("sh", "-c", "echo 'no memory' >&2; exit 3"),
                        parameters={}, parse=parse_hackbench, metrics=hackbench().metrics)
    runner = SshRunner(failing, kernels, lab_host(sshd, machine),
                       known_hosts=tmp_path / "known_hosts")
    with pytest.raises(RunFailed, match="hackbench exited 3: no memory"):
        runner("A", 0, 0)


def test_a_refused_key_a_closed_port_and_a_missing_key_say_what_to_check(sshd, machine, kernels,
                                                                        tmp_path):
    known_hosts = tmp_path / "known_hosts"
    bench = small_benchmark()
    wrong_key = lab_host(sshd, machine, key=str(sshd.other_key))
    with pytest.raises(RunFailed, match="refused the key") as refused:
        SshRunner(bench, kernels, wrong_key, known_hosts=known_hosts)("A", 0, 0)
    assert "Permission denied" in str(refused.value)
    assert str(sshd.other_key) not in str(refused.value)

    closed = lab_host(sshd, machine, port=free_port())
    with pytest.raises(RunFailed, match="Connection refused.*check that sshd runs there"):
        SshRunner(bench, kernels, closed, known_hosts=known_hosts)("A", 0, 0)

    missing = lab_host(sshd, machine, key=str(tmp_path / "no-such-key"))
    with pytest.raises(RunFailed, match="`key` file does not exist") as absent:
        SshRunner(bench, kernels, missing, known_hosts=known_hosts)("A", 0, 0)
    assert "no-such-key" not in str(absent.value)
    assert not (machine / "booted").exists()


def test_run_pairs_over_ssh_boots_each_kernel_in_the_drawn_order(sshd, machine, kernels,
                                                               tmp_path):
    host = lab_host(sshd, machine)
    bench = small_benchmark()
    runner = SshRunner(bench, kernels, host, known_hosts=tmp_path / "known_hosts")

    # Four pairs: the fewest the sequential test can judge (its calibration needs four looks).
    result = run_pairs(runner, bench.metrics, seed=11, warmup_pairs=0, k_min=4, k_max=4)

    assert result.pairs == 4 and TIME_METRIC in result.comparisons
    booted = (machine / "booted").read_text().split()
    drawn = "".join(result.orders)
    assert booted == [remote_kernel_path(host, kernel) for kernel in drawn]
    for kernel in "AB":
        assert len(result.values(TIME_METRIC, kernel)) == 4
        assert Path(remote_kernel_path(host, kernel)).read_bytes() == kernels[kernel].read_bytes()
    # Every boot is a new boot, and its samples carry its boot id.
    boot_ids = [s.boot_id for s in result.samples if s.metric == TIME_METRIC]
    assert len(set(boot_ids)) == len(drawn) == 8
