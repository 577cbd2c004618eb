"""Running real git in tests: a fixed identity and date, and no user or system git config."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Kairui Song",
    "GIT_AUTHOR_EMAIL": "kasong@tencent.com",
    "GIT_COMMITTER_NAME": "Kairui Song",
    "GIT_COMMITTER_EMAIL": "kasong@tencent.com",
    "GIT_AUTHOR_DATE": "2023-12-22T10:22:55+08:00",
    "GIT_COMMITTER_DATE": "2023-12-22T10:22:55+08:00",
}

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout
