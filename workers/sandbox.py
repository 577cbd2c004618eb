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
  namespace, and at most `max_log_bytes` of output kept (the beginning and the end);
- read-only filesystem (when the mount namespace works, i.e. as root or with user namespaces):
  every mount but the writable directories, /proc and /dev is remounted read-only inside the
  namespace, so a build can write only its O= directory, its temporary directory and ccache.
What is not enforced: the build still runs with our uid (root here) in the other namespaces;
it can read any file it has permission to (not secret files behind permissions we do not
control), use all CPUs, and fill the writable directories up to the disk's free space.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
ENV_ALLOWED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "CCACHE_DIR",
               "CCACHE_BASEDIR", "CCACHE_NOHASHDIR", "KBUILD_BUILD_TIMESTAMP",
               "KBUILD_BUILD_USER", "KBUILD_BUILD_HOST", "SOURCE_DATE_EPOCH")


class SandboxError(RuntimeError):
    """The sandbox cannot be set up here; nothing was run."""


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 4 * 3600
    memory_mb: int = 4096
    wall_seconds: float = 3 * 3600
    max_file_mb: int = 2048
    max_log_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True)
class SandboxResult:
    returncode: int
    output: str  # stdout and stderr interleaved, at most max_log_bytes of it
    truncated: bool  # the middle of the output was dropped
    timed_out: bool
    seconds: float
    isolation: str  # how it was isolated, for the record


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


# Inside the new mount namespace: keep the writable directories writable (bind mounts of
# themselves), then remount every other mount read-only. Only this namespace sees it.
_READONLY_SCRIPT = r"""
set -e
for dir in $LORELAB_WRITABLE; do mount --bind "$dir" "$dir"; done
keep=" $LORELAB_WRITABLE "
awk '{print $2}' /proc/self/mounts | while read -r mp; do
  case "$mp" in /proc|/proc/*|/dev|/dev/pts|/dev/pts/*|/sys|/sys/*) continue ;; esac
  case "$keep" in *" $mp "*) continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
unset LORELAB_WRITABLE
exec "$@"
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


def _limit(limits: Limits) -> None:  # runs in the child before exec
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
    readonly_root: bool = True,
) -> SandboxResult:
    """Run `argv` in `cwd` isolated as the module docstring says; `env` is the whole
    environment (see `minimal_env`). Raises SandboxError when it cannot be isolated."""
    name, prefix = isolation()
    command = [*prefix]
    run_env = dict(env)
    if readonly_root and "mountns" in name:
        for path in writable:
            if " " in str(path):
                raise SandboxError(f"writable directory {path} has a space in its path")
        run_env["LORELAB_WRITABLE"] = " ".join(str(Path(p).resolve()) for p in writable)
        command += ["sh", "-c", _READONLY_SCRIPT, "lorelab-sandbox"]
        name += "+readonly-root"
    command += list(argv)
    started = time.monotonic()
    capture = _CappedOutput(limits.max_log_bytes)
    proc = subprocess.Popen(
        command, cwd=cwd, env=run_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=functools.partial(_limit, limits),  # noqa: PLW1509 - no threads in the child
    )
    assert proc.stdout is not None

    def pump() -> None:
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            capture.add(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    expired = threading.Event()

    def kill() -> None:
        expired.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the namespace's init dies, and the rest too

    # A timer, not wait(timeout=...): that polls with sleeps of up to 50 ms per call.
    timer = threading.Timer(limits.wall_seconds, kill)
    timer.start()
    try:
        proc.wait()
    finally:
        timer.cancel()
    timed_out = expired.is_set()
    reader.join(timeout=10)
    output = capture.text()
    if timed_out:
        output += f"\nlorelab: killed after {limits.wall_seconds:.0f} s (wall-clock limit)\n"
    return SandboxResult(
        returncode=proc.returncode, output=output, truncated=capture.dropped > 0,
        timed_out=timed_out, seconds=time.monotonic() - started, isolation=name,
    )
