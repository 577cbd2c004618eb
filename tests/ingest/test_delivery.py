"""`lorelab ingest stdin` as a mail server runs it, once per mail: it imports only what storing
needs (the rest of the command line cost about a second of CPU per mail), keeps its exit
statuses, and leaves anything that is not a plain delivery to the full command line.
SQLite only: what a delivery stores goes through `ingest`, tested on both databases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot.cli.delivery import Delivery, parse_delivery
from bot.demo.threads import SeriesSpec, make_series, make_tree
from tests.cli import SHOW_MODULES, Lorelab

# What a delivery must not pay for: the command line, its output, numbers and statistics.
NOT_FOR_STORING = ("typer", "click", "rich", "numpy", "scipy", "pydantic", "bot.cli.claims",
                   "bot.analysis", "bot.runs", "alembic")


def test_a_delivery_stores_the_mail_without_importing_the_command_line(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "linux")
    mails = make_series(tree, SeriesSpec(title="mm: delivered", patches=1, cover=False))
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    lorelab.run("db", "upgrade")  # as a deployment does once, before the mail server delivers
    for mail in mails:
        proc = subprocess.run(
            [sys.executable, "-c", SHOW_MODULES, "ingest", "stdin", "--list", "linux-mm"],
            input=mail, capture_output=True, env=lorelab.env, timeout=120,
        )
        code, modules = json.loads(proc.stderr.decode().strip().splitlines()[-1])
        assert code == 0, proc.stderr
        imported = [m for m in modules if m.split(".")[0] in NOT_FOR_STORING
                    or m.startswith(NOT_FOR_STORING)]
        assert imported == []
    assert len(lorelab.json("series", "list")) == 1  # the patch was stored and assembled


def test_only_a_plain_delivery_takes_the_short_way() -> None:
    assert parse_delivery(["ingest", "stdin"]) == Delivery()
    assert parse_delivery(["-c", "x.toml", "ingest", "stdin", "--list=linux-mm", "--json"]) == (
        Delivery("x.toml", "linux-mm", True)
    )
    for other in (["ingest", "stdin", "--help"], ["ingest", "mbox", "x"], ["--version"],
                  ["ingest", "stdin", "--list"], []):
        assert parse_delivery(other) is None


def test_help_and_mistakes_still_get_the_full_command_line(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    shown = lorelab.run("ingest", "stdin", "--help")
    assert b"75" in shown.stdout and b"EX_TEMPFAIL" in shown.stdout
    wrong = lorelab.run("ingest", "stdin", "--lits", "linux-mm", check=False)
    assert wrong.returncode == 2 and b"--lits" in wrong.stderr


def test_each_command_is_built_from_the_modules_the_map_names() -> None:
    """`lorelab COMMAND` imports only the modules `COMMANDS` names for it: each must be found
    there, and every command of the whole app must be in the map."""
    import typer.main

    from bot import cli

    def names(app: object) -> set[str]:
        group = typer.main.get_command(app)
        return set(group.commands)  # type: ignore[attr-defined]

    assert names(cli.get_app()) == set(cli.COMMANDS)
    for command in cli.COMMANDS:
        built = typer.main.get_command(cli.get_app(command))
        assert command in built.commands  # type: ignore[attr-defined]
    ingest = typer.main.get_command(cli.get_app("ingest")).commands["ingest"]  # type: ignore[attr-defined]
    assert {"mbox", "maildir", "stdin", "lore", "pi-git"} <= set(ingest.commands)
    assert cli.command_of(["-c", "x.toml", "--json", "series", "list"]) == "series"
