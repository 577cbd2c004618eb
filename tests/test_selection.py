"""Which tests a `-m` expression runs (tests/conftest.py): the real-kernel tests, an hour under
TCG, only when it names `kernel`."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO

KERNEL_MODULES = ["tests/e2e/test_kernel_review.py", "tests/e2e/test_kernel_bisect.py"]


def collected(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", *args, *KERNEL_MODULES],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert out.returncode in (0, 5), out.stdout + out.stderr  # 5: nothing collected
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_the_end_to_end_tests_leave_the_kernel_out_unless_asked_for() -> None:
    assert collected("-m", "slow") == []
    assert len(collected("-m", "slow and kernel")) == 2
