"""What the everyday commands import: none of the heavy packages they do not use.

A command's start is mostly imports (numpy and scipy alone cost half a second of CPU), so each
command is run in a fresh interpreter and the packages it imported are counted when it exits:
work done, not time taken (bot/cli/__init__.py says which modules each command loads).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import Lorelab

# Statistics, the task queue, b4, the web server (and the validation it brings, which typer
# 0.29 made every command import), and rich's help rendering: what the moderation, query and
# delivery commands never need.
HEAVY = {"numpy", "scipy", "celery", "kombu", "b4", "uvicorn", "starlette", "fastapi",
         "pydantic", "jinja2", "pygments", "markdown_it"}
# The delivery agent (`ingest stdin`, once per mail) builds no command line at all.
COMMAND_LINE = {"typer", "click", "rich", "pydantic"}

# Runs `lorelab ARGS` and, as the interpreter exits, prints the top-level packages it imported.
HOOK = """
import atexit, sys
atexit.register(lambda: sys.__stderr__.write(
    "\\nIMPORTED " + " ".join(sorted({m.split('.')[0] for m in sys.modules})) + "\\n"))
from bot.cli import main
main()
"""

MAIL = b"From: Ada <ada@example.org>\nSubject: hello\nMessage-ID: <m1@example.org>\n\nhi\n"


def imported(tmp_path: Path, *args: str, input: bytes | None = None) -> set[str]:
    cli = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    cli.run("series", "list")  # the schema is made once, on first use (Alembic, Mako)
    proc = subprocess.run([sys.executable, "-c", HOOK, *args], input=input,
                          capture_output=True, env=cli.env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    line = proc.stderr.decode().rsplit("\nIMPORTED ", 1)[1]
    return set(line.split())


@pytest.mark.parametrize("args", [
    ("series", "list"), ("outbox", "list"), ("--help",), ("runs", "list"), ("lab", "hosts"),
])
def test_everyday_commands_import_no_heavy_package(tmp_path: Path, args: tuple[str, ...]) -> None:
    assert imported(tmp_path, *args) & HEAVY == set()


def test_a_delivered_mail_is_stored_without_building_the_command_line(tmp_path: Path) -> None:
    assert imported(tmp_path, "ingest", "stdin", input=MAIL) & (HEAVY | COMMAND_LINE) == set()
