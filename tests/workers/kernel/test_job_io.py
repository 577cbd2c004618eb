"""A sandboxed job's IO is limited on the disk that holds its directories, and its log says so
where it cannot be (a directory with no block device)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from workers.kernel.block_device import disk_of
from workers.kernel.job_cgroup import IoLimit, make_job_cgroup
from workers.kernel.sandbox import Limits, SandboxResult, minimal_env, run_sandboxed

BLKIO = Path("/sys/fs/cgroup/blkio")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (BLKIO / "blkio.throttle.write_bps_device").exists(),
    reason="needs root and a cgroup v1 blkio hierarchy with throttling (this lab host's)")

MIB = 1024 * 1024


def _disk_by_lsblk(directory: Path) -> str:
    """MAJ:MIN of the whole disk under `directory`, as util-linux sees it (not our code)."""
    source = subprocess.run(["findmnt", "-nvo", "SOURCE", "--target", str(directory)],
                            capture_output=True, text=True, check=True).stdout.strip()
    parent = subprocess.run(["lsblk", "-ndo", "PKNAME", source], capture_output=True,
                            text=True, check=True).stdout.strip()
    number = os.stat(f"/dev/{parent}" if parent else source).st_rdev
    return f"{os.major(number)}:{os.minor(number)}"


# The job tries to lift its write limit and to leave it (a child cgroup), then names its blkio
# cgroup and waits.
_JOB = """p=$(grep :blkio: /proc/self/cgroup | cut -d: -f3)
limit=/sys/fs/cgroup/blkio$p/blkio.throttle.write_bps_device
echo "$(cut -d' ' -f1 $limit) 0" > $limit || echo KEPT
mkdir /sys/fs/cgroup/blkio$p/free || echo NO-CHILD
grep :blkio: /proc/self/cgroup > ready
cat go
"""


def _limits_seen_from_outside(work: Path, limits: Limits) -> tuple[dict[str, str], SandboxResult]:
    """Run `_JOB` in `work`; meanwhile read the limit files of the blkio cgroup it runs in
    from outside. FIFOs, not sleeps, keep the two in step."""
    ready, go = work / "ready", work / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    results: list[SandboxResult] = []

    def job() -> None:
        try:
            results.append(run_sandboxed(
                ["sh", "-c", _JOB], cwd=work,
                writable=[work], limits=limits, env=minimal_env(work)))
        finally:  # a job that never opened `ready` must not leave the reader blocked
            with contextlib.suppress(OSError):
                os.close(os.open(ready, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=job)
    thread.start()
    line = ready.read_text()
    seen: dict[str, str] = {}
    if "/lorelab-job-" in line:  # else it runs in the worker's own blkio cgroup
        own = BLKIO / line.strip().split(":", 2)[2].lstrip("/")
        seen = {name: (own / f"blkio.throttle.{name}").read_text().strip()
                for name in ("read_bps_device", "write_bps_device", "read_iops_device",
                             "write_iops_device")}
    if line:
        go.write_text("")
    thread.join(60)
    return seen, results[0]


def test_a_jobs_cgroup_limits_io_on_the_disk_of_its_build_directory(tmp_path):
    disk = _disk_by_lsblk(tmp_path)
    seen, result = _limits_seen_from_outside(tmp_path, Limits(
        wall_seconds=30, io_read_mbps=300, io_write_mbps=7, io_write_iops=900))
    assert result.returncode == 0, result.output
    assert seen == {"read_bps_device": f"{disk} {300 * MIB}",
                    "write_bps_device": f"{disk} {7 * MIB}",
                    "read_iops_device": "", "write_iops_device": f"{disk} 900"}, seen
    assert "KEPT" in result.output and "NO-CHILD" in result.output
    assert "IO not limited" not in result.output


def test_no_io_rate_asked_for_means_no_io_cgroup_and_no_note(tmp_path):
    seen, result = _limits_seen_from_outside(tmp_path, Limits(wall_seconds=30))
    assert seen == {} and result.returncode == 0
    assert "IO not limited" not in result.output


def test_a_job_on_a_filesystem_without_a_block_device_says_its_io_is_not_limited(tmp_path):
    shm = Path("/dev/shm") / f"lorelab-io-{uuid.uuid4().hex[:8]}"
    shm.mkdir()
    try:
        result = run_sandboxed(["sh", "-c", "echo ran"], cwd=shm, writable=[shm],
                               limits=Limits(wall_seconds=30, io_write_mbps=7),
                               env=minimal_env(shm))
    finally:
        shutil.rmtree(shm)
    assert result.returncode == 0 and "ran" in result.output
    assert f"lorelab: IO not limited: {shm} is on tmpfs" in result.output, result.output


@pytest.mark.skipif(not Path("/dev/loop-control").exists() or shutil.which("losetup") is None
                    or shutil.which("mkfs.ext4") is None,
                    reason="needs loop devices, losetup and mkfs.ext4")
def test_a_directory_on_another_disk_is_limited_on_that_disk(tmp_path):
    image = tmp_path / "disk.img"
    with open(image, "wb") as handle:
        handle.truncate(16 * MIB)
    subprocess.run(["mkfs.ext4", "-q", str(image)], check=True)
    loop = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True,
                          text=True, check=True).stdout.strip()
    mount = tmp_path / "mnt"
    mount.mkdir()
    try:
        subprocess.run(["mount", loop, str(mount)], check=True)
        try:
            number = os.stat(loop).st_rdev
            disk = f"{os.major(number)}:{os.minor(number)}"
            assert disk != _disk_by_lsblk(tmp_path)
            seen, result = _limits_seen_from_outside(mount, Limits(wall_seconds=30,
                                                                   io_write_mbps=7))
            assert result.returncode == 0, result.output
            assert seen["write_bps_device"] == f"{disk} {7 * MIB}"
        finally:
            subprocess.run(["umount", str(mount)], check=True)
    finally:
        subprocess.run(["losetup", "-d", loop], check=True)


def test_a_partition_is_limited_on_its_whole_disk(tmp_path):
    # The kernel throttles disks, not partitions (it refuses a partition's numbers), so a
    # directory on sda2 is limited on sda, its parent in sysfs. This host's kernel reads no
    # partition tables, so the sysfs layout is laid out here as the kernel makes it.
    number = os.stat(tmp_path).st_dev
    sys_root = tmp_path / "sys"
    partition = sys_root / "devices" / "pci0000:00" / "block" / "sda" / "sda2"
    partition.mkdir(parents=True)
    (partition / "partition").write_text("2\n")
    (partition / "dev").write_text(f"{os.major(number)}:{os.minor(number)}\n")
    (partition.parent / "dev").write_text("8:0\n")
    (sys_root / "dev" / "block").mkdir(parents=True)
    (sys_root / "dev" / "block" / f"{os.major(number)}:{os.minor(number)}").symlink_to(
        "../../devices/pci0000:00/block/sda/sda2")
    assert disk_of(tmp_path, sys_root=sys_root) == ("8:0", "")
    (partition / "partition").unlink()
    assert disk_of(tmp_path, sys_root=sys_root) == (f"{os.major(number)}:{os.minor(number)}", "")


def test_a_disk_the_kernel_refuses_leaves_io_unlimited_said_and_no_cgroup_behind():
    # 1:3 is /dev/null, a character device: blk-throttle has no disk of that number.
    cgroup = make_job_cgroup(64, 256, 1, IoLimit(disks=("1:3",), write_bps=MIB))
    try:
        assert "io" not in cgroup.limited and "io" not in cgroup.missing
        assert cgroup.io_unlimited.startswith("io: ") and cgroup.io_unlimited.endswith(
            "No such device"), cgroup.io_unlimited
        name = cgroup.limited["pids"].name  # the same name in every hierarchy
        assert not (BLKIO / name).exists()
    finally:
        cgroup.remove()
