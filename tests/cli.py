"""Running the real `lorelab` command, as a user would, for tests.

By default the command runs inside the test process (tests/support/inprocess.py: the same
arguments, environment, standard streams and exit status, without a second of interpreter start
per command). `process=True`, on the object or on one call, runs it in a subprocess instead:
for what only a process shows (signals, output of child processes on inherited descriptors, a
process's own exit, its parse workers started from a clean interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import inprocess

# `python -c SHOW_MODULES ARGS`: `lorelab ARGS`, and then its exit status and every module it
# imported, as JSON, on the last line of stderr.
SHOW_MODULES = (
    "import sys, json\n"
    "from bot.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    print(json.dumps([exc.code, sorted(sys.modules)]), file=sys.stderr)\n"
)


class Lorelab:
    """`lorelab` with its own config and data directories and a given database."""

    def __init__(self, home: Path, database_url: str, *, process: bool = False) -> None:
        self.process = process
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("LORELAB_")},
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "LORELAB_DATABASE_URL": database_url,
            # A delivery would leave an agent behind (bot/cli/agent_start.py), living past the
            # test; tests of that agent turn it back on.
            "LORELAB_INGEST_DELIVERY_AGENT_IDLE": "0",
            "COLUMNS": "160",
        }

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True,
        process: bool | None = None, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        if self.process if process is None else process:
            return self.run_process(*args, input=input, check=check, **env)
        proc = inprocess.run(args, {**self.env, **env}, input=input)
        return self._checked(args, proc, check)

    def run_process(
        self, *args: str, input: bytes | None = None, check: bool = True, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        """`lorelab ARGS` in a subprocess of its own."""
        proc = subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", *args],
            input=input,
            capture_output=True,
            env={**self.env, **env},
            timeout=300,
        )
        return self._checked(args, proc, check)

    @staticmethod
    def _checked(
        args: tuple[str, ...], proc: subprocess.CompletedProcess[bytes], check: bool
    ) -> subprocess.CompletedProcess[bytes]:
        if check and proc.returncode != 0:
            raise AssertionError(
                f"lorelab {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stderr.decode(errors='replace')}"
            )
        return proc

    def json(self, *args: str, **kwargs: Any) -> Any:
        return json.loads(self.run(*args, "--json", **kwargs).stdout)
