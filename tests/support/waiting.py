"""Waiting for something another process does (a server to listen, an agent to exit), with a
limit that turns a hang into a failure saying what did not happen."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(condition: Callable[[], object], what: str, limit: float = 60) -> None:
    """Return once `condition()` is true; TimeoutError naming `what` after `limit` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {limit:.0f} s")
        time.sleep(0.05)
