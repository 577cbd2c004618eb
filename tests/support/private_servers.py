"""A PostgreSQL and a Redis of a test's own, which the test may stop and start again.

The shared servers (PostgreSQL on 5432, Redis on 6379) are never stopped: a test that needs an
outage starts these instead, each in a directory of its tmp_path and on a free loopback port.
PostgreSQL refuses to run as root; as root it runs in a user namespace that maps root to the
`postgres` user, so the files stay the test's and no directory outside tmp_path changes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
from pathlib import Path

from tests.support.smtp import free_port
from tests.support.waiting import wait_for


def _postgres_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def missing_reason() -> str | None:
    """None when a private PostgreSQL and Redis can be started here, else why not."""
    for name in ("initdb", "postgres"):
        if _postgres_bin(name) is None:
            return f"{name} not found: install Debian's postgresql"
    if shutil.which("redis-server") is None:
        return "redis-server not found: install Debian's redis-server"
    if os.geteuid() == 0 and shutil.which("unshare") is None:
        return "unshare (util-linux) is needed to run PostgreSQL as root"
    return None


def _as_owner(argv: list[str]) -> list[str]:
    """`argv` as a non-root user: PostgreSQL will not run as root."""
    if os.geteuid() != 0:
        return argv
    try:
        user = pwd.getpwnam("postgres")
        uid, gid = user.pw_uid, user.pw_gid
    except KeyError:
        uid = gid = 65534
    return ["unshare", "--user", f"--map-user={uid}", f"--map-group={gid}", *argv]


class PrivatePostgres:
    """initdb into `root`; `start`, `crash` (an immediate shutdown, as a lost server) and
    `stop`; `url(db)` for SQLAlchemy."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(_as_owner([str(_postgres_bin("initdb")), "-D", str(self.data), "-U",
                                  "postgres", "-A", "trust", "--no-sync"]),
                       check=True, capture_output=True, timeout=120)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{db}"

    def _answers(self) -> bool:
        import psycopg

        try:
            psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                            connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            return False

    def start(self) -> None:
        log = (self.root / "postgres.log").open("ab")
        self.proc = subprocess.Popen(
            _as_owner([str(_postgres_bin("postgres")), "-D", str(self.data), "-p",
                       str(self.port), "-c", "listen_addresses=127.0.0.1",
                       "-c", "unix_socket_directories=", "-c", "fsync=off"]),
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for(self._answers, f"PostgreSQL on port {self.port} answering")

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _end(self, sig: signal.Signals) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def crash(self) -> None:
        """Immediate shutdown (SIGQUIT): every connection drops, nothing is checkpointed."""
        self._end(signal.SIGQUIT)

    def stop(self) -> None:
        self._end(signal.SIGINT)


class PrivateRedis:
    """redis-server with its append-only file in `root` (as docker-compose.yml runs it);
    `kill` is a crash (SIGKILL), `start` brings the same data back."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def _answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        log = (self.root / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
             str(self.root), "--appendonly", "yes", "--save", "", "--daemonize", "no"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for(self._answers, f"Redis on port {self.port} answering")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
