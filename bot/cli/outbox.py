"""`lorelab outbox ...`: replies the bot wrote, moderation, delivery; `lorelab reply preview`.

    lorelab outbox list [--state S] [--kind K] [--json]
    lorelab outbox show ID [--json]          ID: the number `list` shows, or the Message-ID
    lorelab outbox approve ID                 pending-approval -> queued
    lorelab outbox reject ID [--reason TEXT]
    lorelab outbox retry ID                   in-doubt or failed -> queued
                                              (see bot.report.deliver.outbox); suppressed ->
                                              decided again under today's settings
    lorelab outbox send [--json]              send what is due now, after crash recovery
    lorelab reply preview FILE                render a recorded-results file (lorelab-results/1)

`--json` prints `bot.report.deliver.outbox.row_dict` per reply (with "message", the full text,
for show).
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy.orm import Session

from bot.cli import terminal
from bot.cli.context import UserError, emit_json, settings
from bot.cli.database import open_database
from bot.config import data_dir
from bot.config.report import ReportSettings, ReportSettingsError
from bot.db.models import OutboxReply, utcnow
from bot.report.deliver import outbox

outbox_app = typer.Typer(help="Replies the bot wrote: moderation and delivery.")
reply_app = typer.Typer(help="Reply composition.")

JSON_OPTION = typer.Option(False, "--json", help="Print JSON.")
ID_ARGUMENT = typer.Argument(..., metavar="ID", help="Reply number, or its Message-ID.")


def register(app: typer.Typer) -> None:
    app.add_typer(outbox_app, name="outbox")
    app.add_typer(reply_app, name="reply")


def report_settings() -> ReportSettings:
    """The [report] section, checked."""
    report = settings().report
    try:
        report.validate()
    except ReportSettingsError as exc:
        raise UserError(str(exc), exit_code=78) from None
    return report


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@outbox_app.command("list")
def outbox_list(
    state: str = typer.Option(None, "--state", "-s",
                              help=f"Only this state: {', '.join(outbox.STATES)}."),
    kind: str = typer.Option(None, "--kind", "-k", help="Only this kind, e.g. benchmark."),
    limit: int = typer.Option(50, "--limit", "-n", min=1,
                               help="At most this many, newest first."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Replies in the outbox, newest first."""
    if state and state not in outbox.STATES:
        raise UserError(f"--state {state}: use one of {', '.join(outbox.STATES)}")
    db = open_database()
    with db.session() as session:
        query = sa.select(OutboxReply).order_by(OutboxReply.id.desc()).limit(limit)
        if state:
            query = query.where(OutboxReply.state == state)
        if kind:
            query = query.where(OutboxReply.kind == kind)
        rows = session.scalars(query).all()
        if as_json:
            emit_json([outbox.row_dict(row) for row in rows])
            return
        table = Table(pad_edge=False)
        for column in ("id", "state", "kind", "to", "lists", "subject", "updated", "note"):
            table.add_column(column)
        for row in rows:
            note = row.reason if row.state in ("suppressed", "rejected") else row.last_error
            table.add_row(
                str(row.id),
                row.state,
                row.kind,
                escape(row.author),
                escape(", ".join(row.lists) or "-"),
                escape(row.subject),
                f"{row.updated_at:%Y-%m-%d %H:%M}",
                escape(note or ""),
            )
        terminal.stdout().print(table if rows else "The outbox is empty.")


@outbox_app.command("show")
def outbox_show(ref: str = ID_ARGUMENT, as_json: bool = JSON_OPTION) -> None:
    """One reply: its state and history, then the message exactly as it is sent."""
    db = open_database()
    with db.session() as session:
        row = _find(session, ref)
        if as_json:
            emit_json(outbox.row_dict(row, raw=True))
            return
        out = sys.stdout
        out.write(f"reply {row.id}: {row.state}")
        out.write(f" ({row.reason})\n" if row.reason else "\n")
        out.write(f"attempts: {row.attempts}; transport: {row.transport or '-'}\n")
        if row.last_error:
            out.write(f"last error: {row.last_error}\n")
        if row.state == outbox.IN_DOUBT:
            out.write(f"check first: https://lore.kernel.org/r/{row.message_id}\n")
        out.write("\n" + row.raw.decode("utf-8", "replace"))


