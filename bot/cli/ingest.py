"""`lorelab ingest mbox|maildir|stdin`: store list mail from offline sources."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bot.cli.context import UserError, console, emit_json, settings
from bot.cli.database import open_database
from bot.ingest.sources import MboxFile, RawMail, SourceError, iter_maildir

if TYPE_CHECKING:
    from bot.ingest.prepare import PreparedBatch
    from bot.ingest.store import IngestSummary

ingest_app = typer.Typer(help="Store list mail from an mbox, a maildir or standard input.")


def register(app: typer.Typer) -> None:
    app.add_typer(ingest_app, name="ingest")


def _run(
    mails: Iterable[RawMail] | MboxFile, total_bytes: int | None, list_name: str | None,
    as_json: bool,
) -> None:
    from bot.ingest.store import ingest

    cfg = settings()
    db = open_database()
    show = not as_json and sys.stderr.isatty()
    progress = Progress(
        TextColumn("[bold]ingest"),
        BarColumn(),
        MofNCompleteColumn() if total_bytes is None else TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[count]} messages"),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
    )
    with progress:
        task = progress.add_task("ingest", total=total_bytes, count=0)
        done = 0

        def advance(batch: PreparedBatch) -> None:
            nonlocal done
            done += batch.read
            size = batch.bytes_read if total_bytes is not None else batch.read
            progress.update(task, advance=size, count=done)

        try:
            summary = ingest(
                db,
                mails,
                settings=cfg.ingest,
                list_name=list_name,
                known_lists=cfg.lists,
                on_batch=advance,
            )
        except SourceError as exc:
            raise UserError(str(exc), exit_code=66) from None  # EX_NOINPUT
    _report(summary, as_json)


def _report(summary: IngestSummary, as_json: bool) -> None:
    if as_json:
        emit_json(summary.to_dict())
        return
    for line in summary.describe():
        console.print(line, markup=False, highlight=False)


LIST_OPTION = typer.Option(None, "--list", "-l", help="The list these messages came from.")
JSON_OPTION = typer.Option(False, "--json", help="Print the summary as JSON.")


@ingest_app.command("mbox")
def ingest_mbox(
    path: Path = typer.Argument(..., help="An mbox file (mboxrd or mboxo, may be gzipped)."),
    list_name: str = LIST_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Store every message of an mbox file."""
    if not path.is_file():
        raise UserError(f"{path}: no such file", exit_code=66)
    total = os.path.getsize(path) if path.suffix != ".gz" else None
    _run(MboxFile(path), total, list_name, as_json)


@ingest_app.command("maildir")
def ingest_maildir(
    path: Path = typer.Argument(..., help="A maildir (with new/ and cur/)."),
    list_name: str = LIST_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Store every message of a maildir."""
    _run(iter_maildir(path), None, list_name, as_json)


@ingest_app.command("stdin")
def ingest_stdin(list_name: str = LIST_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Store one message from standard input, as a mail server's delivery agent.

    Exits 0 once the message is stored durably (or quarantined with its reason), and 75
    (EX_TEMPFAIL) when the database cannot be reached, so that the mail server tries again.
    """
    from bot.cli import context
    from bot.cli.delivery import Delivery, deliver

    # A delivery normally never gets here: `bot.cli.main` runs it without the command line.
    raise typer.Exit(deliver(Delivery(context.CONFIG_PATH, list_name, as_json)))
