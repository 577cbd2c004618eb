"""`lorelab deliver`: a long-running delivery agent speaking LMTP (RFC 2033) on a Unix socket.

Postfix (`mailbox_transport = lmtp:unix:/path`) and Exim (an `lmtp` transport with `socket =`)
hand mail to it without starting a process per mail, so a delivery costs the storing alone
(`bench/delivery.py`). Each message is stored, in its own transaction, before the reply to its
DATA: `250` then means stored (or quarantined with its reason, or already stored), and `451`
that the database could not take it now, so the mail server keeps it and tries again. LMTP
answers DATA once per accepted recipient; every recipient gets the same answer, since a mail is
stored once, whoever it was for.

`Session` is the protocol, as a pure state machine over lines; `AgentServer` is the socket
around it. Messages are stored one at a time (a lock around `ingest`): SQLite takes one writer,
and a delivery is milliseconds, far less than a mail server's LMTP timeouts. One agent per
socket: it holds a lock on `SOCKET.lock` (holding its process id) while it lives, so two agents
started at once cannot both take the socket.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import socketserver
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

MAX_LINE = 4096  # command lines; RFC 5321 allows 512, extensions make them longer


class TemporaryFailure(Exception):
    """Storing failed for now (the database is down or locked): answer 4xx, keep nothing."""


# Stores one message (the bytes after DATA, dot-stuffing undone) for its recipients (as given
# in RCPT TO, without the angle brackets); returns what to say after "250 2.0.0 ", or raises
# TemporaryFailure.
Store = Callable[[bytes, list[str]], str]


@dataclass
class Session:
    """One LMTP conversation: feed it lines (CRLF or LF ended), send back what it returns."""

    store: Store
    hostname: str = "lorelab"
    greeted: bool = False
    sender: str | None = None
    recipients: list[str] = field(default_factory=list)
    reading_data: bool = False
    data: list[bytes] = field(default_factory=list)
    line_start: bool = True
    closed: bool = False

    def banner(self) -> bytes:
        return f"220 {self.hostname} LMTP lorelab ready\r\n".encode()

    def feed(self, line: bytes) -> bytes:
        """The reply to one line (empty while a message is being read)."""
        if self.reading_data:
            return self._data_line(line)
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        verb, _, rest = text.partition(" ")
        verb = verb.upper()
        handler = getattr(self, f"_{verb.lower()}", None) if verb.isalpha() else None
        if handler is None:
            return b"500 5.5.1 unknown command\r\n"
        return handler(rest.strip())

    def _lhlo(self, rest: str) -> bytes:
        if not rest:
            return b"501 5.5.4 LHLO needs a name\r\n"
        self.greeted = True
        self._reset()
        return (f"250-{self.hostname}\r\n250-8BITMIME\r\n250-ENHANCEDSTATUSCODES\r\n"
                "250 PIPELINING\r\n").encode()

    def _mail(self, rest: str) -> bytes:
        if not self.greeted:
            return b"503 5.5.1 say LHLO first\r\n"
        if self.sender is not None:
            return b"503 5.5.1 nested MAIL command\r\n"
        if not rest.upper().startswith("FROM:"):
            return b"501 5.5.4 syntax: MAIL FROM:<address>\r\n"
        self.sender = rest[5:].strip()
        return b"250 2.1.0 sender ok\r\n"

    def _rcpt(self, rest: str) -> bytes:
        if self.sender is None:
            return b"503 5.5.1 need MAIL before RCPT\r\n"
        if not rest.upper().startswith("TO:"):
            return b"501 5.5.4 syntax: RCPT TO:<address>\r\n"
        address = rest[3:].strip().split(" ", 1)[0]  # parameters (ORCPT=...) are not used
        self.recipients.append(address.strip("<>"))
        return b"250 2.1.5 recipient ok\r\n"

    def _data(self, rest: str) -> bytes:
        if not self.recipients:
            return b"503 5.5.1 need RCPT before DATA\r\n"
        self.reading_data, self.data, self.line_start = True, [], True
        return b"354 end data with <CR><LF>.<CR><LF>\r\n"

    def _rset(self, rest: str) -> bytes:
        self._reset()
        return b"250 2.0.0 reset\r\n"

    def _noop(self, rest: str) -> bytes:
        return b"250 2.0.0 ok\r\n"

    def _vrfy(self, rest: str) -> bytes:
        return b"252 2.5.0 cannot verify, will take the message\r\n"

    def _quit(self, rest: str) -> bytes:
        self.closed = True
        return f"221 2.0.0 {self.hostname} closing\r\n".encode()

    def _reset(self) -> None:
        self.sender, self.recipients, self.reading_data, self.data = None, [], False, []

    def _data_line(self, line: bytes) -> bytes:
        """`line` is a whole line, or a piece of a very long one (`line_start` tells)."""
        if not (self.line_start and line.rstrip(b"\r\n") == b"."):
            # Dot-stuffing undone; line ends stored as LF, as an mbox or a pipe has them.
            body = line[1:] if self.line_start and line.startswith(b".") else line
            self.line_start = body.endswith(b"\n")
            if body.endswith(b"\r\n"):
                body = body[:-2] + b"\n"
            self.data.append(body)
            return b""
        message = b"".join(self.data)
        recipients = self.recipients
        self._reset()
        try:
            said = self.store(message, recipients)
        except TemporaryFailure as exc:
            reply = f"451 4.3.0 not stored, try again later: {_one_line(str(exc))}\r\n"
        else:
            reply = f"250 2.0.0 {_one_line(said)}\r\n"
        return reply.encode() * len(recipients)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


class _Handler(socketserver.StreamRequestHandler):
    server: AgentServer

    def handle(self) -> None:
        with self.server.connected():
            self._converse()

    def _converse(self) -> None:
        session = Session(self.server.store_one, hostname=self.server.hostname)
        self.wfile.write(session.banner())
        while not session.closed:
            line = self.rfile.readline(MAX_LINE if not session.reading_data else 1 << 20)
            if not line:
                return  # the client went away; a message not finished was not stored
            reply = session.feed(line)
            if reply:
                self.wfile.write(reply)
                self.wfile.flush()


class AgentServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, store: Store, claim: int) -> None:
        self.lock = threading.Lock()
        self.store = store
        self.hostname = socket.gethostname()
        self.claim = claim  # the locked SOCKET.lock: this agent's until it closes
        self._clients = 0
        self._quiet_since = time.monotonic()
        self._count_lock = threading.Lock()
        super().__init__(str(path), _Handler)

    def store_one(self, message: bytes, recipients: list[str]) -> str:
        with self.lock:
            return self.store(message, recipients)

    @contextlib.contextmanager
    def connected(self) -> Iterator[None]:
        """Counts a client in while it is connected, for `stop_when_idle`."""
        with self._count_lock:
            self._clients += 1
        try:
            yield
        finally:
            with self._count_lock:
                self._clients -= 1
                self._quiet_since = time.monotonic()

    def stop_when_idle(self, seconds: float) -> None:
        """Make `serve_forever` return once no client has been connected for `seconds`."""

        def watch() -> None:
            while True:
                with self._count_lock:
                    left = seconds - (time.monotonic() - self._quiet_since)
                    if self._clients == 0 and left <= 0:
                        break
                time.sleep(min(max(left, 0.05), 5.0))
            self.shutdown()

        threading.Thread(target=watch, name="idle-watch", daemon=True).start()

    def server_close(self) -> None:
        """Stop listening and remove the socket, before the lock goes: once it is released,
        the next agent may already be listening on a socket of the same name."""
        Path(self.server_address).unlink(missing_ok=True)
        super().server_close()
        os.close(self.claim)


def listen(path: Path, store: Store) -> AgentServer:
    """A server on the Unix socket `path` (a stale socket file there is replaced; anything
    else there is an error), readable and writable by the owner and group only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    claim = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FileExistsError(f"a delivery agent already listens on {path}") from None
        if path.exists() or path.is_symlink():
            if not stat.S_ISSOCK(path.lstat().st_mode):
                raise FileExistsError(
                    f"{path} exists and is not a socket: choose another --socket")
            if _answers(path):  # an agent of an older lorelab, which took no lock
                raise FileExistsError(f"a delivery agent already listens on {path}")
            path.unlink()
        server = AgentServer(path, store, claim)
    except BaseException:
        os.close(claim)
        raise
    os.chmod(path, 0o660)
    os.ftruncate(claim, 0)
    os.write(claim, f"{os.getpid()}\n".encode())
    return server


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
            return True
        except OSError:
            return False
