"""The `qemu` runner, booting Debian's generic kernel under TCG (or KVM where it works).

Under TCG on two cores a guest of the kernel from linux-image-amd64 (its virtio, 9p and ext4
modules in the initramfs) starts its job about 3 s after qemu starts (7 s booted through the
bzImage's decompressor); the whole file takes about 45 s. The kernel package is downloaded once
with `apt-get download` into the user's cache (~70 MB, 400 MB unpacked). The guest sees none of
the host's files but its /usr and the job share (tests below try to read more).
"""

from __future__ import annotations

import gzip
import os
import re
import secrets
import shutil
import struct
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
import zstandard

from bot.benchmarks.definition import Benchmark, Metric
from bot.benchmarks.hackbench import TIME_METRIC, hackbench
from bot.benchmarks.registry import benchmark
from bot.config.lab_hosts import LabHostSettings
from workers.lab.initramfs import InitramfsError, build_initramfs, module_load_order
from workers.lab.kernel_image import DistroKernel, debian_kernel, direct_boot_image
from workers.lab.qemu import (
    QemuRunner,
    RunFailed,
    boot_failure,
    guest_argv,
    qemu_command,
    run_qemu,
)

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                       reason="qemu-system-x86_64 is not installed (Debian: qemu-system-x86)"),
    pytest.mark.skipif(shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None,
                       reason="apt-get and dpkg-deb are needed to fetch Debian's kernel"),
]

GUEST_MB = 256


@pytest.fixture(scope="module")
def kernel() -> DistroKernel:
    return debian_kernel()


def qemu_host(kernel: DistroKernel, **overrides) -> LabHostSettings:
    settings = {"name": "qemu-test", "runner": "qemu", "accel": "tcg", "cpus": 2,
                "memory_mb": GUEST_MB, "initramfs_modules": str(kernel.modules),
                "scratch_mb": 1024, "swap_mb": 256, "timeout": 300}
    return LabHostSettings(**{**settings, **overrides})


def _read_seconds(output: str) -> dict[str, float]:
    """The total time of the `dd` passes: coreutils ends each with "..., 1.23 s, 300 MB/s"."""
    times = re.findall(r"copied, ([0-9.]+) s", output)
    if len(times) != 2:
        raise ValueError(f"expected two dd summaries, got {len(times)}")
    return {"readtwice-test.seconds": sum(float(t) for t in times)}


def read_twice(file_mb: int) -> Benchmark:
    """A sparse file larger than the guest's memory, read twice from the scratch disk: the page
    cache fills from holes (no disk I/O), so the second pass must reclaim the first one's pages."""
    script = ('f={scratch}/sparse && truncate -s {mb}M "$f" && '
              'for pass in 1 2; do dd if="$f" of=/dev/null bs=1M 2>&1 | tail -n 1; done')
    return Benchmark(name="readtwice-test", command=("sh", "-c", script),
                     parameters={"mb": file_mb}, parse=_read_seconds,
                     metrics=(Metric("readtwice-test.seconds", "s", higher_is_better=False),))


def test_hackbench_boot_gives_its_time_and_the_reclaim_counters(kernel, tmp_path):
    # "auto": one probe boot decides between KVM and TCG (on a host that is itself a VM, KVM
    # guests hang in the firmware or qemu aborts, and TCG it is).
    # In a memcg of its own: the guest's cgroup2 mount works and its memory.stat is read too.
    bench = replace(hackbench(groups=2, loops=50), memcg_max="128M")
    runner = QemuRunner(bench, {"A": kernel.vmlinuz, "B": kernel.vmlinuz},
                        qemu_host(kernel, accel="auto"), cache_dir=tmp_path / "cache")
    samples = runner("B", 2, 1)
    by_name = {s.metric: s for s in samples}
    time_sample = by_name[TIME_METRIC]
    assert time_sample.value > 0 and time_sample.unit == "s"
    assert (time_sample.kernel, time_sample.pair_index, time_sample.position) == ("B", 2, 1)
    assert time_sample.accel in ("kvm", "tcg") and time_sample.host == "qemu-test"
    assert {s.accel for s in samples} == {time_sample.accel}
    # The guest's own boot id, not the host's.
    assert time_sample.boot_id != Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    for counter in ("pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pswpout"):
        assert f"proc-vmstat.{counter}" in by_name
    assert "memcg.pgscan" in by_name and "memcg.pgsteal" in by_name
    # A fresh initramfs was built into the cache directory given, and the kernel booted
    # directly from its uncompressed ELF file.
    assert len(list((tmp_path / "cache" / "initramfs").glob("*.cpio.gz"))) == 1
    assert runner.kernel_file("B").parent == tmp_path / "cache" / "vmlinux"
    [boot] = runner.boots
    assert boot.accel == time_sample.accel and boot.exit_code == 0
    assert 0 < boot.to_job < boot.seconds and boot.after_job >= 0
    assert boot.uptimes["init"] <= boot.uptimes["job-begin"] <= boot.uptimes["job-end"]
    assert "lorelab: job-end rc=0" in boot.console


