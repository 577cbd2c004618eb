"""The host:pid tags that run steps and outbox claims carry, and whether such a process is gone.

A worker killed mid-step, or a sender killed mid-claim, leaves its tag behind. Only a process of
this machine can be checked from here; one elsewhere is taken as alive.
"""

from __future__ import annotations

import os
import socket


def process_tag() -> str:
    """This process as "host:pid"."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_gone(host: str, pid: str) -> bool:
    """Whether process `pid` of machine `host` is known to be gone (False when it is alive,
    another user's, this process, or not on this machine)."""
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, owned by another user
    return False
