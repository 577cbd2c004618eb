"""A cgroup of its own for each sandboxed job: a process limit, a memory limit, a CPU quota,
and IO rates on the disks it writes.

RLIMIT_NPROC does not hold root (our uid here, in or out of a user namespace), so a fork bomb
is stopped by the pids controller. Each job gets `lorelab-job-<id>` under the worker's own
cgroup in every hierarchy that has the controller (cgroup v1: pids, memory, cpu, blkio; cgroup
v2: the unified tree, when the worker's cgroup can delegate them). The limits are written
there; the job runs in its child `job/run`, and `job` is the only part of the cgroup tree it
can write (the sandbox mounts it over the hierarchy and the rest read-only, see
`workers.kernel.sandbox`), so it cannot raise its own limits, freeze another cgroup or move
itself out. Where the host gives no controller, `JobCgroup.missing` says which (and
`io_unlimited` for IO), and the job's log says so: a job is never described as limited when it
is not. IO is limited per disk (`IoLimit`, from `workers.kernel.block_device`); on cgroup v1
the kernel's own writeback of a job's buffered writes is not the job's, so there only reads,
O_DIRECT writes and what the job flushes itself (fsync) are throttled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLERS = ("pids", "memory", "cpu", "io")
_V1_NAMES = {"io": "blkio"}
_PERIOD_US = 100_000


@dataclass(frozen=True)
class IoLimit:
    """Bytes and operations per second a job may read and write on each disk (0: no limit)."""

    disks: tuple[str, ...] = ()  # "MAJ:MIN" of whole disks (`block_device.disk_of`)
    read_bps: int = 0
    write_bps: int = 0
    read_iops: int = 0
    write_iops: int = 0

    def rates(self) -> dict[str, int]:
        """The limits set, by io.max's key: {"wbps": 104857600}."""
        return {key: value for key, value in (("rbps", self.read_bps), ("wbps", self.write_bps),
                                              ("riops", self.read_iops),
                                              ("wiops", self.write_iops)) if value}


@dataclass
class JobCgroup:
    """The job's cgroup directories (the limited one and the `job` child it runs in)."""

    limited: dict[str, Path] = field(default_factory=dict)  # controller -> lorelab-job-<id>
    mounts: dict[Path, Path] = field(default_factory=dict)  # its `job` dir -> hierarchy mount
    missing: tuple[str, ...] = ()  # controllers the host would not give
    reason: str = ""  # why, in one line
    io_unlimited: str = ""  # why the IO limit asked for could not be set, in one line

    @property
    def job_dirs(self) -> list[Path]:
        """Where the job runs, one per hierarchy (v2: one directory for all controllers)."""
        return sorted({path / "job" for path in self.limited.values()})

    def join(self) -> None:  # in the child, before exec
        # In `job/run`, not `job`: on cgroup v2 a cgroup with processes cannot pass controllers
        # on, and a benchmark makes its memcg inside `job` (seen as /sys/fs/cgroup).
        for path in self.job_dirs:
            with open(path / "run" / "cgroup.procs", "w") as handle:
                handle.write("0")

    def hit(self) -> str | None:
        """"process" or "memory" when the job ran into that limit, else None."""
        pids = self.limited.get("pids")
        # cgroup v1 counts a refused fork where it was tried (the job's own cgroups below);
        # reaching the limit at all is the limit too (the job may remove a cgroup it made).
        if pids is not None and (any(_event(events, "max") > 0
                                     for events in pids.rglob("pids.events"))
                                 or (self.peak_processes() or 0) >= _number(pids / "pids.max")):
            return "process"
        memory = self.limited.get("memory")
        if memory is not None and (_event(memory / "memory.events", "oom_kill") > 0
                                   or _event(memory / "memory.oom_control", "oom_kill") > 0):
            return "memory"
        return None

    def peak_processes(self) -> int | None:
        pids = self.limited.get("pids")
        with contextlib.suppress(OSError, ValueError):
            return int((pids / "pids.peak").read_text()) if pids else None
        return None

    def kill_all(self) -> None:
        """SIGKILL every process left in the job's cgroup (a fork bomb keeps forking: repeat)."""
        for path in self.job_dirs:
            with contextlib.suppress(OSError):
                (path.parent / "cgroup.kill").write_text("1")  # v2
            for _ in range(1000):
                pids = _pids(path)
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        self.kill_all()
        for path in self.limited.values():
            for directory in sorted(path.rglob("*"), key=lambda p: -len(p.parts)):
                if directory.is_dir():
                    with contextlib.suppress(OSError):
                        directory.rmdir()
            with contextlib.suppress(OSError):
                path.rmdir()


