"""`lorelab claims FILE|MSGID`: the performance claims in a message and what their data supports.

FILE is a message on disk: RFC 822, or a body with reduced headers (see
`bot.analysis.claims.input`). Anything else with an '@' is taken as a Message-ID and read from
the database; `--thread` then reads every stored message of its thread, oldest first, and leaves
out quoted copies of claims already shown. `--json` prints `MessageClaims.to_dict()` (format
"lorelab-claims/2", docs/claims.md), or for a thread {"format": "lorelab-claims-thread/1",
"msgid": str, "messages": [MessageClaims.to_dict(), ...]}.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
import typer
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from bot.cli import terminal
from bot.cli.context import UserError, emit_json

if TYPE_CHECKING:  # the claims reader imports scipy: only `lorelab claims` pays for it
    from bot.analysis.claims import JudgedClaim, MessageClaims
    from bot.analysis.claims.input import MessageText

THREAD_FORMAT = "lorelab-claims-thread/1"
EX_DATAERR = 65  # sysexits.h: the input is not what the command reads

STATUS_STYLE = {
    "judged": "bold",
    "needs-spread": "yellow",
    "no-data": "yellow",
    "see-table": "bold",
    "no-comparison": "dim",
    "needs-runs": "yellow",
}


def register(app: typer.Typer) -> None:
    app.command("claims")(claims)


def claims(
    target: str = typer.Argument(
        ..., metavar="FILE|MSGID", help="A message file, or the Message-ID of a stored message."
    ),
    thread: bool = typer.Option(
        False, "--thread", help="With a Message-ID: every stored message of its thread."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the claims as JSON."),
) -> None:
    """Find the performance claims in a message, quoted or not, and judge what they can support."""
    from bot.analysis.claims import drop_repeated_quotes
    from bot.analysis.claims.input import read_message_text

    path = Path(target)
    if path.is_file():
        if thread:
            raise UserError("--thread needs a Message-ID of a stored message, not a file")
        try:
            raws = [path.read_bytes()]
        except OSError as exc:
            raise UserError(f"cannot read {target}: {exc.strerror}") from None
        unreadable = read_message_text(raws[0]).unreadable
        if unreadable:
            why = unreadable.removesuffix(", not text")
            what = "not text mail" if why == "binary data" else "too large to read as mail"
            raise UserError(f"{target}: {what} ({why})", exit_code=EX_DATAERR)
    elif path.is_dir():
        raise UserError(f"{target}: a directory; give one message file (RFC 822) or a "
                        "Message-ID")
    elif "@" not in target:
        raise UserError(f"{target}: no such file, and not a Message-ID (no '@')")
    else:
        raws = _raws_from_database(_bare_msgid(target), thread=thread)
    results = [_analyse(read_message_text(raw)) for raw in raws]
    out = terminal.stdout()
    if thread:
        results = drop_repeated_quotes(results)
        if as_json:
            emit_json(
                {
                    "format": THREAD_FORMAT,
                    "msgid": _bare_msgid(target),
                    "messages": [r.to_dict() for r in results],
                }
            )
            return
        for result in results:
            out.print(Rule(escape(result.msgid or "")))
            print_claims(result, out)
    elif as_json:
        emit_json(results[0].to_dict())
    else:
        print_claims(results[0], out)


def _analyse(message: MessageText) -> MessageClaims:
    from bot.analysis.claims import analyse_message
    from bot.analysis.claims.message import unreadable_message

    if message.unreadable:
        return unreadable_message(
            message.subject, message.sender, message.msgid, message.unreadable
        )
    return analyse_message(message.subject, message.sender, message.body, message.msgid)


def _bare_msgid(target: str) -> str:
    return target.strip().removeprefix("<").removesuffix(">")


def _raws_from_database(msgid: str, *, thread: bool) -> list[bytes]:
    """The stored raw mail of the message, or of its whole thread (oldest first)."""
    from bot.cli.database import open_database
    from bot.db.models import Message

    db = open_database()
    try:
        with db.session() as session:
            row = session.execute(
                sa.select(Message.raw, Message.thread_id).where(Message.msgid == msgid)
            ).first()
            if row is None:
                raise UserError(
                    f"no message <{msgid}> in the database (ingest it first, or give a file)"
                )
            raws = [row.raw]
            if thread and row.thread_id is not None:
                raws = list(
                    session.scalars(
                        sa.select(Message.raw)
                        .where(Message.thread_id == row.thread_id)
                        .order_by(Message.date.is_(None), Message.date, Message.id)
                    )
                )
    finally:
        db.dispose()
    return list(raws)


def print_claims(result: MessageClaims, out: Console) -> None:
    """The report a maintainer reads: each claim's lines quoted, then the judgement."""
    out.print(f"[bold]{escape(result.subject or '(no subject)')}[/]")
    if result.sender:
        out.print(f"from {escape(result.sender)}")
    if result.benchmarks:
        out.print(f"benchmarks named: {', '.join(result.benchmarks)}")
    for command in result.commands:
        first = command.lines[0].number
        out.print(
            f"  command, line {first} ({escape(command.speaker.describe())}): "
            f"{escape(command.text)}",
            soft_wrap=True,
        )
    if result.unreadable:
        out.print(f"\n[yellow]{escape(result.unreadable)}[/]")
    elif not result.claims:
        out.print("\nNo performance claims found.")
    for judged in result.claims:
        out.print()
        _print_claim(judged, out)
    if result.unmentioned:
        out.print("\n[bold]Also changed, not mentioned[/]")
        for item in result.unmentioned:
            out.print(
                f"  {escape(item.metric)} {item.change_pct:+.2f}% ({item.verdict}), claim "
                f"{item.claim}"
            )
    if result.doubts:
        out.print("\n[bold]Doubts raised[/]")
        for doubt in result.doubts:
            lines = _line_range(doubt.lines[0].number, doubt.lines[-1].number)
            out.print(f"  {lines}, {escape(doubt.speaker.describe())}: {escape(doubt.text)}")


