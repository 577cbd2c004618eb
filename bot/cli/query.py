"""Query commands: `lorelab series`, `lorelab message show`, `lorelab quarantine list`; and
`lorelab quarantine retry`, beside the list it empties, which stores what parses now."""

from __future__ import annotations

import datetime as dt
import email.utils
import sys

import sqlalchemy as sa
import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy.orm import Session

from bot.cli import terminal
from bot.cli.context import UserError, emit_json, settings
from bot.cli.database import open_database
from bot.db.models import (
    MailingList,
    Message,
    MessageList,
    Patch,
    QuarantinedMail,
    Series,
    SeriesVersion,
)
from bot.mail.subject import point_of, version_label
from bot.series.views import (
    message_dict,
    number_ranges,
    same_patches_words,
    series_dict,
    series_views,
    version_dict,
)

series_app = typer.Typer(help="Patch series and their versions.")
message_app = typer.Typer(help="Stored messages.")
quarantine_app = typer.Typer(help="Mail that could not be stored, with the reasons.")

JSON_OPTION = typer.Option(False, "--json", help="Print JSON (the shapes in README.md).")


def register(app: typer.Typer) -> None:
    app.add_typer(series_app, name="series")
    app.add_typer(message_app, name="message")
    app.add_typer(quarantine_app, name="quarantine")


def normalize_msgid(text: str) -> str:
    """A message-id from `<id>`, `id`, or a lore URL such as https://lore.kernel.org/r/<id>/."""
    text = text.strip()
    if "://" in text:
        parts = [p for p in text.split("/") if p]
        for marker in ("r", "all"):
            if marker in parts and parts.index(marker) + 1 < len(parts):
                return parts[parts.index(marker) + 1].strip("<>")
        return parts[-1] if "@" in parts[-1] else parts[-2]
    return text.strip("<>")


