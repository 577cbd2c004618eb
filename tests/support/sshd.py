"""A real OpenSSH server on 127.0.0.1 for tests: its own host key, client key and config.

`start_sshd(directory)` generates both keys with ssh-keygen, writes an sshd_config that accepts
only the client key for the user running the tests, starts `sshd -D -e` on a free port and waits
until it accepts connections; `Sshd.stop()` ends it. Nothing outside `directory` is used, except
/run/sshd, which sshd running as root insists on (made when missing).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def why_no_sshd() -> str | None:
    """None when a test sshd can be started here, else why not (the reason tests skip)."""
    if not Path(SSHD).exists():
        return f"{SSHD} is not installed (Debian: openssh-server)"
    missing = [tool for tool in ("ssh", "ssh-keygen") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (Debian: openssh-client)"
    return None


@dataclass
class Sshd:
    """A running test sshd and what a client needs to reach it."""

    process: subprocess.Popen[bytes]
    port: int
    user: str
    client_key: Path  # private key whose public half is authorized
    other_key: Path  # a valid key that is not authorized
    log: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_sshd(directory: Path) -> Sshd:
    """sshd on 127.0.0.1 accepting `client_key` for this user; RuntimeError with its log if not."""
    directory.mkdir(parents=True, exist_ok=True)
    host_key, client_key, other_key = (directory / n for n in ("host_key", "client", "other"))
    for key in (host_key, client_key, other_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "lorelab-test",
                        "-f", str(key)], check=True, capture_output=True)
    authorized = directory / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    authorized.chmod(0o600)
    port = free_port()
    config = directory / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {host_key}",
        f"PidFile {directory / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized}",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # Accept any variable a client sends: lets a test see that the runner sends none.
        "AcceptEnv *",
        # Speed only (each runner call is a few sessions): the user's ~/.bashrc may be heavy
        # (bash reads it for ssh commands unless SHLVL says it is nested), and the default
        # post-quantum key exchange costs ~50 ms a session here.
        "SetEnv SHLVL=1",
        "KexAlgorithms curve25519-sha256",
        "",
    ]))
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = directory / "sshd.log"
    with log.open("wb") as out:
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=out,
                                   stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited {process.returncode}: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return Sshd(process=process, port=port, user=getpass.getuser(),
                        client_key=client_key, other_key=other_key, log=log)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"sshd did not listen on port {port} within 10 s: {log.read_text()}")