def test_reading_a_file_larger_than_the_guest_twice_makes_it_reclaim(kernel):
    # Booted the ordinary way, through the bzImage's decompressor.
    runner = QemuRunner(read_twice(file_mb=GUEST_MB * 3 // 2),
                        {"A": kernel.vmlinuz, "B": kernel.vmlinuz}, qemu_host(kernel),
                        direct_boot=False)
    boot = runner("A", 0, 0)
    assert {s.accel for s in boot} == {"tcg"}
    samples = {s.metric: s.value for s in boot}
    assert samples["readtwice-test.seconds"] > 0
    scanned = samples["proc-vmstat.pgscan_kswapd"] + samples["proc-vmstat.pgscan_direct"]
    stolen = samples["proc-vmstat.pgsteal_kswapd"] + samples["proc-vmstat.pgsteal_direct"]
    # The second pass alone needs more pages than the guest has: all of them came by reclaim.
    assert scanned >= stolen > GUEST_MB * 256 // 2
    # Pages of the first pass were evicted and read again: refaults.
    assert samples["proc-vmstat.workingset_refault_file"] > 0


@pytest.fixture
def secret_file():
    """A file holding a random secret where the guest could read it when it was given the
    host's root: under /var/tmp (the host's /tmp it saw under its scratch disk)."""
    with tempfile.TemporaryDirectory(prefix="lorelab-secret-", dir="/var/tmp") as tmp:
        path = Path(tmp) / "smtp-password"
        secret = secrets.token_hex(16)
        path.write_text(secret)
        yield path, secret


def snoop(outputs: list[str]) -> Benchmark:
    """A "benchmark" that looks for the host's files from inside the guest and keeps what it
    printed in `outputs`: the file given as its parameter, the root it runs in, the 9p shares
    the guest was given and its PCI devices' classes (a network card is 0x02....). It also
    replaces the job's boot_id, which the host reads back, by a link to that file."""
    script = ('cat "$0" 2>&1; rc=$?; echo; echo "cat-rc: $rc"; '
              'echo "root: $(ls -a / | tr "\\n" " ")"; '
              'echo "tags: $(cat /sys/bus/virtio/devices/*/mount_tag | tr "\\0\\n" "  ")"; '
              'echo "pci: $(cat /sys/bus/pci/devices/*/class | tr "\\n" " ")"; '
              'rm /job/results/boot_id && ln -s "$0" /job/results/boot_id')

    def parse(output: str) -> dict[str, float]:
        outputs.append(output)
        return {"snoop.ran": 1.0}

    return Benchmark(name="snoop", command=("sh", "-c", script, "{path}"),
                     parameters={"path": ""}, parse=parse,
                     metrics=(Metric("snoop.ran", "", higher_is_better=True),))


def _field(output: str, name: str) -> list[str]:
    [line] = [line for line in output.splitlines() if line.startswith(f"{name}: ")]
    return line.split()[1:]


def test_the_guest_sees_only_usr_and_its_job_not_the_hosts_files(kernel, secret_file):
    path, secret = secret_file
    outputs: list[str] = []
    # The file's path as a parameter: a parameter's value is never copied into the guest.
    bench = replace(snoop(outputs), parameters={"path": str(path)})
    runner = QemuRunner(bench, {"A": kernel.vmlinuz, "B": kernel.vmlinuz}, qemu_host(kernel))
    samples = runner("A", 0, 0)
    [output] = outputs
    assert _field(output, "cat-rc") == ["1"] and "No such file or directory" in output
    assert sorted(_field(output, "root")) == [".", "..", "bin", "dev", "etc", "job", "lib",
                                              "lib64", "proc", "sbin", "sys", "tmp", "usr"]
    # No other share the kernel could mount for itself, and no network card either.
    assert sorted(_field(output, "tags")) == ["hostusr", "job"]
    assert not [c for c in _field(output, "pci") if c.startswith("0x02")]
    # The guest's link is a plain file on the host, holding the path it led to.
    assert {s.boot_id for s in samples} == {str(path)}
    assert secret not in output + runner.boots[0].console + repr(samples)


def test_a_registered_benchmark_runs_its_script_from_outside_usr(kernel):
    # readtwice.sh lives with the package; its awk is one of Debian's /etc/alternatives links.
    bench = benchmark("readtwice", mb=64)
    assert not Path(bench.command[1]).is_relative_to("/usr")
    runner = QemuRunner(bench, {"A": kernel.vmlinuz, "B": kernel.vmlinuz}, qemu_host(kernel))
    samples = {s.metric: s.value for s in runner("A", 0, 0)}
    assert samples["readtwice.throughput"] > 0 and samples["readtwice.seconds"] > 0


def test_anon_swap_runs_its_cached_binary_and_swaps(kernel):
    # The static binary is built into the user's cache; more memory than the guest has goes
    # out to its swap disk and back.
    bench = benchmark("anon-swap", mb=160)
    assert not Path(bench.command[0]).is_relative_to("/usr")
    runner = QemuRunner(bench, {"A": kernel.vmlinuz, "B": kernel.vmlinuz},
                        qemu_host(kernel, memory_mb=128))
    samples = {s.metric: s.value for s in runner("A", 0, 0)}
    assert samples["anon-swap.throughput"] > 0
    assert samples["proc-vmstat.pswpout"] > 0 and samples["proc-vmstat.pswpin"] > 0


def test_files_outside_the_exported_usr_are_copied_in_and_named_in_the_argv(tmp_path):
    usr = tmp_path / "usr"
    (usr / "bin").mkdir(parents=True)
    (usr / "bin" / "tool").write_bytes(b"")
    script, other = tmp_path / "a" / "run.sh", tmp_path / "b" / "run.sh"
    for path in (script, other):
        path.parent.mkdir()
        path.write_text("exit 0\n")
    missing = tmp_path / "missing"
    argv = ["sh", str(script), str(usr / "bin" / "tool"), "{scratch}", str(other), str(script),
            str(missing), str(tmp_path), "-x"]
    guest, copies = guest_argv(argv, str(usr))
    assert guest == ["sh", "/job/files/run.sh", "/usr/bin/tool", "{scratch}",
                     "/job/files/1-run.sh", "/job/files/run.sh", str(missing), str(tmp_path),
                     "-x"]
    assert copies == {"run.sh": str(script), "1-run.sh": str(other)}


@pytest.mark.parametrize("usr", ["/", "/usr/..", "usr", "link-to-root"])
def test_the_guest_is_never_given_the_hosts_root(usr, tmp_path):
    (tmp_path / "link-to-root").symlink_to("/")
    if usr == "link-to-root":
        usr = str(tmp_path / usr)
    with pytest.raises(ValueError, match="guest_usr must be an absolute path other than /"):
        LabHostSettings(name="vm1", runner="qemu", guest_usr=usr)


def _qemu_processes_using(path: Path) -> list[int]:
    """Processes whose command line mentions `path` (the runner's boot directories)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(path) in (proc / "cmdline").read_text():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_guest_that_outlives_its_timeout_is_killed_and_leaves_nothing_behind(kernel, tmp_path):
    runner = QemuRunner(hackbench(), {"A": kernel.vmlinuz, "B": kernel.vmlinuz},
                        qemu_host(kernel, timeout=2), work_dir=tmp_path)
    with pytest.raises(RunFailed, match=r"timed out after 2 s \((before|during) the job"):
        runner("A", 0, 0)
    assert _qemu_processes_using(tmp_path) == []
    assert list(tmp_path.iterdir()) == []  # the boot's share and disks are gone too
    assert runner.boots[0].timed_out and runner.boots[0].exit_code is None


def test_a_file_that_is_no_kernel_fails_at_once_with_qemus_reason(kernel, tmp_path):
    garbage = tmp_path / "bzImage"
    garbage.write_bytes(os.urandom(4096))
    runner = QemuRunner(hackbench(), {"A": garbage, "B": garbage}, qemu_host(kernel),
                        cache_dir=tmp_path / "cache")
    with pytest.raises(RunFailed, match="stopped before the job began") as failure:
        runner("A", 0, 0)
    assert not runner.boots[0].timed_out  # qemu gave up by itself, not the runner's timeout
    # qemu's own words on what is wrong with the file are quoted.
    assert re.search(r"console:\nqemu: .*kernel", str(failure.value))


def test_a_guest_that_cannot_set_up_the_job_says_what_failed(kernel, tmp_path):
    # A /usr with nothing in it: no env to run the benchmark with.
    empty = tmp_path / "usr"
    empty.mkdir()
    runner = QemuRunner(hackbench(), {"A": kernel.vmlinuz, "B": kernel.vmlinuz},
                        qemu_host(kernel, guest_usr=str(empty)))
    with pytest.raises(RunFailed, match=r"before the job began \(qemu exited 0\): "
                                        r"lorelab: error no bin/env in the host's /usr"):
        runner("A", 0, 0)


def test_a_kernel_panic_is_reported_with_the_kernels_own_line(kernel, tmp_path):
    # An init that exits at once: the kernel panics, panic=-1 resets the guest, qemu exits.
    initrd = build_initramfs(tmp_path, kernel.modules, init="#!/bin/busybox sh\nexit 3\n")
    direct = direct_boot_image(kernel.vmlinuz, tmp_path / "vmlinux")
    argv = qemu_command("qemu-system-x86_64", accel="tcg", cpus=1, memory_mb=GUEST_MB,
                        kernel=direct or kernel.vmlinuz, initrd=initrd)
    boot = run_qemu(argv, 120, accel="tcg")
    assert not boot.timed_out and boot.exit_code == 0
    failure = boot_failure(boot, "hackbench", 120)
    assert failure is not None
    assert str(failure).startswith("hackbench: the tcg guest stopped before the job began "
                                   "(qemu exited 0): Kernel panic - not syncing: "
                                   "Attempted to kill init!")


def test_the_initramfs_is_built_once_per_content(kernel, tmp_path):
    first = build_initramfs(tmp_path, kernel.modules)
    built_at = first.stat().st_mtime_ns
    assert build_initramfs(tmp_path, kernel.modules) == first
    assert first.stat().st_mtime_ns == built_at
    other = build_initramfs(tmp_path, kernel.modules, init="#!/bin/busybox sh\nreboot -f\n")
    without_modules = build_initramfs(tmp_path)
    assert len({first, other, without_modules}) == 3
    assert without_modules.stat().st_size < first.stat().st_size


def test_modules_come_after_what_they_depend_on(kernel):
    names = [name for name, _ in module_load_order(kernel.modules)]
    for module, dependency in (("virtio_pci.ko", "virtio.ko"), ("9p.ko", "9pnet.ko"),
                               ("9pnet_virtio.ko", "virtio_ring.ko"), ("ext4.ko", "jbd2.ko")):
        assert names.index(dependency) < names.index(module)
    assert len(names) == len(set(names))
    with pytest.raises(InitramfsError, match="no_such_module"):
        module_load_order(kernel.modules, ["no_such_module"])


@pytest.mark.parametrize("compress", [lambda elf: gzip.compress(elf, compresslevel=1),
                                      lambda elf: zstandard.ZstdCompressor(level=1).compress(elf)],
                         ids=["gzip", "zstd"])
def test_the_kernel_inside_a_bzimage_is_found_whatever_its_compression(kernel, tmp_path,
                                                                       compress):
    elf = direct_boot_image(kernel.vmlinuz, tmp_path / "xz")
    assert elf is not None and elf.read_bytes()[:4] == b"\x7fELF"
    # Debian's bzImage with its xz payload replaced (same header, new payload length).
    image = kernel.vmlinuz.read_bytes()
    start = (image[0x1F1] + 1) * 512 + struct.unpack_from("<I", image, 0x248)[0]
    payload = compress(elf.read_bytes())
    header = bytearray(image[:start])
    struct.pack_into("<I", header, 0x24C, len(payload))
    repacked = tmp_path / "bzImage"
    repacked.write_bytes(bytes(header) + payload)
    again = direct_boot_image(repacked, tmp_path / "other")
    assert again is not None and again.read_bytes() == elf.read_bytes()
    assert direct_boot_image(tmp_path / "bzImage", tmp_path / "other") == again
    # Anything else is booted as it is.
    (tmp_path / "text").write_text("not a kernel")
    assert direct_boot_image(tmp_path / "text", tmp_path / "other") is None
