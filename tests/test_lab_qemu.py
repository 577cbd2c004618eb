"""The `qemu` runner, booting Debian's generic kernel under TCG (or KVM where it works).

Under TCG on two cores a guest of the kernel from linux-image-amd64 (its virtio, 9p and ext4
modules in the initramfs) starts its job about 4 s after qemu starts (7 s booted through the
bzImage's decompressor); the whole file takes about 30 s. The kernel package is downloaded once
with `apt-get download` into the user's cache (~70 MB, 400 MB unpacked).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import struct
import time
from dataclasses import replace
from pathlib import Path

import pytest
import zstandard

from workers.benchmarks.definition import Benchmark, Metric
from workers.benchmarks.hackbench import TIME_METRIC, hackbench
from workers.lab.hosts import LabHostSettings
from workers.lab.initramfs import InitramfsError, build_initramfs, module_load_order
from workers.lab.kernel_image import DistroKernel, debian_kernel, direct_boot_image
from workers.lab.qemu import QemuRunner, RunFailed, boot_failure, qemu_command, run_qemu

pytestmark = [
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
    started = time.monotonic()
    with pytest.raises(RunFailed, match=r"timed out after 2 s \((before|during) the job"):
        runner("A", 0, 0)
    assert time.monotonic() - started < 10
    assert _qemu_processes_using(tmp_path) == []
    assert list(tmp_path.iterdir()) == []  # the boot's share and disks are gone too
    assert runner.boots[0].timed_out and runner.boots[0].exit_code is None


def test_a_file_that_is_no_kernel_fails_at_once_with_qemus_reason(kernel, tmp_path):
    garbage = tmp_path / "bzImage"
    garbage.write_bytes(os.urandom(4096))
    runner = QemuRunner(hackbench(), {"A": garbage, "B": garbage}, qemu_host(kernel),
                        cache_dir=tmp_path / "cache")
    started = time.monotonic()
    with pytest.raises(RunFailed, match="stopped before the job began") as failure:
        runner("A", 0, 0)
    assert time.monotonic() - started < 10
    # qemu's own words on what is wrong with the file are quoted.
    assert re.search(r"console:\nqemu: .*kernel", str(failure.value))


def test_a_guest_that_cannot_set_up_the_job_says_what_failed(kernel, tmp_path):
    # A "host root" with nothing in it: no /proc to bind the guest's /proc onto.
    empty = tmp_path / "root"
    empty.mkdir()
    runner = QemuRunner(hackbench(), {"A": kernel.vmlinuz, "B": kernel.vmlinuz},
                        qemu_host(kernel), root=empty)
    with pytest.raises(RunFailed, match=r"before the job began \(qemu exited 0\): "
                                        r"lorelab: error cannot bind /proc into /host/proc"):
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
