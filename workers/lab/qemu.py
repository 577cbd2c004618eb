"""The `qemu` runner: boot each kernel in a VM on this host and run the benchmark inside it.

Every call is one fresh boot: a new 9p share holding the job script (workers.lab.job), a new
ext2 scratch disk and swap disk, and the lorelab initramfs (workers.lab.initramfs). The job
writes its results into the share; qemu exits when the guest resets (-no-reboot), or is killed,
with its whole process group, at the host's timeout.

The kernel under test comes from a patch anyone may post, so the guest gets no network and sees
none of the host's files but its `/usr` (the lab host's `guest_usr`), read-only: the programs
benchmarks run and their libraries. The guest runs the benchmark with `chroot /host`, a root
of its own made by guest-init.sh around that `/usr` (a minimal /etc, the scratch disk as /tmp,
the job share as /job). The benchmark's own files outside `/usr` (the project's scripts, the
anon-swap binary in the user's cache) are copied into the share and named there in its argv
(`guest_argv`). The share takes what the guest writes as plain files (`mapped-file`): a link or
a device node made there by the guest is never one on the host.

A bzImage whose kernel can be started directly (PVH) is booted as the uncompressed ELF file
(workers.lab.kernel_image): under TCG the emulated decompressor alone takes seconds.

The init prints markers on the serial console; the host notes when each arrives, which gives the
overhead of every boot (qemu start to job start, job end to qemu exit), kept in `Boot` records.
With `accel = "auto"` one short probe boot per process finds out whether KVM works (a guest that
does not reach the init in time means it does not, as on a host that is itself a VM) and TCG is
used otherwise; each sample records which.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import selectors
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.benchmarks.definition import Benchmark
from bot.config.lab_hosts import LabHostSettings
from workers.lab.initramfs import build_initramfs
from workers.lab.job import BootInfo, RunFailed, collect, job_script
from workers.lab.kernel_image import default_cache_dir, direct_boot_image
from workers.lab.machine import HOST_FACTS, MACHINE_DIR, read_machine, this_machine
from workers.lab.pairs import Sample

__all__ = ["Boot", "QemuRunner", "RunFailed", "guest_argv", "kvm_works", "qemu_command",
           "run_qemu"]

APPEND = "console=ttyS0 quiet panic=-1"  # panic=-1: a panic resets the guest at once
GUEST_ROOT = "/host"  # the root the guest makes for the benchmark (guest-init.sh)
GUEST_USR = "/usr"  # where the host's guest_usr is in that root
SCRATCH = "/tmp"  # the scratch disk as benchmarks in the chroot see it (guest-init.sh)
JOB = "/job"  # the 9p share `job` in the guest, and in the root it makes for the benchmark
RESULTS = f"{JOB}/results"
FILES = "files"  # the benchmark's own files, in the share
# In the share: the links of the guest's /etc/alternatives, without which Debian's awk, nc, ...
# in /usr/bin lead nowhere. A tar archive: one process unpacks it (a few hundred `ln -s` take
# seconds under TCG).
ALTERNATIVES = "alternatives.tar"
HOST_ALTERNATIVES = Path("/etc/alternatives")
# Debian's busybox-static prefers its own applets to programs of the same name, even after a
# chroot: `chroot /host sh` would run busybox's sh (and its dd, date...). The host's `env` looks
# the command up in the host's PATH instead.
CHROOT = ("chroot", GUEST_ROOT, "/usr/bin/env")
KVM_PROBE_TIMEOUT = 20.0  # seconds: a KVM guest reaches the init in one or two
# "lorelab: <event> [key=value ...]" lines printed by guest-init.sh.
_MARKER = re.compile(r"^lorelab: (init|job-begin|job-end|error)\b(.*)$")
_UPTIME = re.compile(r"\buptime=([0-9.]+)")

_kvm_probes: dict[str, bool] = {}  # qemu binary -> whether a KVM guest booted (per process)


@dataclass(frozen=True)
class Boot:
    """One qemu run as the host saw it: its console and when each init marker arrived."""

    accel: str  # kvm or tcg
    console: str
    exit_code: int | None  # None: killed (timeout, or a probe that had seen enough)
    timed_out: bool
    seconds: float  # qemu start to exit, host clock
    marks: Mapping[str, float]  # init, job-begin, job-end -> seconds after qemu start
    uptimes: Mapping[str, float]  # the same markers -> the guest's uptime when it printed them

    @property
    def to_job(self) -> float | None:
        """Boot overhead: qemu start to the job's start, in seconds."""
        return self.marks.get("job-begin")

    @property
    def job_seconds(self) -> float | None:
        if "job-begin" in self.marks and "job-end" in self.marks:
            return self.marks["job-end"] - self.marks["job-begin"]
        return None

    @property
    def after_job(self) -> float | None:
        """Power-off overhead: the job's end to qemu's exit, in seconds."""
        end = self.marks.get("job-end")
        return None if end is None or self.exit_code is None else self.seconds - end

    @property
    def reason(self) -> str | None:
        """The kernel's panic line or the init's error line, when the console has one."""
        for line in self.console.splitlines():
            if line.startswith("lorelab: error"):
                return line.strip()
            panic = line.find("Kernel panic - not syncing")
            if panic >= 0:
                return line[panic:].strip()  # without the printk time stamp
        return None

    def tail(self, chars: int = 2000) -> str:
        return self.console[-chars:] if self.console.strip() else "(no console output)"


