"""`lorelab ingest mbox|maildir|stdin`: store list mail from offline sources."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bot.cli.context import UserError, console, emit_json, settings
from bot.cli.database import open_database
from bot.ingest.sources import MboxFile, RawMail, SourceError, iter_maildir

if TYPE_CHECKING:
    from bot.ingest.prepare import PreparedBatch
    from bot.ingest.store import IngestSummary

EX_NOINPUT = 66  # sysexits.h: the input does not exist or cannot be read
EX_TEMPFAIL = 75  # sysexits.h: try again later
EX_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C

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
    with progress, _stop_between_batches() as stop_asked:
        task = progress.add_task("ingest", total=total_bytes, count=0)
        done = 0

        def advance(batch: PreparedBatch) -> None:
            nonlocal done
            done += batch.read
            size = batch.bytes_read if total_bytes is not None else batch.read
            progress.update(task, advance=size, count=done)
            if stop_asked():
                raise KeyboardInterrupt

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
            raise UserError(str(exc), exit_code=EX_NOINPUT) from None
        except sa.exc.OperationalError as exc:
            # The server went away, or another writer held the database past the timeout.
            raise UserError(f"the database could not store a batch ({database_said(exc)}); "
                            f"the {done} messages read before it are in the database: run the "
                            "command again to continue", exit_code=EX_TEMPFAIL) from None
        except KeyboardInterrupt:
            # Each batch is committed whole, then counted: what was counted is stored, and a
            # rerun skips it (stored mail is known by its Message-ID).
            raise UserError(f"interrupted after {done} stored; run again to continue",
                            exit_code=EX_INTERRUPTED) from None
    _report(summary, as_json)


def database_said(exc: sa.exc.DBAPIError) -> str:
    """The first line of what the database answered, for a message to the user."""
    return (str(exc.orig).strip().splitlines() or [""])[0]


@contextmanager
def _stop_between_batches() -> Iterator[Callable[[], bool]]:
    """Ctrl-C asks to stop once the batch being stored is committed (and counted); a second
    one stops at once. Parse workers, forked while this handler is set, keep working on the
    first: a terminal sends SIGINT to them too, and they must not die with a traceback."""
    asked: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, previous)


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
    if path.is_dir():
        raise UserError(f"{path}: is a directory; for a maildir use `lorelab ingest maildir`",
                        exit_code=EX_NOINPUT)
    if not path.is_file():
        raise UserError(f"{path}: no such file", exit_code=EX_NOINPUT)
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


@ingest_app.command("reparse")
def ingest_reparse(as_json: bool = JSON_OPTION) -> None:
    """Read the stored mail again with this lorelab's parser (after an upgrade): update the
    messages it now reads otherwise, and assemble every thread's series again.

    Message-IDs and threads stay as stored. Safe to run while mail comes in, and again: a
    second run changes nothing. Stopped, run it again.
    """
    from bot.db.models import Message
    from bot.ingest.reparse import ReparseSummary, reparse

    db = open_database()
    with db.session() as session:
        total = session.scalar(sa.select(sa.func.count()).select_from(Message))
    progress = Progress(
        TextColumn("[bold]reparse"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[changed]} changed"), TimeElapsedColumn(),
        console=console, disable=as_json or not sys.stderr.isatty(),
    )  # fmt: skip
    with progress:
        task = progress.add_task("reparse", total=total, changed=0)

        def advance(summary: ReparseSummary) -> None:
            progress.update(task, completed=summary.read, changed=summary.changed)

        try:
            summary = reparse(db, on_batch=advance)
        except sa.exc.OperationalError as exc:
            raise UserError(f"the database could not take a batch ({database_said(exc)}); "
                            "what was read again before it is stored: run the command again",
                            exit_code=EX_TEMPFAIL) from None
        except KeyboardInterrupt:  # the batch in flight is rolled back; those before it stand
            raise UserError("interrupted; the batches read again before it are stored: run "
                            "the command again to finish", exit_code=EX_INTERRUPTED) from None
    if as_json:
        emit_json(summary.to_dict())
        return
    for line in summary.describe():
        console.print(line, markup=False, highlight=False)