def _pids(path: Path) -> list[int]:
    found = []
    for procs in [path / "cgroup.procs", *path.rglob("cgroup.procs")]:
        with contextlib.suppress(OSError):
            found += [int(line) for line in procs.read_text().split()]
    return found


def _number(path: Path) -> float:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return float("inf")  # "max", or gone


def _event(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def hierarchies() -> dict[str, tuple[Path, Path]]:
    """controller -> (mount point, the worker's own cgroup directory there) of the hierarchy
    that has it: cgroup v1 first, then v2."""
    own: dict[str, str] = {}  # "pids" or "" (v2) -> path in that hierarchy
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(",") if names else [""]:
                own[name] = path
    found: dict[str, tuple[Path, Path]] = {}
    v2 = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            after = fields[fields.index("-") + 1:]
            fstype, mount, options = after[0], fields[4], after[2].split(",")
            if fstype == "cgroup":
                for name in CONTROLLERS:
                    v1 = _V1_NAMES.get(name, name)
                    if v1 in options and v1 in own and name not in found:
                        found[name] = (Path(mount), Path(mount + own[v1]))
            elif fstype == "cgroup2" and "" in own:
                v2 = (Path(mount), Path(mount + own[""]))
    if v2 is not None:
        with contextlib.suppress(OSError):
            available = (v2[1] / "cgroup.controllers").read_text().split()
            for name in CONTROLLERS:
                if name not in found and name in available:
                    found[name] = v2
    return found


def make_job_cgroup(max_processes: int, memory_mb: int, cpus: float,
                    io: IoLimit | None = None) -> JobCgroup:
    """A new job cgroup with these limits in every hierarchy that has the controller; `io`
    only when it names a disk and a rate."""
    name = f"lorelab-job-{uuid.uuid4().hex[:12]}"
    job = JobCgroup()
    missing, reasons = [], []
    places = hierarchies()
    io = io if io is not None and io.disks and io.rates() else None
    for controller in CONTROLLERS if io else CONTROLLERS[:-1]:
        mount, parent = places.get(controller, (None, None))
        if mount is None or parent is None:
            missing.append(controller)
            reasons.append(f"no {controller} controller")
            continue
        try:
            path = parent / name
            v2 = "cgroup.subtree_control" in os.listdir(parent)
            if v2:  # delegate it first
                (parent / "cgroup.subtree_control").write_text(f"+{controller}")
            (path / "job" / "run").mkdir(parents=True, exist_ok=True)
            # cgroup v1's blk-throttle limits a cgroup's own IO, not its children's: the limit
            # goes where the job runs, and that hierarchy stays read-only to it (not mounted).
            flat = controller == "io" and not v2
            _write_limit(path / "job" / "run" if flat else path, controller, max_processes,
                         memory_mb, cpus, io)
            job.limited[controller] = path
            if not flat:
                job.mounts[path / "job"] = mount
        except OSError as exc:
            missing.append(controller)
            reasons.append(f"{controller}: {parent}: {exc.strerror or exc}")
            if path not in job.limited.values():  # a limit refused (a disk): no empty cgroup
                with contextlib.suppress(OSError):
                    for made in (path / "job" / "run", path / "job", path):
                        made.rmdir()
    if "io" in missing:  # said on its own line: IO is not a limit every host can give
        job.io_unlimited = reasons.pop(missing.index("io"))
        missing.remove("io")
    job.missing = tuple(missing)
    job.reason = "; ".join(reasons)
    return job


def _write_limit(path: Path, controller: str, max_processes: int, memory_mb: int,
                 cpus: float, io: IoLimit | None) -> None:
    v2 = (path / "cgroup.controllers").exists()
    if controller == "pids":
        (path / "pids.max").write_text(str(max_processes))
    elif controller == "memory":
        size = str(memory_mb * 1024 * 1024)
        (path / ("memory.max" if v2 else "memory.limit_in_bytes")).write_text(size)
    elif controller == "cpu":
        quota = max(1000, int(cpus * _PERIOD_US))
        if v2:
            (path / "cpu.max").write_text(f"{quota} {_PERIOD_US}")
        else:
            (path / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(quota))
    elif controller == "io" and io is not None:
        for disk in io.disks:
            if v2:
                rates = " ".join(f"{key}={value}" for key, value in io.rates().items())
                (path / "io.max").write_text(f"{disk} {rates}")
                continue
            for key, value in io.rates().items():
                (path / _V1_FILES[key]).write_text(f"{disk} {value}")


_V1_FILES = {"rbps": "blkio.throttle.read_bps_device", "wbps": "blkio.throttle.write_bps_device",
             "riops": "blkio.throttle.read_iops_device",
             "wiops": "blkio.throttle.write_iops_device"}
