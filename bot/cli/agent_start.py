"""The delivery agent a delivery leaves behind for the mail after it.

A mail server runs `lorelab ingest stdin` once per mail. Storing one takes milliseconds, but a
new Python process importing SQLAlchemy and lorelab's storing code takes most of a second of CPU
(bench/delivery.py). So a delivery first offers its mail to a `lorelab deliver` agent
(bot.ingest.lmtp) on a socket private to this user and these settings; when none answers, it
stores the mail itself and then starts one, detached, which takes the next deliveries and exits
after `[ingest] delivery_agent_idle` seconds without mail (0: never start one). gpg-agent and
`emacsclient -a ''` work the same way.

The socket's name is a hash of everything that decides what the agent would do: the Python and
lorelab it runs, the working directory, the settings file (path, size, modification time) and
the LORELAB_* environment. A change of any of them starts a new agent, and the old one exits
once idle (an edit of lorelab's own code in a development checkout is not such a change: stop
the agent, whose process id is in SOCKET.lock, or wait). The socket lives in
$XDG_RUNTIME_DIR/lorelab, else /tmp/lorelab-UID, a directory that must be this user's and
closed to everyone else; otherwise no agent is used, since whoever made the directory could
answer 250 and drop the mail.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import bot

EXPLICIT_SOCKET = "LORELAB_DELIVER_SOCKET"  # an agent the administrator runs; never started here
# Variables that do not change what an agent does with a mail (the settings file is hashed).
_NOT_IDENTITY = (EXPLICIT_SOCKET, "LORELAB_CONFIG", "LORELAB_INGEST_DELIVERY_AGENT_IDLE")
_MAX_SOCKET_PATH = 100  # sockaddr_un holds 108 bytes on Linux, fewer elsewhere


def runtime_dir() -> Path:
    """Where this user's agents listen (it may not exist yet)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "lorelab"
    return Path(f"/tmp/lorelab-{os.getuid()}")


def _private(directory: Path) -> bool:
    """Whether `directory` is a real directory of this user that nobody else can enter."""
    try:
        info = directory.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and info.st_mode & 0o077 == 0)


def agent_socket(config: str | None) -> Path | None:
    """The socket of the agent for a delivery with settings file `config` (`--config`), or
    None when no agent may be used: the directory is someone else's or open to others, or
    the path would not fit a socket address."""
    directory = runtime_dir()
    if directory.exists() and not _private(directory):
        return None
    explicit = config or os.environ.get("LORELAB_CONFIG")
    if explicit:
        settings_file = os.path.abspath(explicit)
    else:
        from bot.paths import default_config_path

        settings_file = str(default_config_path())
    try:
        found = os.stat(settings_file)
        settings_stamp: list[int] | None = [found.st_size, found.st_mtime_ns]
    except OSError:
        settings_stamp = None
    identity = json.dumps([
        sys.executable, bot.__version__, os.path.dirname(bot.__file__), os.getcwd(),
        settings_file, settings_stamp,
        sorted((k, v) for k, v in os.environ.items()
               if k.startswith("LORELAB_") and k not in _NOT_IDENTITY),
    ])  # fmt: skip
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    path = directory / f"deliver-{digest}.sock"
    return path if len(os.fsencode(path)) <= _MAX_SOCKET_PATH else None


def start_agent(path: Path, config: str | None, idle: int) -> bool:
    """Start `lorelab deliver` on `path`, detached from this delivery (its own session, no
    terminal, output to `PATH.log`), to exit after `idle` seconds without mail. False when
    the directory cannot be made private. An agent that finds the socket taken (another
    delivery started one first) exits at once."""
    directory = path.parent
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return False
    if not _private(directory):
        return False
    command = [sys.executable, "-m", "bot.cli", *(["--config", config] if config else []),
               "deliver", "--socket", str(path), "--idle", str(idle)]
    try:
        with open(path.with_name(path.name + ".log"), "ab") as log, \
                open(os.devnull, "rb") as nothing:
            # The mail server reads this delivery's output to its end: the agent must not
            # hold it open.
            subprocess.Popen(command, stdin=nothing, stdout=log, stderr=log,
                             start_new_session=True, close_fds=True)
    except OSError:
        return False  # the mail is stored all the same; the next delivery stores its own
    return True
