"""Running the real `lorelab` command in a subprocess, as a user would, for tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


class Lorelab:
    """`lorelab` with its own config and data directories and a given database."""

    def __init__(self, home: Path, database_url: str) -> None:
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("LORELAB_")},
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "LORELAB_DATABASE_URL": database_url,
            "COLUMNS": "160",
        }

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        proc = subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", *args],
            input=input,
            capture_output=True,
            env={**self.env, **env},
            timeout=300,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"lorelab {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stderr.decode(errors='replace')}"
            )
        return proc

    def json(self, *args: str, **kwargs: Any) -> Any:
        return json.loads(self.run(*args, "--json", **kwargs).stdout)