def _parse_since(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        since = dt.datetime.fromisoformat(value)
    except ValueError:
        try:
            since = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            raise UserError(f"--since {value!r}: use a date such as 2026-11-01") from None
    return since if since.tzinfo else since.replace(tzinfo=dt.UTC)


def find_series(session: Session, ref: str) -> Series:
    """A series by numeric id, or by the message-id (or lore URL) of any of its messages."""
    found = _find(session, ref)
    return found.series if isinstance(found, SeriesVersion) else found


def _find(session: Session, ref: str) -> Series | SeriesVersion:
    """The series of a numeric id; the posting (version) a message-id or lore URL names."""
    if ref.isdigit():
        series = session.get(Series, int(ref))
        if series is None:
            raise UserError(f"no series {ref}; `lorelab series list` shows the ids")
        return series
    msgid = normalize_msgid(ref)
    message = session.scalar(sa.select(Message).where(Message.msgid == msgid))
    if message is None:
        raise UserError(f"no message <{msgid}> is stored; ingest its thread first")
    version_id = session.scalar(
        sa.select(Patch.series_version_id).where(Patch.message_id == message.id)
    ) or session.scalar(
        sa.select(SeriesVersion.id).where(
            sa.or_(
                SeriesVersion.cover_message_id == message.id,
                SeriesVersion.anchor_msgid == msgid,
            )
        )
    )
    if version_id is None:
        raise UserError(
            f"<{msgid}> is a {message.kind} message, not part of a series; "
            f"`lorelab message show {msgid}` shows what it is"
        )
    return session.get(SeriesVersion, version_id)  # type: ignore[return-value]


def choose_version(session: Session, ref: str, number: int | None) -> SeriesVersion:
    """The posting a command acts on: the one `ref` names by a message of it, else version
    `number` of the series (the newest version, in its newest point release, when None). Two
    postings of one version (a partial reroll and the whole version sent later, a RESEND) are
    told apart by a message-id of one of them, never picked silently."""
    found = _find(session, ref)
    if isinstance(found, SeriesVersion) and number in (None, found.version):
        return found
    series = found.series if isinstance(found, SeriesVersion) else found
    if number is None:
        if not series.versions:
            raise UserError(f"series {series.id} has no versions")
        number = max(v.version for v in series.versions)
        newest = max(point_of(v.version, v.prefixes) for v in series.versions
                     if v.version == number)
        postings = [v for v in series.versions  # the newest point release of it: v4.1, not v4
                    if v.version == number and point_of(v.version, v.prefixes) == newest]
    else:
        postings = [v for v in series.versions if v.version == number]
    if not postings:
        have = ", ".join(version_label(v.version, v.prefixes) for v in series.versions)
        raise UserError(f"series {series.id} has no v{number}; it has {have}")
    if len(postings) > 1:
        listed = "; ".join(
            f"<{_named_by(v)}> ({version_label(v.version, v.prefixes)}, {v.received} "
            f"patch{'es' if v.received != 1 else ''}"
            + (f", a partial reroll of {version_label(v.reroll_of.version, v.reroll_of.prefixes)}"
               if v.reroll_of else "") + ")"
            for v in postings
        )
        raise UserError(f"series {series.id} has {len(postings)} postings of v{number}: "
                        f"{listed}; name the one you mean by one of these message-ids")
    return postings[0]


def _named_by(version: SeriesVersion) -> str:
    """A message-id of a posting's own (the anchor may be a message it replies to)."""
    first = version.first_message
    return first.msgid if first is not None else version.anchor_msgid


@series_app.command("list")
def series_list(
    list_name: str = typer.Option(None, "--list", "-l", help="Only series sent to this list."),
    author: str = typer.Option(None, "--author", "-a", help="Author name or address contains."),
    since: str = typer.Option(None, "--since", help="Only series with mail since this date."),
    limit: int = typer.Option(50, "--limit", "-n", min=1,
                               help="At most this many, newest first."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Series, the one with the newest mail first."""
    db = open_database()
    with db.session() as session:
        query = sa.select(Series.id)
        if author:
            pattern = f"%{author.lower()}%"
            query = query.where(
                sa.or_(
                    sa.func.lower(Series.author_email).like(pattern),
                    sa.func.lower(Series.author_name).like(pattern),
                )
            )
        since_dt = _parse_since(since)
        if since_dt:
            query = query.where(Series.last_mail_at >= since_dt)
        if list_name:
            on_list = (
                sa.select(Patch.id)
                .join(SeriesVersion, SeriesVersion.id == Patch.series_version_id)
                .join(MessageList, MessageList.message_id == Patch.message_id)
                .join(MailingList, MailingList.id == MessageList.list_id)
                .where(SeriesVersion.series_id == Series.id, MailingList.name == list_name)
            )
            query = query.where(on_list.exists())
        # The page and how many pass the filters, in one statement (a window over the rows).
        page = session.execute(
            query.add_columns(sa.func.count().over())
            .order_by(Series.last_mail_at.desc(), Series.id.desc()).limit(limit)
        ).all()
        ids = [series_id for series_id, _ in page]
        total = page[0][1] if page else 0
        rows = series_views(session, ids, with_patches=False,
                            site_url=settings().web.base_url.rstrip("/"))
    shown = f"{len(rows)} series" if len(rows) == (total or 0) else (
        f"{len(rows)} of {total} series shown; --limit shows more"
    )
    if as_json:
        emit_json(rows)
        if len(rows) != total:  # said beside the JSON, which stays a plain list
            print(shown, file=sys.stderr)
        return
    print_series_table(rows, shown)


def print_series_table(rows: list[dict], shown: str) -> None:
    table = Table(title=shown, title_justify="left")
    for column in ("id", "title", "author", "versions", "latest", "lists", "updated"):
        table.add_column(column, overflow="fold")
    for s in rows:
        latest = s["versions"][-1] if s["versions"] else None
        state = ""
        if latest:
            state = f"{latest['label']} {latest['received']}/{latest['expected']}"
            state += " complete" if latest["complete"] else " incomplete"
        table.add_row(
            str(s["id"]),
            s["title"],
            s["author"]["email"],
            ",".join(v["label"] for v in s["versions"]),
            state,
            ",".join(s["lists"]),
            (s["updated"] or "")[:16].replace("T", " "),
        )
    terminal.stdout().print(table)


def _sent_id(sent: str | None, own: str | None) -> str:
    """A mail's Message-ID as the list knows it; for a copy (another mail took the id first)
    also lorelab's stand-in, which `lorelab message show` takes."""
    if sent is None:
        return "-"
    return f"<{sent}>" + (f" (a copy; lorelab's id <{own}>)" if own != sent else "")


@series_app.command("show")
def series_show(
    ref: str = typer.Argument(..., help="Series id, or a message-id / lore URL of the series."),
    as_json: bool = JSON_OPTION,
) -> None:
    """A series with its versions, patches, files and trailers."""
    db = open_database()
    with db.session() as session:
        data = series_dict(session, find_series(session, ref))
    if as_json:
        emit_json(data)
        return
    out = terminal.stdout()
    out.print(f"[bold]{escape(data['title'])}[/]  (series {data['id']})")
    out.print(f"author: {data['author']['name']} <{data['author']['email']}>", markup=False)
    out.print(f"lists: {', '.join(data['lists']) or '-'}   change-id: {data['change_id'] or '-'}",
              markup=False)
    for v in data["versions"]:
        if v["continued_by"] is not None:
            where = ("below" if v["continued_in_series"] == data["id"]
                     else f"in series {v['continued_in_series']}")
            state = f"a piece of {v['label']}, whose rest was sent later ({where})"
        else:
            state = ("complete" if v["complete"] else "incomplete"
                     + (f", missing {number_ranges(v['missing'])}" if v["missing"] else ""))
        flags = " ".join(
            f for f in ("RFC" if v["rfc"] else "", "RESEND" if v["resend"] else "") if f
        )
        out.print(
            f"\n[bold]{v['label']}[/] {flags} {v['received']}/{v['expected']} {state}  "
            f"{(v['date'] or '')[:16]}\n"
            f"  cover: {_sent_id(v['cover_sent_message_id'], v['cover_message_id'])}\n"
            f"  base-commit: {v['base_commit'] or '-'}"
        )
        if v["reroll_of_label"] == v["label"]:
            earlier = sorted({p["from_label"] for p in v["patches"]} - {v["label"]})
            out.print(f"  the last piece of {v['label']}, sent a few patches at a time: the "
                      "patches it did not send are the earlier pieces'"
                      + (f" and {', '.join(earlier)}'s" if earlier else ""), markup=False)
        elif v["reroll_of"] is not None:
            out.print(f"  a partial reroll of {v['reroll_of_label']}: the patches it did not "
                      f"send again are {v['reroll_of_label']}'s", markup=False)
        if v["measured_by_run"] is not None:
            before, after = same_patches_words(v)
            out.print(f"  {before} run {v['measured_by_run']}{after}", markup=False)
        for note in v["notes"]:
            out.print(f"  [yellow]note:[/] {escape(note)}")
        if v["fix_ups"]:
            out.print("  fix-ups sent for it, which lorelab's runs do not apply:", markup=False)
        for fix in v["fix_ups"]:
            out.print(f"    of {fix['fixes']}/{v['expected']}: <{fix['message_id']}>",
                      markup=False)
        for p in v["patches"]:
            sent = (f"  ({p['from_label']})" if p["from_label"] != v["label"]
                    else "  (an earlier piece)" if p["from_posting"] != v["id"] else "")
            out.print(f"  [{p['index']}/{v['expected']}] {p['subject']}{sent}", markup=False)
            out.print(f"        {_sent_id(p['sent_message_id'], p['message_id'])}  "
                      f"+{p['insertions']} -{p['deletions']}", markup=False)
            for f in p["files"]:
                out.print(f"        {f}")
            for t in p["trailers"]:
                if t["origin"] != "own" or t["name"] != "Signed-off-by":
                    out.print(f"        {t['name']}: {t['value']}  ({t['origin']})",
                              markup=False)


@series_app.command("mbox")
def series_mbox(
    ref: str = typer.Argument(..., help="Series id, or a message-id / lore URL of the posting."),
    version: int = typer.Option(None, "--version", "-v", help="Which version (default: the "
                                "posting REF names, else the latest)."),
) -> None:
    """Write the am-ready mbox (trailers applied, as b4 does) to standard output."""
    from bot.series.mbox import MboxError, am_ready_mbox  # b4 is slow to import

    db = open_database()
    with db.session() as session:
        chosen = choose_version(session, ref, version)
        if not chosen.complete:
            shape = version_dict(chosen, with_patches=False)
            # every number there, yet incomplete: a note says why (an ambiguous Message-ID)
            why = (f"patches {number_ranges(shape['missing'])} have not arrived; ingest the "
                   "rest of the thread first" if shape["missing"]
                   else "; ".join(shape["notes"]) or "see `lorelab series show`")
            raise UserError(
                f"{version_label(chosen.version, chosen.prefixes)} is incomplete: {why}")
        try:
            data = am_ready_mbox(session, chosen)
        except MboxError as exc:
            raise UserError(str(exc)) from None
    sys.stdout.buffer.write(data)


@message_app.command("show")
def message_show(
    msgid: str = typer.Argument(..., help="Message-ID (with or without <>) or lore URL."),
    raw: bool = typer.Option(False, "--raw", help="Print the message exactly as received."),
    as_json: bool = JSON_OPTION,
) -> None:
    """What lorelab made of one message."""
    db = open_database()
    with db.session() as session:
        wanted = normalize_msgid(msgid)
        message = session.scalar(sa.select(Message).where(Message.msgid == wanted))
        if message is None:
            raise UserError(f"no message <{wanted}> is stored")
        if raw:
            sys.stdout.buffer.write(message.raw)
            return
        data = message_dict(session, message)
    if as_json:
        emit_json(data)
        return
    out = terminal.stdout()

    def line(key: str, value: object, style: str = "bold") -> None:
        out.print(f"[{style}]{key}:[/] {escape(str(value))}", highlight=False)

    for key in ("message_id", "subject", "kind", "date", "in_reply_to"):
        line(key, data[key] if data[key] is not None else "-")
    line("lists", ", ".join(data["lists"]) or "-")
    line("from", f"{data['from']['name']} <{data['from']['email']}>")
    if data["references"]:
        line("references", " ".join(data["references"]))
    for f in data["files"]:
        line("touches", f"{f['path']} ({f['change']}, +{f.get('added', 0)} "
                        f"-{f.get('removed', 0)})")
    for t in data["trailers"]:
        line("trailer", f"{t['name']}: {t['value']}")
    for problem in data["problems"]:
        line("problem", problem, style="yellow")
    if data["series"]:
        s = data["series"]
        line("series", f"{s['series_id']} v{s['version']} patch {s['index']}")


def quarantine_rows(session: Session) -> list[dict]:
    return [
        {
            "id": q.id,
            "source": q.source,
            "reason": q.reason,
            "size": q.raw_size,
            "truncated": q.truncated,
            "sha256": q.sha256,
            "received_at": q.received_at.isoformat(),
        }
        for q in session.scalars(
            sa.select(QuarantinedMail)
            .options(sa.orm.defer(QuarantinedMail.raw))
            .order_by(QuarantinedMail.id)
        )
    ]


@quarantine_app.command("list")
def quarantine_list(as_json: bool = JSON_OPTION) -> None:
    """Input that could not be stored as a message, with the reason."""
    db = open_database()
    with db.session() as session:
        rows = quarantine_rows(session)
    if as_json:
        emit_json(rows)
        return
    table = Table(title=f"{len(rows)} quarantined", title_justify="left")
    for column in ("id", "source", "size", "reason"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(str(r["id"]), r["source"], str(r["size"]), r["reason"])
    terminal.stdout().print(table)


@quarantine_app.command("retry")
def quarantine_retry(as_json: bool = JSON_OPTION) -> None:
    """Try the quarantined mail again (after an upgrade): store what parses now, keep the rest
    with today's reason. A quarantine row goes once its message is stored."""
    from bot.cli.ingest import EX_TEMPFAIL, database_said
    from bot.ingest.quarantine_retry import retry

    config = settings()
    try:
        summary = retry(open_database(), settings=config.ingest, known_lists=config.lists)
    except sa.exc.OperationalError as exc:
        raise UserError(f"the database could not take a batch ({database_said(exc)}); what "
                        "was stored before it is out of the quarantine: run the command again",
                        exit_code=EX_TEMPFAIL) from None
    if as_json:
        emit_json(summary.to_dict())
        return
    for line in summary.describe():
        terminal.stdout().print(line, markup=False, highlight=False)
