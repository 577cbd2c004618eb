"""The `ssh` runner: boot each kernel on a real lab machine over SSH and run the job there.

Per boot: copy the kernel image to the machine's `kernel_dir` (skipped when a file with the same
sha256 is already there), read its boot id, run `boot_command` (kexec or reboot: the connection
dropping is expected), wait until the machine answers with a different boot id, then upload the
job script (workers.lab.job), run it with `sh`, bring its results directory back as a tar stream
and remove it from the machine.

Only the system `ssh` binary is used, with `-F none` so that no user or system ssh_config applies:
in particular no `SendEnv` (our environment, which may hold secrets, stays here), no
ControlMaster, no agent forwarding. Host keys are accepted on first use and pinned in a
known_hosts file of our own. The key's path is never written to errors or logs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import shlex
import subprocess
import tarfile
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from bot.benchmarks.definition import Benchmark
from bot.config import data_dir
from bot.config.lab_hosts import LabHostSettings
from workers.lab.job import BootInfo, RunFailed, collect, job_script
from workers.lab.machine import MACHINE_DIR, read_machine
from workers.lab.pairs import Sample

__all__ = ["RunFailed", "SshRunner"]

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10  # seconds for the TCP connection and key exchange
ALIVE_INTERVAL = 5  # a silent connection is dropped after ALIVE_INTERVAL * ALIVE_COUNT seconds
ALIVE_COUNT = 3
FIRST_POLL_DELAY = 0.2  # seconds between boot-id polls, doubling up to MAX_POLL_DELAY
MAX_POLL_DELAY = 10.0
SSH_FAILED = 255  # ssh's own exit status: the connection failed or dropped


def ssh_argv(host: LabHostSettings, known_hosts: Path, command: str,
             connect_timeout: float = CONNECT_TIMEOUT) -> list[str]:
    """The `ssh` command line that runs `command` (a shell command) on `host`."""
    argv = [
        "ssh", "-F", "none", "-T",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=accept-new",
        "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", f"ConnectTimeout={max(1, round(connect_timeout))}",
        "-o", f"ServerAliveInterval={ALIVE_INTERVAL}",
        "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
        "-o", "LogLevel=ERROR",  # errors only: no "Permanently added ..." noise in messages
        "-p", str(host.port),
        "-l", host.user,
    ]
    if host.key:
        argv += ["-o", "IdentitiesOnly=yes", "-i", host.key]
    return [*argv, "--", host.address, command]


def ssh_advice(host: LabHostSettings, known_hosts: Path, stderr: str) -> str:
    """What to check, from what ssh printed when it failed."""
    where = f"{host.address}:{host.port}"
    if "Permission denied" in stderr:
        return (f"the machine refused the key: check that lab host {host.name!r}'s `key` is the "
                f"private half of a key in {host.user}'s authorized_keys on {host.address}")
    if "Connection refused" in stderr:
        return f"nothing accepts connections on {where}: check that sshd runs there, and `port`"
    if "Could not resolve hostname" in stderr:
        return f"check lab host {host.name!r}'s `address` ({host.address!r})"
    if any(s in stderr for s in ("timed out", "No route to host", "Network is unreachable")):
        return (f"{where} does not answer: check `address`, the network, and that the machine "
                "is up")
    if "Host key verification failed" in stderr or "IDENTIFICATION HAS CHANGED" in stderr:
        return (f"{host.address}'s host key is not the one recorded in {known_hosts}; if the "
                "machine was reinstalled, remove its line there")
    if "closed by remote host" in stderr or "Broken pipe" in stderr:
        return "the connection dropped: check that the machine is up and did not reboot"
    return f"check lab host {host.name!r}'s `key`, `address` and `port`, and that sshd runs there"


def boot_command(host: LabHostSettings, remote_kernel: str) -> str:
    """The host's boot command with `{kernel}` filled in (quoted for the shell)."""
    return host.boot_command.replace("{kernel}", shlex.quote(remote_kernel))


def remote_kernel_path(host: LabHostSettings, kernel: str) -> str:
    """Where kernel "A" or "B" is kept on the machine: one file per slot, so that a campaign
    leaves at most two images in `kernel_dir`, whatever it ran before."""
    return f"{host.kernel_dir.rstrip('/')}/lorelab-{kernel}"


