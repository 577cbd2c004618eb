"""`lorelab commands scan`: act on `#lorelab` commands in stored replies, by hand.

    lorelab commands scan [--since DATE] [--dispatch/--no-dispatch] [--json]

The automatic pipeline does the same after each ingest batch; this is for catching up (after
enabling [commands], or after the bot was down) and for debugging. A command already acted on
is never acted on again, so scanning twice is harmless. Runs it makes are sent to the workers
afterwards (in this process on the embedded default), unless --no-dispatch: then
`lorelab runs resume ID` sends them.

`--json` prints a list of `bot.commands.handler.CommandOutcome.to_dict()`.
"""

from __future__ import annotations

import datetime as dt
import sys

import sqlalchemy as sa
import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bot.cli.context import UserError, console, emit_json, settings, stdout_console
from bot.cli.database import open_database
from bot.db.models import Message, utcnow

commands_app = typer.Typer(help="Email commands (#lorelab lines in replies).")

_BATCH = 200  # messages handled between progress updates


def register(app: typer.Typer) -> None:
    app.add_typer(commands_app, name="commands")


def _since(value: str) -> dt.datetime:
    try:
        since = dt.datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"--since {value!r}: use a date such as 2026-11-30 or "
                        "2026-11-30T08:00") from None
    return since if since.tzinfo else since.replace(tzinfo=dt.UTC)


@commands_app.command("scan")
def scan(
    since: str = typer.Option(
        None, "--since", help="Mail dated since this date (default: [commands] max_age_hours)."
    ),
    dispatch: bool = typer.Option(
        True, "--dispatch/--no-dispatch", help="Send the runs made to the workers."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Act on the #lorelab commands in stored replies not acted on yet, and answer them."""
    from bot.commands.handler import MAY_HOLD_COMMANDS, handle_command_mails

    config = settings()
    db = open_database()
    start = _since(since) if since else utcnow() - dt.timedelta(
        hours=config.commands.max_age_hours)
    with db.session() as session:
        message_ids = list(session.scalars(
            sa.select(Message.msgid).where(Message.date >= start, MAY_HOLD_COMMANDS)
            .order_by(Message.date, Message.id)))
    progress = Progress(TextColumn("[bold]commands"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console,
                        disable=as_json or not sys.stderr.isatty())
    outcomes = []
    with progress:
        task = progress.add_task("scan", total=len(message_ids))
        for first in range(0, len(message_ids), _BATCH):
            batch = message_ids[first : first + _BATCH]
            outcomes += handle_command_mails(db, config, batch)
            progress.update(task, advance=len(batch))
    run_ids = [run_id for outcome in outcomes for run_id in outcome.run_ids]
    if dispatch and run_ids:
        # Celery costs a third of a second to import: only when there is work.
        from bot.runs.taskqueue import send_run

        for run_id in run_ids:
            send_run(db, config, run_id)
    db.dispose()
    if as_json:
        emit_json([outcome.to_dict() for outcome in outcomes])
        return
    if not outcomes:
        print(f"no new commands in {len(message_ids)} replies since {start:%Y-%m-%d %H:%M}")
        return
    table = Table(pad_edge=False)
    for column in ("mail", "line", "from", "command", "outcome", "runs", "answer", "detail"):
        table.add_column(column)
    for outcome in outcomes:
        table.add_row(escape(outcome.message_id), str(outcome.line), escape(outcome.sender),
                      outcome.command, outcome.outcome,
                      ", ".join(str(r) for r in outcome.run_ids) or "-",
                      str(outcome.outbox_id or "-"), escape(outcome.detail))
    stdout_console().print(table)