def qemu_command(qemu: str, *, accel: str, cpus: int, memory_mb: int, kernel: Path,
                 initrd: Path, share: Path | None = None, usr: Path | None = None,
                 disks: Sequence[Path] = ()) -> list[str]:
    """The qemu command line of one boot: serial console on stdout, no display, no reboot, no
    network card.

    `share` becomes the 9p tag `job` (read-write), `usr` the tag `hostusr` (read-only), and
    `disks` virtio disks /dev/vda, /dev/vdb, ... in order.
    """
    accelerator = {"tcg": ["-accel", "tcg,thread=multi"],
                   # the host's CPU model: benchmarks see the real cache sizes and features
                   "kvm": ["-accel", "kvm", "-cpu", "host"]}[accel]
    # -nic none: by default qemu adds a card on user-mode networking, through which a guest
    # reaches the internet and this host's loopback services (10.0.2.2: Redis, PostgreSQL).
    argv = [qemu, *accelerator, "-smp", str(cpus), "-m", str(memory_mb),
            "-kernel", str(kernel), "-initrd", str(initrd), "-append", APPEND,
            "-display", "none", "-serial", "stdio", "-no-reboot", "-monitor", "none",
            "-nic", "none"]
    if share is not None:
        # mapped-file: links, device nodes and owners the guest makes are plain files and
        # metadata on the host; with `none` a guest's link would lead the host's reads of the
        # results anywhere, and a device node made under a root qemu would open a host disk.
        argv += ["-virtfs", f"local,path={_option(share)},mount_tag=job,"
                            "security_model=mapped-file,id=job"]
    if usr is not None:
        # remap: /usr may span several file systems whose inode numbers would collide in 9p.
        argv += ["-virtfs", f"local,path={_option(usr)},mount_tag=hostusr,security_model=none,"
                            "readonly=on,multidevs=remap,id=hostusr"]
    for disk in disks:
        argv += ["-drive", f"file={_option(disk)},if=virtio,format=raw"]
    return argv


def _option(path: Path) -> str:
    return str(path).replace(",", ",,")  # a comma in a qemu option value is written twice


def run_qemu(argv: Sequence[str], timeout: float, *, accel: str, stop_at: str | None = None
             ) -> Boot:
    """Run qemu until it exits, `timeout` seconds pass, or the marker `stop_at` arrives; qemu's
    process group is killed in the last two cases. RunFailed when qemu cannot be started."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    except FileNotFoundError:
        raise RunFailed(f"{argv[0]} is not installed (Debian: qemu-system-x86)") from None
    assert process.stdout is not None
    console = bytearray()
    pending = b""
    marks: dict[str, float] = {}
    uptimes: dict[str, float] = {}
    timed_out = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while stop_at not in marks:
                left = started + timeout - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not selector.select(left):
                    continue
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:  # qemu closed its output: it has exited
                    break
                now = time.monotonic() - started
                console += chunk
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    _note_marker(line.decode(errors="replace").strip(), now, marks, uptimes)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stdout.close()
    killed = timed_out or stop_at in marks
    return Boot(accel=accel, console=console.decode(errors="replace").replace("\r", ""),
                exit_code=None if killed else process.returncode, timed_out=timed_out,
                seconds=time.monotonic() - started, marks=marks, uptimes=uptimes)


def _note_marker(line: str, now: float, marks: dict[str, float],
                 uptimes: dict[str, float]) -> None:
    match = _MARKER.match(line)
    if not match or match.group(1) in marks:
        return
    marks[match.group(1)] = now
    uptime = _UPTIME.search(match.group(2))
    if uptime:
        uptimes[match.group(1)] = float(uptime.group(1))


def kvm_works(qemu: str, kernel: Path, initrd: Path, memory_mb: int,
              timeout: float = KVM_PROBE_TIMEOUT) -> bool:
    """Whether a KVM guest of `kernel` reaches the init within `timeout`; probed once per
    process and qemu binary. False at once without a usable /dev/kvm."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    if qemu not in _kvm_probes:
        argv = qemu_command(qemu, accel="kvm", cpus=1, memory_mb=memory_mb, kernel=kernel,
                            initrd=initrd)
        probe = run_qemu(argv, timeout, accel="kvm", stop_at="init")
        _kvm_probes[qemu] = "init" in probe.marks
    return _kvm_probes[qemu]