def _print_claim(judged: JudgedClaim, out: Console) -> None:
    claim, judgement = judged.claim, judged.judgement
    runs = ""
    if claim.runs is not None:
        where = f", stated on line {claim.runs_line.number}" if claim.runs_line else ""
        runs = f", {claim.runs} runs{where}"
    out.print(
        f"[bold]Claim {claim.index}[/] ({claim.kind}), {escape(claim.speaker.describe())}, "
        f"{_line_range(claim.first_line, claim.last_line)}{runs}"
    )
    if claim.benchmarks:
        out.print(f"  benchmarks: {', '.join(claim.benchmarks)}")
    shown = claim.lines
    if claim.table is not None and claim.table.heading:
        # Kernel names and column headers identify a table; its runs are judged below.
        shown = claim.table.heading
    for line in shown:
        out.print(f"  [dim]{line.number:>4}[/] {escape(line.raw)}", soft_wrap=True)
    if len(shown) < len(claim.lines):
        out.print(f"  [dim]     ... {len(claim.lines) - len(shown)} lines of runs and summaries[/]")
    style = STATUS_STYLE.get(judgement.status, "default")
    out.print(f"  [{style}]{judgement.status}[/]: {escape(judgement.summary)}")
    if judgement.comparisons:
        out.print(_comparison_table(judged))
        for column in judgement.comparisons:
            for note in column.notes:
                out.print(f"  - {escape(note)}")
    if claim.kind != "table":
        # A table of three or more kernels has a row a metric and a judgement a pair.
        several = len({m.patched_label for m in claim.measurements}) > 1
        for measured, judged_m in zip(claim.measurements, judgement.measurements, strict=False):
            pair = f" ({measured.patched_label} vs {measured.base_label})" if several else ""
            out.print(f"  * {escape(measured.metric)}{escape(pair)}: {escape(judged_m.summary)}",
                      soft_wrap=True)  # fmt: skip
    for note in judgement.notes:
        out.print(f"  - {escape(note)}")


def _comparison_table(judged: JudgedClaim) -> Table:
    data = judged.claim.table
    base = data.kernels[0] if data else "the base"
    direction = ""
    if data is not None and data.higher_is_better is not None:
        direction = " (higher is better)" if data.higher_is_better else " (lower is better)"
    table = Table(
        title=f"each kernel against {base}{direction}", title_justify="left", pad_edge=False
    )
    table.add_column("comparison")
    table.add_column("n", justify="right")
    table.add_column("mean %", justify="right")
    table.add_column("median %", justify="right")
    level = judged.judgement.comparisons[0].comparison.shift.confidence
    table.add_column(f"HL % [{100 * level:g}% CI]", justify="right")
    table.add_column("p", justify="right")
    table.add_column("verdict")
    for column in judged.judgement.comparisons:
        c = column.comparison
        table.add_row(
            escape(column.label),
            f"{c.base.n}/{c.patched.n}",
            f"{c.mean_change_pct:+.2f}",
            f"{c.median_change_pct:+.2f}",
            f"{c.change_pct:+.2f} [{c.ci_low_pct:+.2f}, {c.ci_high_pct:+.2f}]",
            f"{c.pvalue:.3f}",
            escape(column.words),
        )
    return table


def _line_range(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"
