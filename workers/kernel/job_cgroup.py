"""A cgroup of its own for each sandboxed job: a process limit, a memory limit, a CPU quota.

RLIMIT_NPROC does not hold root (our uid here, in or out of a user namespace), so a fork bomb
is stopped by the pids controller. Each job gets `lorelab-job-<id>` under the worker's own
cgroup in every hierarchy that has the controller (cgroup v1: pids, memory, cpu; cgroup v2: the
unified tree, when the worker's cgroup can delegate them). The limits are written there; the job
runs in its child `job/run`, and `job` is the only part of the cgroup tree it can write (the
sandbox mounts it over the hierarchy and the rest read-only, see `workers.kernel.sandbox`), so
it cannot raise its own limits, freeze another cgroup or move itself out. Where the host gives
no controller, `JobCgroup.missing` says which, and the job's log says so: a job is never
described as limited when it is not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLERS = ("pids", "memory", "cpu")
_PERIOD_US = 100_000


@dataclass
class JobCgroup:
    """The job's cgroup directories (the limited one and the `job` child it runs in)."""

    limited: dict[str, Path] = field(default_factory=dict)  # controller -> lorelab-job-<id>
    mounts: dict[Path, Path] = field(default_factory=dict)  # its `job` dir -> hierarchy mount
    missing: tuple[str, ...] = ()  # controllers the host would not give
    reason: str = ""  # why, in one line

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
                    if name in options and name in own and name not in found:
                        found[name] = (Path(mount), Path(mount + own[name]))
            elif fstype == "cgroup2" and "" in own:
                v2 = (Path(mount), Path(mount + own[""]))
    if v2 is not None:
        with contextlib.suppress(OSError):
            available = (v2[1] / "cgroup.controllers").read_text().split()
            for name in CONTROLLERS:
                if name not in found and name in available:
                    found[name] = v2
    return found


def make_job_cgroup(max_processes: int, memory_mb: int, cpus: float) -> JobCgroup:
    """A new job cgroup with these limits in every hierarchy that has the controller."""
    name = f"lorelab-job-{uuid.uuid4().hex[:12]}"
    job = JobCgroup()
    missing, reasons = [], []
    places = hierarchies()
    for controller in CONTROLLERS:
        mount, parent = places.get(controller, (None, None))
        if mount is None or parent is None:
            missing.append(controller)
            reasons.append(f"no {controller} controller")
            continue
        try:
            path = parent / name
            if "cgroup.subtree_control" in os.listdir(parent):  # v2: delegate it first
                (parent / "cgroup.subtree_control").write_text(f"+{controller}")
            path.mkdir(exist_ok=True)
            _write_limit(path, controller, max_processes, memory_mb, cpus)
            (path / "job" / "run").mkdir(parents=True, exist_ok=True)
            job.limited[controller] = path
            job.mounts[path / "job"] = mount
        except OSError as exc:
            missing.append(controller)
            reasons.append(f"{controller}: {parent}: {exc.strerror or exc}")
    job.missing = tuple(missing)
    job.reason = "; ".join(reasons)
    return job


def _write_limit(path: Path, controller: str, max_processes: int, memory_mb: int,
                 cpus: float) -> None:
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
