"""What the end-to-end tests share: the real-kernel tests take turns.

A TCG build of linux-source takes every core for twenty minutes and more; two at once (the
review and the bisect test on two pytest-xdist workers) would each take twice as long and
crowd the guests' timed boots. xdist's `--dist loadgroup` cannot keep them on one worker with
pytest 9.2 (it drops the group: pytest-xdist issue #1386), so they hold a lock file of this
test session instead.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def one_real_kernel_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is popen-gwN inside the session's own directory.
    session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(session / "real-kernel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield
