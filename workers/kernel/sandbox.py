"""Running untrusted build commands: a patch is code from a stranger.

What is enforced, on every build:
- no network: a new network namespace (`unshare --net` as root, `unshare -rn` otherwise)
  with only a loopback device that is down; if neither works the build is refused
  (`SandboxError`), never run unconfined;
- no secrets: the environment is rebuilt from an allow-list (PATH, HOME, LANG, TMPDIR,
  CCACHE_DIR, ...); nothing of the worker's own environment (SMTP password, tokens, database
  URL) is passed on, and a new PID namespace hides the worker's /proc/PID/environ;
- limits: RLIMIT_CPU, RLIMIT_AS and RLIMIT_FSIZE on every process of the build (inherited, so
  per process, not a total), no core files, a wall-clock timeout that kills the whole
  namespace, and at most `max_log_bytes` of output kept (the beginning and the end); a cgroup
  of the job's own (`workers.kernel.job_cgroup`: pids.max, a memory limit, a CPU quota, IO
  rates on the disks of its directories), where a fork bomb is killed as soon as it meets
  pids.max; a watcher that kills the job when its `disk` directories hold more than
  `max_disk_mb`. `SandboxResult.limit` says which limit stopped it, and the output says so
  too (and names any cgroup limit the host could not give);
When the mount namespace works (as root, or with user namespaces), also:
- read-only filesystem: every mount but the writable directories, /proc and /dev is remounted
  read-only inside the namespace, so a build can write only its O= directory, its temporary
  directory and ccache; /proc/sys, /proc/sysrq-trigger and /sys are read-only too, and so is
  the cgroup tree but for the job's own cgroup, mounted over its hierarchy (where benchmarks
  make their memcg) (root could write core_pattern or uevent_helper, which
  run a program of its choosing outside the sandbox, whatever its capabilities);
- hidden secrets: below every place `secret_roots` names (homes, /root, /tmp, /run, /var,
  /boot, /mnt, /media, host and TLS keys and password hashes in /etc, lorelab's data and
  configuration directories, and /dev but for null, zero, full, random, urandom and tty),
  everything the job was not given (`readable`, `writable`, `cwd`) is covered: directories
  by an empty read-only tmpfs, other files by /dev/null, which cannot be opened there. The
  directories leading to what was given stay, with the names in them (their contents
  hidden); see `hidden_paths`. That covers keys, passwords and the database, and also the
  sockets of privileged daemons (systemd, docker, ssh-agent, tmux, PostgreSQL, Redis) that a
  build could otherwise ask to act outside the sandbox;
- no capabilities but CAP_NET_ADMIN (to bring its own loopback up): a build running as root
  cannot unmount what hides the secrets, remount anything read-write, load modules or read
  a disk's blocks through a device of its own making.
What is not enforced: the build still runs with our uid (root here), so it can read anything
our uid may read outside those places (other secrets in /etc, /srv or /opt; the repository
it was given, remote URLs with tokens in its .git/config included; our kernel keyrings;
SysV shared memory, as no IPC namespace is made); a file created in a directory leading to a
kept path after the job started is not hidden; the disk watcher looks four times a second, so
a job may write past `max_disk_mb` by what it writes in that time (RLIMIT_FSIZE bounds each
file), and directories not in `disk` (ccache, bounded by its own max_size) are not counted.
Without a mount namespace (`userns+netns`) nothing is hidden, the filesystem is as writable as
for our uid, and so is the cgroup tree; without cgroups (not root, no delegated subtree) there
is no process limit and no total memory or CPU limit, and the output says so. IO is not
limited on a directory with no block device (tmpfs, overlay, virtio-fs), and on cgroup v1 the
kernel's writeback of buffered writes is not counted (reads, O_DIRECT and fsync'd writes are);
the output says "IO not limited: <why>" for each directory with no block device, and when the
host gives no IO controller.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bot.config import data_dir, default_config_path
from workers.kernel.block_device import disk_of
from workers.kernel.job_cgroup import IoLimit, JobCgroup, make_job_cgroup

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
ENV_ALLOWED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "CCACHE_DIR",
               "CCACHE_BASEDIR", "CCACHE_NOHASHDIR", "CCACHE_READONLY", "CCACHE_NOSTATS",
               "CCACHE_TEMPDIR", "KBUILD_BUILD_TIMESTAMP",
               "KBUILD_BUILD_USER", "KBUILD_BUILD_HOST", "SOURCE_DATE_EPOCH",
               "KCFLAGS")  # an align follow-up's -falign-functions=64 (workers/kernel/build.py)


# Where a deployment keeps what a stranger's code must not read, besides the worker's home and
# lorelab's own data and configuration directories (`secret_roots`): homes; service data
# (/var/lib/postgresql, /var/lib/redis, /var/lib/mysql, mail, logs, containers, backups of
# /etc/shadow: all of /var); mounted disks; host, TLS and VPN keys and password hashes in /etc;
# and where sockets of privileged daemons live (systemd, docker, ssh-agent, tmux: /run, /tmp).
# Nothing a build or a benchmark needs is there but what it is given.
SECRET_ROOTS = (
    "/root", "/home", "/tmp", "/run", "/var", "/boot", "/mnt", "/media", "/dev",
    "/etc/lorelab", "/etc/ssh", "/etc/ssl/private", "/etc/letsencrypt", "/etc/wireguard",
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/krb5.keytab",
)
# The devices every job may use; the rest of /dev (disks above all: root may read their blocks
# whatever its capabilities) is hidden.
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
# What every program needs: never hidden, not even when a symlink under a root points there,
# and a root that holds one of them (a home of "/") is not walked at all.
SYSTEM = tuple(Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                 "/libx32", "/etc", "/opt", "/proc", "/sys"))
# Each hidden path is one mount, and `mount -a` looks each one up in the mount table: a job
# starts 0.15 s later with 1,000 of them, 3.4 s later with 10,000. Beyond this it is refused.
MAX_HIDDEN = 20_000


class SandboxError(RuntimeError):
    """The sandbox cannot be set up here; nothing was run."""


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 4 * 3600
    memory_mb: int = 4096  # RLIMIT_AS of each process, and the job cgroup's memory limit
    wall_seconds: float = 3600
    max_file_mb: int = 2048
    max_log_bytes: int = 4 * 1024 * 1024
    max_processes: int = 2048  # pids.max of the job cgroup: a fork bomb stops here
    max_disk_mb: int = 20480  # of the watched directories (`disk`); beyond, the job is killed
    cpus: float = 0  # the job cgroup's CPU quota in CPUs; 0: every CPU
    # IO on each disk holding its directories (cwd, writable), per second; 0: no limit.
    io_read_mbps: int = 0
    io_write_mbps: int = 0
    io_read_iops: int = 0
    io_write_iops: int = 0


@dataclass(frozen=True)
class SandboxResult:
    returncode: int
    output: str  # stdout and stderr interleaved, at most max_log_bytes of it
    truncated: bool  # the middle of the output was dropped
    timed_out: bool
    seconds: float
    isolation: str  # how it was isolated, for the record
    # The limit that stopped the job: "process", "disk", "memory", "wall", or None.
    limit: str | None = None
    peak_processes: int | None = None  # the most processes it had at once (pids.peak)


_PROBES = (
    ("netns+mountns+pidns", ["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child",
                             "--mount-proc"]),
    ("userns+netns+mountns+pidns", ["unshare", "-rn", "--mount", "--pid", "--fork",
                                    "--kill-child", "--mount-proc"]),
    ("userns+netns", ["unshare", "-rn"]),
)


@functools.cache
def isolation() -> tuple[str, tuple[str, ...]]:
    """(name, command prefix) of the strongest isolation that works here; SandboxError if none."""
    tried = []
    for name, prefix in _PROBES:
        if name.startswith("netns") and os.geteuid() != 0:
            continue
        try:
            result = subprocess.run([*prefix, "true"], capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(f"{' '.join(prefix)}: {exc}")
            continue
        if result.returncode == 0:
            return name, tuple(prefix)
        tried.append(f"{' '.join(prefix)}: {result.stderr.decode(errors='replace').strip()}")
    raise SandboxError(
        "cannot isolate builds from the network (a patch is untrusted code, so lorelab will "
        "not build without it); tried: " + "; ".join(tried)
        + ". Run the build worker as root, or enable unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1)."
    )


def secret_roots() -> list[Path]:
    """Where secrets are on a typical deployment: SECRET_ROOTS, the worker's home, and lorelab's
    data directory and configuration directories (the default one and $LORELAB_CONFIG's)."""
    roots = [Path.home(), *map(Path, SECRET_ROOTS), data_dir(), default_config_path().parent]
    if os.environ.get("LORELAB_CONFIG"):
        roots.append(Path(os.environ["LORELAB_CONFIG"]).parent)
    return roots


def hidden_paths(roots: Iterable[Path], keep: Iterable[Path],
                 limit: int = MAX_HIDDEN) -> list[Path]:
    """The paths to cover so that nothing under `roots` can be read but `keep`.

    From each root (symlinks resolved) down: a kept path is left alone (secrets win: a root
    inside a kept directory is still walked), a directory leading to one is listed and each of
    its entries judged the same way, anything else is hidden whole. Only leading directories are
    listed, once each, and symlinks in them are not followed: a mount over a symlink would land
    on its target, so it is the target that is hidden, unless it is under a root (judged
    there), needed, or part of the system (SYSTEM). Outermost paths only, shallowest first;
    SandboxError beyond `limit` of them.
    """
    given = [Path(os.path.abspath(p)) for p in keep]
    kept = {path.resolve() for path in given}
    # The directories on the path as given lead to it too: a symlink on the way stays usable.
    leading = {parent for path in (*kept, *given) for parent in path.parents}
    walked = sorted({root for root in (Path(r).resolve() for r in roots)
                     if os.path.lexists(root) and not _holds_system(root)})
    hidden: set[Path] = set()
    links: list[Path] = []
    pending = list(walked)
    while pending:
        path = pending.pop()
        if path in kept:
            continue
        if path not in leading:
            hidden.add(path)
            continue
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue  # we cannot list it (not root): nor can the job, which runs as we do
        for entry in entries:
            (links if entry.is_symlink() else pending).append(Path(entry.path))
    for link in links:
        try:
            target = link.resolve()
        except (OSError, RuntimeError):  # a symlink loop leads nowhere
            continue
        if (target.exists() and not _under_any(target, walked) and target not in leading
                and not _under_any(target, kept) and not _holds_system(target)
                and not _under_any(target, SYSTEM)):
            hidden.add(target)
    outermost = _outermost(hidden)
    if len(outermost) > limit:
        parent, count = collections.Counter(p.parent for p in outermost).most_common(1)[0]
        raise SandboxError(
            f"{len(outermost)} paths to hide from the job, more than {limit}; {count} of them "
            f"in {parent}, which also leads to what the job needs: move the job's files "
            "(the build work_dir, the tree) out of it")
    return outermost


def _under_any(path: Path, tops: Iterable[Path]) -> bool:
    return any(path == top or top in path.parents for top in tops)


def _holds_system(path: Path) -> bool:
    return any(path == system or path in system.parents for system in SYSTEM)


def _outermost(paths: set[Path]) -> list[Path]:
    # On strings: 10,000 paths in one directory take 20 ms, not 300 (Path hashing).
    chosen: list[str] = []
    seen: set[str] = set()
    for name in sorted((str(p) for p in paths), key=lambda name: (name.count("/"), name)):
        parent = name
        while parent != "/" and parent not in seen:
            parent = os.path.dirname(parent)
        if parent not in seen:
            chosen.append(name)
            seen.add(name)
    return [Path(name) for name in chosen]


_MOUNT_OPTIONS = "ro,nosuid,nodev,noexec"  # nodev: a file covered by /dev/null cannot be opened


def mount_table(hidden: Sequence[Path]) -> str:
    """`hidden` as fstab lines for `mount -a`: the first directory gets an empty read-only tmpfs,
    the other directories a bind mount of it (one superblock, not thousands), other files
    /dev/null. A path gone since it was listed is left out."""
    lines = []
    first_dir = ""
    for path in hidden:
        try:
            is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            continue
        target = _fstab_escape(str(path))
        if not is_dir:
            lines.append(f"/dev/null {target} none bind,{_MOUNT_OPTIONS} 0 0")
        elif not first_dir:
            first_dir = target
            lines.append(f"lorelab-hidden {target} tmpfs {_MOUNT_OPTIONS},mode=755 0 0")
        else:
            lines.append(f"{first_dir} {target} none bind,{_MOUNT_OPTIONS} 0 0")
    return "".join(line + "\n" for line in lines)


def _fstab_escape(path: str) -> str:
    # fstab's and /proc/self/mountinfo's octal escapes: any file name is a single field.
    for char in "\\ \t\n":
        path = path.replace(char, f"\\{ord(char):03o}")
    return path


# Inside the new mount namespace, first: each `binds` directory over its place (a build's own
# copy of the base objects where the base build had them, so that every path is the same), and
# the job's own cgroup over each cgroup hierarchy it has one in (the job sees only its own
# subtree there; see _CONFINE_SCRIPT).
_BIND_SCRIPT = r"""
for pair in $LORELAB_BINDS; do mount --bind "${pair%%=*}" "${pair#*=}"; done
"""
# Then (only this namespace sees it), when asked for: keep the
# writable directories writable (bind mounts of themselves), then remount every other mount
# read-only.
_READONLY_SCRIPT = r"""
for dir in $LORELAB_WRITABLE; do mount --bind "$dir" "$dir"; done
keep=" $LORELAB_WRITABLE "
awk '{print $2}' /proc/self/mounts | while read -r mp; do
  case "$mp" in /proc|/proc/*|/dev|/dev/pts|/dev/pts/*|/sys|/sys/*) continue ;; esac
  case "$keep" in *" $mp "*) continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
"""
# Always: root may write the kernel's knobs whatever its capabilities (core_pattern and
# uevent_helper run a program of its choosing outside the sandbox), so /proc/sys and /sys are
# read-only, the cgroup tree too (a job could freeze another cgroup or move itself to the root)
# but for the job's own cgroup, bound over its hierarchy's mount point (LORELAB_CGROUPS), where
# benchmarks make their memcg. Then hide: stdin is
# `mount_table`, mounted by one `mount -a` (a `mount` per path costs a millisecond each); a
# path that vanished since it was listed fails to mount, so only a path that still exists and
# is not covered stops the job. Last, drop every capability but CAP_NET_ADMIN (memcached.sh
# brings up the namespace's loopback): a job running as root could otherwise unmount what
# hides the secrets or remount anything read-write.
_CONFINE_SCRIPT = r"""
for knob in /proc/sys /proc/sysrq-trigger; do
  [ -e "$knob" ] || continue
  mount --bind "$knob" "$knob"
  mount -o remount,bind,ro "$knob"
done
awk '{print $2}' /proc/self/mounts | sort -u | while read -r mp; do
  case "$mp" in /sys|/sys/*) ;; *) continue ;; esac
  case " $LORELAB_CGROUPS " in *" $mp "*) continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
mount -a -T /proc/self/fd/0 2>/dev/null || true
awk 'NR == FNR { for (i = 7; $i != "-"; i++) ;
                 if ($(i + 2) == "lorelab-hidden" || $4 == "/null") covered[$5]; next }
     !($2 in covered) { print $2 }' /proc/self/mountinfo - |
while IFS= read -r escaped; do
  path=$(printf '%b_' "$(printf '%s' "$escaped" | sed 's/\\\([0-7][0-7][0-7]\)/\\0\1/g')")
  path=${path%_}
  if [ -e "$path" ] || [ -L "$path" ]; then
    echo "lorelab-sandbox: cannot hide $path" >&2
    exit 1
  fi
done
unset LORELAB_WRITABLE LORELAB_BINDS LORELAB_CGROUPS
exec setpriv --bounding-set=-all,+net_admin --inh-caps=-all --ambient-caps=-all \
  --no-new-privs -- "$@" </dev/null
"""


def minimal_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment a build gets: the allow-list, nothing inherited."""
    env = {"PATH": SAFE_PATH, "HOME": str(home), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "TERM": "dumb", "TMPDIR": str(home)}
    for key, value in (extra or {}).items():
        if key not in ENV_ALLOWED:
            raise ValueError(f"{key} is not an allowed build environment variable")
        env[key] = value
    return env


def _limit(limits: Limits, cgroup: JobCgroup) -> None:  # runs in the child before exec
    cgroup.join()
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    memory = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    size = limits.max_file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class _CappedOutput:
    """The first quarter and the last three quarters of at most `limit` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 4
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size > self.tail_limit:
            first = self.tail.popleft()
            excess = self.tail_size - self.tail_limit
            if len(first) > excess:
                self.tail.appendleft(first[excess:])
                self.dropped += excess
                self.tail_size -= excess
            else:
                self.dropped += len(first)
                self.tail_size -= len(first)

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() \
            if self.dropped else b""
        return (bytes(self.head) + middle + b"".join(self.tail)).decode(errors="replace")


def run_sandboxed(
    argv: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    limits: Limits,
    env: Mapping[str, str],
    readable: Sequence[Path] = (),
    readonly_root: bool = True,
    binds: Mapping[Path, Path] | None = None,
    disk: Sequence[Path] | None = None,
) -> SandboxResult:
    """Run `argv` in `cwd` isolated as the module docstring says; `env` is the whole
    environment (see `minimal_env`). What the job needs under a secret root is `cwd`, the
    `writable` directories and the `readable` paths (read-only); the rest is hidden. `binds`
    maps a place the job sees to the directory it is (with a mount namespace; SandboxError
    without). The `disk` directories (default: the writable ones, each bound one by its
    source) may hold `limits.max_disk_mb` in all. Raises SandboxError when it cannot be
    isolated."""
    name, prefix = isolation()
    binds = {Path(k): Path(v) for k, v in (binds or {}).items()}
    if binds and "mountns" not in name:
        raise SandboxError(f"{name}: no mount namespace, so a build cannot get its own copy "
                           "of the base objects; run the build worker as root or enable user "
                           "namespaces")
    command = [*prefix]
    run_env = dict(env)
    table = ""
    io, no_disk = io_limit(limits, [cwd, *(binds.get(Path(p), Path(p)) for p in writable)])
    cgroup = make_job_cgroup(limits.max_processes, limits.memory_mb,
                             limits.cpus or float(os.cpu_count() or 1), io)
    notes = []
    if cgroup.missing:
        notes.append(f"lorelab: this host gives the job no cgroup limit for "
                     f"{', '.join(cgroup.missing)} ({cgroup.reason}): those are not enforced")
    for why in [*no_disk, cgroup.io_unlimited]:
        if why:
            notes.append(f"lorelab: IO not limited: {why}")
    if "mountns" in name:
        if shutil.which("setpriv") is None:
            cgroup.remove()
            raise SandboxError("setpriv (util-linux) is not installed: without it a build "
                               "running as root could undo the sandbox; install util-linux")
        pairs = [*((str(source), str(place)) for place, source in binds.items()),
                 *((str(job), str(mount)) for job, mount in cgroup.mounts.items())]
        for path in [*(p for pair in pairs for p in pair), *map(str, writable)]:
            if " " in path or "=" in path:
                cgroup.remove()
                raise SandboxError(f"{path}: a space or '=' in a sandbox directory's path")
        run_env["LORELAB_BINDS"] = " ".join(f"{source}={place}" for source, place in pairs)
        run_env["LORELAB_CGROUPS"] = " ".join(str(m) for m in cgroup.mounts.values())
        script = "set -e\n" + _BIND_SCRIPT
        if readonly_root:
            run_env["LORELAB_WRITABLE"] = " ".join(str(Path(p).resolve()) for p in writable)
            script += _READONLY_SCRIPT
            name += "+readonly-root"
        table = mount_table(hidden_paths(secret_roots(),
                                         [*readable, *writable, cwd, *map(Path, DEVICES)]))
        command += ["sh", "-c", script + _CONFINE_SCRIPT, "lorelab-sandbox"]
        name += "+secrets-hidden+no-capabilities"
    elif cgroup.limited:
        notes.append("lorelab: no mount namespace: the job can write the cgroup tree")
    if cgroup.limited:
        name += "+cgroup(" + ",".join(sorted(cgroup.limited)) + ")"
    command += list(argv)
    watched = list(disk) if disk is not None else [binds.get(Path(p), Path(p))
                                                   for p in writable]
    started = time.monotonic()
    capture = _CappedOutput(limits.max_log_bytes)
    for note in notes:
        capture.add(note.encode() + b"\n")
    try:
        with tempfile.TemporaryFile() as stdin:  # the mount table, read in the namespace
            stdin.write(table.encode("utf-8", "surrogateescape"))
            stdin.seek(0)
            proc = subprocess.Popen(
                command, cwd=cwd, env=run_env, stdin=stdin if table else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=functools.partial(_limit, limits, cgroup),  # noqa: PLW1509 - no threads in the child
            )
        assert proc.stdout is not None

        def pump() -> None:
            for chunk in iter(lambda: proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
                capture.add(chunk)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        stopped: list[str] = []  # the limit that stopped the job, first one wins
        done = threading.Event()

        def kill(limit: str) -> None:
            stopped.append(limit)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the namespace's init dies, and the rest too
            cgroup.kill_all()

        def watch() -> None:
            # Wakes every quarter second (or when the job ends); a timer, not wait(timeout=...),
            # which polls with sleeps of up to 50 ms per call.
            deadline = started + limits.wall_seconds
            while not done.wait(min(0.25, max(0.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    return kill("wall")
                if cgroup.hit() == "process":
                    return kill("process")
                if limits.max_disk_mb and disk_usage(watched) > limits.max_disk_mb << 20:
                    return kill("disk")
            return None

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            proc.wait()
        finally:
            done.set()
            watcher.join()
        reader.join(timeout=10)
        if not reader.is_alive():  # a grandchild may still hold the pipe: the reader owns it
            proc.stdout.close()
        limit = stopped[0] if stopped else cgroup.hit()
        if limit is None and limits.max_disk_mb and \
                disk_usage(watched) > limits.max_disk_mb << 20:
            limit = "disk"  # filled between two looks and ended: still over
        peak = cgroup.peak_processes()
    finally:
        cgroup.remove()
    output = capture.text()
    if limit:
        output += "\nlorelab: " + limit_message(limit, limits) + "\n"
    return SandboxResult(
        returncode=proc.returncode, output=output, truncated=capture.dropped > 0,
        timed_out=limit == "wall", seconds=time.monotonic() - started, isolation=name,
        limit=limit, peak_processes=peak,
    )


def io_limit(limits: Limits, directories: Iterable[Path]) -> tuple[IoLimit | None, list[str]]:
    """The IO limit of a job using `directories`, and why any of them is not limited (no
    block device); (None, []) when `limits` sets no IO rate."""
    mib = 1024 * 1024
    rates = IoLimit(read_bps=limits.io_read_mbps * mib, write_bps=limits.io_write_mbps * mib,
                    read_iops=limits.io_read_iops, write_iops=limits.io_write_iops)
    if not rates.rates():
        return None, []
    disks, unlimited = [], []
    for directory in dict.fromkeys(directories):
        disk, why = disk_of(directory)
        if disk is None:
            unlimited.append(why)
        elif disk not in disks:
            disks.append(disk)
    return replace(rates, disks=tuple(disks)), unlimited


def limit_message(limit: str, limits: Limits) -> str:
    """What stopped a job, in words: "killed: it exceeded its process limit (2048)"."""
    what = {"wall": f"wall-clock limit ({limits.wall_seconds:.0f} s)",
            "process": f"process limit ({limits.max_processes} processes)",
            "disk": f"disk limit ({limits.max_disk_mb} MiB in its build directory)",
            "memory": f"memory limit ({limits.memory_mb} MiB)"}[limit]
    return f"killed: it exceeded its {what}"


def disk_usage(paths: Iterable[Path]) -> int:
    """Bytes of disk the files under `paths` take (st_blocks; a hard link counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    pending = [str(p) for p in paths]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
            if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                if (info.st_dev, info.st_ino) in seen:
                    continue
                seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total