@dataclass(frozen=True)
class SshRunner:
    """`run_one` for `run_pairs`: boots `kernels[kernel]` on `host` and runs `benchmark` there."""

    benchmark: Benchmark
    kernels: Mapping[str, Path]  # "A" and "B" -> a kernel image on this machine
    host: LabHostSettings
    known_hosts: Path | None = None  # None: ssh/known_hosts in lorelab's data directory
    lru: str | None = None  # switch the machine's LRU first: "mglru", "classic" (bot.runs.lru)
    # Per kernel ("A", "B"): the machine its last boot ran on, as the job read it.
    machine: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, kernel: str, pair_index: int, position: int) -> tuple[Sample, ...]:
        if self.host.key and not Path(self.host.key).is_file():
            raise RunFailed(f"lab host {self.host.name!r}: its `key` file does not exist here")
        started = datetime.now(UTC)
        image = Path(self.kernels[kernel])
        remote = remote_kernel_path(self.host, kernel)
        digest = _sha256(image)
        there, before = self._look(remote)
        if there == digest:
            log.info("%s: kernel %s already at %s, not copied", self.host.name, kernel, remote)
        else:
            self._copy(image, remote, digest)
        boot_id = self._boot(remote, before)
        boot = BootInfo(kernel=kernel, pair_index=pair_index, position=position,
                        host=self.host.name, accel="bare", time=started)
        samples = self._run_job(remote, boot)
        # The boot id that was waited for names the boot, whatever /proc said inside the job.
        return tuple(replace(s, boot_id=boot_id) for s in samples)

    def _look(self, remote: str) -> tuple[str, str]:
        """The sha256 of the file at `remote` ("none" if absent) and the current boot id, in one
        round trip: each ssh session costs a key exchange and a login shell."""
        said = self._ssh(f"sha256sum -- {shlex.quote(remote)} 2>/dev/null || echo none; "
                         f"{self.host.boot_id_command}", what="reading the boot id")
        digest, _, boot_id = said.decode(errors="replace").partition("\n")
        if not boot_id.strip():
            raise RunFailed(f"lab host {self.host.name!r}: `boot_id_command` printed nothing")
        return digest.split(" ")[0], boot_id.strip()

    def _copy(self, image: Path, remote: str, digest: str) -> None:
        """Copies `image` to `remote` through a temporary name, so that a cut copy is never
        taken for the kernel; RunFailed when what arrived differs."""
        log.info("%s: copying %s to %s", self.host.name, image.name, remote)
        quoted, part = shlex.quote(remote), shlex.quote(remote + ".part")
        with image.open("rb") as data:
            copied = self._ssh(
                f"mkdir -p -- {shlex.quote(self.host.kernel_dir)} && cat > {part} && "
                f"mv -f -- {part} {quoted} && sha256sum -- {quoted}",
                what=f"copying {image.name} to {remote}", stdin=data).split()
        if copied[:1] != [digest.encode()]:
            raise RunFailed(f"lab host {self.host.name!r}: the copy of {image.name} at {remote} "
                            "does not match the image (is the disk there full?)")

    def _boot(self, remote_kernel: str, before: str) -> str:
        """Boots the kernel at `remote_kernel`; the new boot id once the machine answers."""
        command = boot_command(self.host, remote_kernel)
        log.info("%s: booting %s (boot id before: %s)", self.host.name, remote_kernel, before)
        deadline = time.monotonic() + self.host.timeout
        said = self._boot_command(command, deadline)
        delay = FIRST_POLL_DELAY
        while True:
            answer, error = self._poll_boot_id(deadline - time.monotonic())
            if answer is not None and answer != before:
                log.info("%s: up again, boot id %s", self.host.name, answer)
                return answer
            if time.monotonic() + delay >= deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, MAX_POLL_DELAY)
        name, limit = self.host.name, self.host.timeout
        if answer is not None:
            raise RunFailed(f"lab host {name!r}: the kernel did not boot: the boot id is still "
                            f"{before} {limit} s after `{command}` ({said})")
        raise RunFailed(f"lab host {name!r}: the machine did not answer within {limit} s after "
                        f"`{command}`: {error}; "
                        f"{ssh_advice(self.host, self._known_hosts(), error)}")

    def _boot_command(self, command: str, deadline: float) -> str:
        """Runs the boot command; what it printed. It may end the connection (or hang until
        ServerAlive drops it), so its failure is reported only if the boot id never changes."""
        try:
            done = subprocess.run(self._argv(command), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True,
                                  timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            return "it was still running at the timeout"
        said = self._scrub((done.stdout + done.stderr).strip())[-1000:]
        return f"it exited {done.returncode}" + (f": {said}" if said else "")

    def _poll_boot_id(self, remaining: float) -> tuple[str | None, str]:
        """The machine's boot id, or None and why it did not answer."""
        try:
            poll = subprocess.run(
                self._argv(self.host.boot_id_command, min(CONNECT_TIMEOUT, remaining)),
                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                timeout=max(remaining, 1))
        except subprocess.TimeoutExpired:
            return None, "no answer"
        answer = poll.stdout.strip()
        if poll.returncode == 0 and answer:
            return answer, ""
        return None, self._scrub(poll.stderr.strip()) or f"exit {poll.returncode}, no boot id"

    def _run_job(self, remote_kernel: str, boot: BootInfo) -> tuple[Sample, ...]:
        """Uploads and runs the job, and brings its results back, in one session whose output
        is a tar of the results directory; the job's directory is removed in any case."""
        work = f"{self.host.job_dir.rstrip('/')}/lorelab-job-{uuid.uuid4().hex}"
        w = shlex.quote(work)
        argv = self.benchmark.argv(kernel=remote_kernel, scratch=f"{work}/scratch")
        script = job_script(self.benchmark, argv, f"{work}/results", self.host.iterations,
                            lru=self.lru)
        command = (f"mkdir -m 700 {w} && mkdir {w}/scratch && cat > {w}/job.sh || exit 1; "
                   f"sh {w}/job.sh < /dev/null > {w}/job.log 2>&1; uname -r > {w}/release; "
                   f"tar -C {w} -cf - results release; status=$?; rm -rf -- {w}; exit $status")
        try:
            archive = self._ssh(command, what=f"running {self.benchmark.name}",
                                stdin=script.encode())
        except RunFailed:
            with contextlib.suppress(RunFailed):
                self._ssh(f"rm -rf -- {w}", what="removing the job directory", check=False)
            raise
        with tempfile.TemporaryDirectory(prefix="lorelab-ssh-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(archive)) as files:
                files.extractall(tmp, filter="data")
            release = (Path(tmp) / "release").read_text(errors="replace").strip()
            log.info("%s: ran %s on kernel %s (uname -r: %s)", self.host.name,
                     self.benchmark.name, boot.kernel, release)
            samples = collect(self.benchmark, Path(tmp) / "results", self.host.iterations,
                              boot)
            self.machine[boot.kernel] = {**read_machine(Path(tmp) / "results" / MACHINE_DIR),
                                         "runner": "ssh"}
            return samples

    def _ssh(self, command: str, *, what: str, stdin: bytes | BinaryIO | None = None,
             check: bool = True) -> bytes:
        """What `command` printed on the machine; RunFailed (what failed, ssh's words, what to
        check) when ssh itself fails or the command exits non-zero."""
        feed = ({"input": stdin} if isinstance(stdin, bytes)
                else {"stdin": subprocess.DEVNULL if stdin is None else stdin})
        try:
            done = subprocess.run(self._argv(command), capture_output=True,
                                  timeout=self.host.timeout, **feed)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"lab host {self.host.name!r}: timed out after {self.host.timeout} s "
                            f"{what}") from None
        if check and done.returncode != 0:
            stderr = self._scrub(done.stderr.decode(errors="replace").strip())
            advice = (ssh_advice(self.host, self._known_hosts(), stderr)
                      if done.returncode == SSH_FAILED else "")
            raise RunFailed(f"lab host {self.host.name!r} ({self.host.user}@{self.host.address}:"
                            f"{self.host.port}): {what} failed (exit {done.returncode}): "
                            f"{stderr or 'no message'}" + (f"; {advice}" if advice else ""))
        return done.stdout

    def _argv(self, command: str, connect_timeout: float = CONNECT_TIMEOUT) -> list[str]:
        return ssh_argv(self.host, self._known_hosts(), command, connect_timeout)

    def _known_hosts(self) -> Path:
        path = self.known_hosts or data_dir() / "ssh" / "known_hosts"
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def _scrub(self, text: str) -> str:
        """`text` without the key's path (ssh names it when the file is unreadable)."""
        return text.replace(self.host.key, "<key>") if self.host.key else text


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