def make_disks(work: Path, scratch_mb: int, swap_mb: int) -> list[Path]:
    """A fresh, sparse ext2 scratch disk and (with swap_mb > 0) a swap disk, in `work`."""
    disks = [_sparse_image(work / "scratch.img", scratch_mb, "mkfs.ext2", "-F", "-q")]
    if swap_mb > 0:
        disks.append(_sparse_image(work / "swap.img", swap_mb, "mkswap", "-q"))
    return disks


def _sparse_image(path: Path, size_mb: int, tool: str, *options: str) -> Path:
    """A sparse file of `size_mb` formatted by `tool` (mkfs.ext2: e2fsprogs; mkswap:
    util-linux), which may live in an sbin directory outside a user's PATH."""
    program = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
    if program is None:
        package = "e2fsprogs" if tool.startswith("mkfs") else "util-linux"
        raise RunFailed(f"{tool} is not installed (Debian: {package})")
    with path.open("wb") as image:
        image.truncate(size_mb * 2**20)
    done = subprocess.run([program, *options, str(path)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RunFailed(f"{tool} {path.name} failed: {done.stderr.strip()}")
    return path


def guest_argv(argv: Sequence[str], usr: str,
               is_file: Callable[[str], bool] = os.path.isfile
               ) -> tuple[list[str], dict[str, str]]:
    """`argv` as the guest runs it, and the files to copy into the share for that: {name in
    the share's files/ directory: host path}.

    An element that is an absolute path under `usr` becomes the same path under the guest's
    /usr; one to another existing file (`is_file`) becomes /job/files/<its name>. Give it a
    benchmark's command template, not a filled-in argv: a parameter's value (which a command
    mail may set) must never make the host copy a file of its choosing into the guest.
    """
    root = posixpath.normpath(usr)
    names: dict[str, str] = {}  # host path -> name in files/
    guest: list[str] = []
    for element in argv:
        path = posixpath.normpath(element)
        if not posixpath.isabs(element):
            guest.append(element)
        elif path == root or path.startswith(root + "/"):
            guest.append(GUEST_USR + path[len(root):])
        elif is_file(element):
            if path not in names:  # two files of the same name (run.sh) get two names
                base = posixpath.basename(path)
                names[path] = base if base not in names.values() else f"{len(names)}-{base}"
            guest.append(f"{JOB}/{FILES}/{names[path]}")
        else:
            guest.append(element)
    return guest, {name: path for path, name in names.items()}


def alternatives_archive(links: Mapping[str, str], usr: str) -> bytes:
    """A tar archive of those of Debian's /etc/alternatives links (`links`: name -> target)
    that lead into `usr`, leading to the same files in the guest's /usr."""
    root = posixpath.normpath(usr)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, target in sorted(links.items()):
            if target.startswith(root + "/") and "/" not in name:
                entry = tarfile.TarInfo(name)
                entry.type, entry.linkname = tarfile.SYMTYPE, GUEST_USR + target[len(root):]
                archive.addfile(entry)
    return buffer.getvalue()


def host_alternatives(directory: Path = HOST_ALTERNATIVES) -> dict[str, str]:
    """This host's alternatives links, name -> target (none on a system without them)."""
    try:
        return {link.name: os.readlink(link) for link in directory.iterdir()
                if link.is_symlink()}
    except FileNotFoundError:
        return {}


def prepare_share(share: Path, copies: Mapping[str, str], alternatives: bytes) -> None:
    """Copy the benchmark's files into the share (modes kept: executables stay executable) and
    write the alternatives archive."""
    if copies:
        (share / FILES).mkdir()
        for name, source in copies.items():
            shutil.copy2(source, share / FILES / name)
    (share / ALTERNATIVES).write_bytes(alternatives)


def boot_failure(boot: Boot, name: str, timeout: float) -> RunFailed | None:
    """Why a boot produced no results to collect, or None when its job ran to the end."""
    stage = "during the job" if "job-begin" in boot.marks else "before the job began"
    if boot.timed_out:
        what = f"timed out after {timeout:g} s ({stage})"
    elif "job-end" not in boot.marks:
        what = f"stopped {stage} (qemu exited {boot.exit_code})"
    else:
        return None
    reason = f": {boot.reason}" if boot.reason else ""
    return RunFailed(f"{name}: the {boot.accel} guest {what}{reason}; console:\n{boot.tail()}")


@dataclass(frozen=True)
class QemuRunner:
    """`run_one` for `run_pairs`: boots `kernels[kernel]` (a bzImage) and runs `benchmark` there.

    Every boot's record (console, overhead) is appended to `boots`, in call order.
    """

    benchmark: Benchmark
    kernels: Mapping[str, Path]  # "A" and "B" -> bzImage
    host: LabHostSettings
    cache_dir: Path | None = None  # initramfs archives, unpacked kernels; None: ~/.cache/lorelab
    work_dir: Path | None = None  # each boot's share and disks go in a new directory here
    # Boot the uncompressed kernel inside the bzImage when it can be (workers.lab.kernel_image):
    # about 4 s less per boot under TCG.
    direct_boot: bool = True
    lru: str | None = None  # switch the guest's LRU first: "mglru", "classic" (bot.runs.lru)
    boots: list[Boot] = field(default_factory=list, compare=False, repr=False)
    # Per kernel ("A", "B"): the machine its last boot ran on, as the job read it.
    machine: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def _cache(self) -> Path:
        return self.cache_dir or default_cache_dir()

    def initramfs(self) -> Path:
        modules = Path(self.host.initramfs_modules) if self.host.initramfs_modules else None
        return build_initramfs(self._cache / "initramfs", modules)

    def kernel_file(self, kernel: str) -> Path:
        """What qemu's -kernel gets for kernel "A" or "B"."""
        image = self.kernels[kernel]
        if not self.direct_boot:
            return image
        return direct_boot_image(image, self._cache / "vmlinux") or image

    def accel(self, initrd: Path) -> str:
        """kvm or tcg, as the host asks; auto: KVM if the probe boot works."""
        if self.host.accel != "auto":
            return self.host.accel
        works = kvm_works(self.host.qemu, self.kernel_file("A"), initrd, self.host.memory_mb)
        return "kvm" if works else "tcg"

    def __call__(self, kernel: str, pair_index: int, position: int) -> tuple[Sample, ...]:
        started = datetime.now(UTC)
        initrd = self.initramfs()
        accel = self.accel(initrd)
        with tempfile.TemporaryDirectory(prefix="lorelab-qemu-", dir=self.work_dir) as tmp:
            work = Path(tmp)
            share = work / "share"
            share.mkdir()
            disks = make_disks(work, self.host.scratch_mb, self.host.swap_mb)
            template, copies = guest_argv(self.benchmark.command, self.host.guest_usr)
            prepare_share(share, copies,
                          alternatives_archive(host_alternatives(), self.host.guest_usr))
            argv = replace(self.benchmark, command=tuple(template)).argv(
                kernel=str(self.kernels[kernel]), scratch=SCRATCH)
            (share / "job.sh").write_text(job_script(
                self.benchmark, argv, RESULTS, self.host.iterations, prefix=CHROOT,
                lru=self.lru))
            command = qemu_command(self.host.qemu, accel=accel, cpus=self.host.cpus,
                                   memory_mb=self.host.memory_mb,
                                   kernel=self.kernel_file(kernel), initrd=initrd,
                                   share=share, usr=Path(self.host.guest_usr), disks=disks)
            boot = run_qemu(command, self.host.timeout, accel=accel)
            self.boots.append(boot)
            failure = boot_failure(boot, self.benchmark.name, self.host.timeout)
            if failure:
                raise failure
            info = BootInfo(kernel=kernel, pair_index=pair_index, position=position,
                            host=self.host.name, accel=accel,
                            time=started)
            samples = collect(self.benchmark, share / "results", self.host.iterations, info,
                              console=boot.console)
            host = this_machine()
            self.machine[kernel] = {
                **read_machine(share / "results" / MACHINE_DIR), "runner": "qemu",
                "accel": accel, "vcpus": self.host.cpus, "guest_memory_mb": self.host.memory_mb,
                # The guest's CPU model is QEMU's; the reader wants the host's too.
                "host": {key: host.get(key) for key in HOST_FACTS}}
            return samples
