"""The `lorelab` command: one sub-module per stage, each adding its commands to `app`."""

from __future__ import annotations

import os
import sys

import typer

from bot import __version__
from bot.cli import context

app = typer.Typer(
    name="lorelab",
    help="Patch-series review and regression bot for the Linux kernel mailing lists.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"lorelab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    config: str = typer.Option(
        None, "--config", "-c", help="TOML settings file (default: $LORELAB_CONFIG or the user's)."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    context.CONFIG_PATH = config
    if config:
        # Also for the build sandbox, which hides the config file's directory from patches.
        os.environ["LORELAB_CONFIG"] = os.path.abspath(config)


def _register() -> None:
    # Imported here so that each module's commands attach to `app` in a fixed order.
    from bot.cli import (
        admin,
        analyze,
        claims,
        commands,
        demo,
        ingest,
        lab,
        outbox,
        query,
        review,
        runs,
        sources,
        web,
    )

    for module in (demo, review, admin, ingest, sources, query, claims, analyze, outbox, runs,
                   lab, commands, web):
        module.register(app)


_register()


def main() -> None:
    try:
        app()
    except context.UserError as exc:
        print(f"lorelab: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
