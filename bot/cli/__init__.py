"""The `lorelab` command: one sub-module per stage, each adding its commands to `app`.

The app is built on first use, with only the stage modules the command needs (`COMMANDS`):
importing them all costs about a second of CPU (numpy, scipy, every stage), which `lorelab
ingest mbox` or `lorelab series list` should not pay. `lorelab --help` and anything unknown
get the whole app. A mail server's delivery (`lorelab ingest stdin`, once per mail) does not
build the app at all: `main` hands it to `bot.cli.delivery` before anything else is imported.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

# The order in which modules attach their commands (help lists them in this order).
MODULES = ("demo", "review", "admin", "ingest", "sources", "query", "claims", "analyze",
           "outbox", "runs", "lab", "commands", "web", "delivery")
# Top-level command -> the modules that define it and its subcommands (`sources` adds
# `ingest lore` and `ingest pi-git`). tests/ingest/test_delivery.py checks it is complete.
COMMANDS = {
    "demo": ("demo",), "review": ("review",), "init": ("admin",), "db": ("admin",),
    "ingest": ("ingest", "sources"), "run": ("sources",), "sources": ("sources",),
    "series": ("query",), "message": ("query",), "quarantine": ("query",),
    "claims": ("claims",), "analyze": ("analyze",), "outbox": ("outbox",), "reply": ("outbox",),
    "apply": ("runs",), "build": ("runs",), "retest": ("runs",), "runs": ("runs",),
    "bench": ("lab",), "lab": ("lab",), "commands": ("commands",), "serve": ("web",),
    "deliver": ("delivery",),
}
_apps: dict[tuple[str, ...], typer.Typer] = {}


def command_of(args: list[str]) -> str | None:
    """The top-level command these arguments run (None for `--help`, `--version`, nothing)."""
    i = 0
    while i < len(args):
        if args[i] in ("--config", "-c"):
            i += 2
        elif args[i].startswith("-"):
            i += 1
        else:
            return args[i]
    return None


def _build(modules: tuple[str, ...]) -> typer.Typer:
    import typer

    from bot import __version__
    from bot.cli import context

    app = typer.Typer(
        name="lorelab",
        help="Patch-series review and regression bot for the Linux kernel mailing lists.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # Help is plain text: rich markup would swallow "[[trees]]" and "[report]", and
        # drawing help panels imports rich, markdown-it and pygments.
        rich_markup_mode=None,
    )

    def _version(value: bool) -> None:
        if value:
            print(f"lorelab {__version__}")
            raise typer.Exit()

    @app.callback()
    def _root(
        config: str = typer.Option(
            None, "--config", "-c",
            help="TOML settings file (default: $LORELAB_CONFIG or the user's).",
        ),
        version: bool = typer.Option(
            False, "--version", callback=_version, is_eager=True, help="Print the version."
        ),
    ) -> None:
        context.CONFIG_PATH = config
        if config:
            # Also for the build sandbox, which hides the config file's directory from patches.
            os.environ["LORELAB_CONFIG"] = os.path.abspath(config)

    for name in modules:
        importlib.import_module(f"bot.cli.{name}").register(app)
    return app


def get_app(command: str | None = None) -> typer.Typer:
    """The `lorelab` app with `command` registered (every command when None or unknown)."""
    modules = COMMANDS.get(command or "", MODULES)
    ordered = tuple(name for name in MODULES if name in modules)
    if ordered not in _apps:
        _apps[ordered] = _build(ordered)
    return _apps[ordered]


def __getattr__(name: str) -> Any:
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _end_quickly() -> None:
    """Spare the interpreter its teardown, which collects garbage over the whole heap again
    and again as it clears the modules: 0.1 s of CPU at the end of every command, a fifth of
    what `lorelab ingest mbox` of an empty mbox costs.

    Here the command's garbage is collected as the teardown would have (what it held is
    finalized), the engines still in use are closed, and everything left is frozen: the
    teardown's collections skip it. What is freed by reference counting still is; what only a
    collection would free (reference cycles, as an engine's pool) is left to the end of the
    process, which gives back its memory whole."""
    session = sys.modules.get("bot.db.session")
    if session is not None:  # a command that used no database has imported none of it
        session.dispose_engines()
    gc.collect()
    gc.freeze()


# At the interpreter's end only: `main` also runs inside the test process (tests/cli.py).
atexit.register(_end_quickly)


def main() -> None:
    from bot.cli.delivery import deliver, parse_delivery

    delivery = parse_delivery(sys.argv[1:])
    if delivery is not None:
        sys.exit(deliver(delivery))
    from bot.cli import context

    try:
        get_app(command_of(sys.argv[1:]))()
    except context.UserError as exc:
        print(f"lorelab: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