@outbox_app.command("approve")
def outbox_approve(ref: str = ID_ARGUMENT, as_json: bool = JSON_OPTION) -> None:
    """Let a reply that waits for moderation go out."""

    def approve(session: Session, row: OutboxReply) -> str:
        outbox.approve(session, row, _who(), **_policy())
        return "approved"

    _act(ref, as_json, approve)


@outbox_app.command("reject")
def outbox_reject(
    ref: str = ID_ARGUMENT,
    reason: str = typer.Option("", "--reason", "-r", help="Why, kept with the reply."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Never send this reply."""

    def reject(session: Session, row: OutboxReply) -> str:
        outbox.reject(session, row, _who(), reason)
        return "rejected"

    _act(ref, as_json, reject)


@outbox_app.command("retry")
def outbox_retry(ref: str = ID_ARGUMENT, as_json: bool = JSON_OPTION) -> None:
    """Queue an in-doubt or failed reply again (check the list archive first when in doubt);
    decide a suppressed one again under the settings of now (a list added to [[lists]])."""
    _act(ref, as_json, lambda session, row: outbox.retry(session, row, _who(), **_policy()))


@outbox_app.command("send")
def outbox_send(as_json: bool = JSON_OPTION) -> None:
    """Send the queued replies that are due (after resolving interrupted sends)."""
    from bot.report.deliver.delivery import deliver_due, make_transport

    report = report_settings()
    db = open_database()
    try:
        run = deliver_due(db, make_transport(report, data_dir()), report)
    finally:
        db.dispose()
    if as_json:
        emit_json(run.__dict__)
        return
    for name, ids in run.__dict__.items():
        if ids:
            print(f"{name}: {', '.join(str(i) for i in ids)}")
    if not any(run.__dict__.values()):
        print("nothing was due")


@reply_app.command("preview")
def reply_preview(
    path: Path = typer.Argument(..., help="A recorded-results JSON file (lorelab-results/1)."),
) -> None:
    """Print the benchmark reply a recorded-results file makes, exactly as it would be sent."""
    # The composer imports the statistics (numpy, scipy): only this command pays for them.
    from bot.cli.analyze import load_results_file
    from bot.report.compose.benchmark_reply import compose_benchmark_reply
    from bot.report.compose.inputs import ReplyOptions

    ctx, date = load_results_file(path)
    report = report_settings()
    options = ReplyOptions(
        identity=report.identity(),
        date=date or utcnow().replace(microsecond=0),
        opt_out=tuple(report.opt_out),
        cc_cap=report.cc_cap,
    )
    reply = compose_benchmark_reply(ctx, options)
    sys.stdout.buffer.write(reply.as_bytes())
    sys.stdout.flush()


def _policy() -> dict[str, Any]:
    """What a suppressed reply is decided again under: [report] and the [[lists]] addresses."""
    return {"settings": report_settings(),
            "list_addresses": [lst.address for lst in settings().lists if lst.address]}


def _find(session: Session, ref: str) -> OutboxReply:
    try:
        return outbox.find(session, ref)
    except outbox.OutboxError as exc:
        raise UserError(str(exc)) from None


def _act(ref: str, as_json: bool, action: Callable[[Session, OutboxReply], str]) -> None:
    db = open_database()
    try:
        with db.session() as session:
            row = _find(session, ref)
            try:
                said = action(session, row)
            except outbox.OutboxError as exc:
                raise UserError(str(exc)) from None
            session.flush()
            data = outbox.row_dict(row)
    finally:
        db.dispose()
    if as_json:
        emit_json(data)
    else:
        print(f"reply {data['id']}: {said}; now {data['state']}")
