"""`lorelab ingest lore|pi-git`, `lorelab run` and `lorelab sources`: following lists live."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from bot.cli.context import UserError, console, emit_json, settings, stdout_console
from bot.cli.database import open_database
from bot.cli.ingest import EX_NOINPUT, EX_TEMPFAIL, ingest_app

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.db.session import Database
    from bot.ingest.live import LiveSummary
    from bot.ingest.lore import LoreSource
    from bot.ingest.pigit import PiGitSource

EX_USAGE = 2  # as click exits on any other bad argument


def register(app: typer.Typer) -> None:
    app.command("run")(run_service)
    app.command("sources")(list_sources)


def _logging() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    # lorelab's own progress; not the libraries' (Alembic's on a new database, urllib3's).
    logging.getLogger("bot").setLevel(logging.INFO)


def _reparse_advice(db: Database) -> str | None:
    """What to run when an older lorelab read the stored mail (`bot.ingest.rules_edition`)."""
    from bot.ingest.rules_edition import reparse_advice, stored_edition

    return reparse_advice(stored_edition(db.engine))


def _advise_reparse(db: Database) -> None:
    """Say, at the start of a long-running command, that stored mail waits for a reparse."""
    if advice := _reparse_advice(db):
        logging.getLogger("bot.ingest").warning(advice)


LIST_OPTION = typer.Option(None, "--list", "-l", help="The list these messages are filed under.")
JSON_OPTION = typer.Option(False, "--json", help="Print each poll's summary as JSON.")


def _poll_loop(
    source: LoreSource | PiGitSource, once: bool, interval: int, as_json: bool
) -> None:
    from bot.ingest.service import describe, stop_on_signals

    cfg = settings()
    db = open_database()
    _advise_reparse(db)
    stop = threading.Event()
    stop_on_signals(stop)
    while True:
        try:
            summary = _poll(source, db, cfg, show_progress=not as_json)
        except Exception as exc:  # noqa: BLE001 - reported, and retried unless --once
            if once:
                _poll_failed(source, exc)
            logging.getLogger(__name__).error("%s: poll failed, will retry: %s",
                                               source.key.location, exc)
        else:
            if as_json:
                emit_json(summary.to_dict())
            else:
                console.print(f"{source.key.location}: {describe(summary)}")
        if once or stop.wait(interval):
            return


def _poll_failed(source: LoreSource | PiGitSource, exc: Exception) -> NoReturn:
    """The one line a failed `--once` poll ends with, and whether to try again (75) or not."""
    from bot.ingest.pigit import GitArchiveError, PiGitSource

    if getattr(exc, "unreachable", False):  # no network, or no such host: its own words
        raise UserError(str(exc), EX_TEMPFAIL) from None
    if isinstance(source, PiGitSource) and not source.remote and isinstance(exc, GitArchiveError):
        raise UserError(str(exc), EX_NOINPUT) from None  # a local path that is no archive
    raise UserError(f"{source.key.location}: poll failed: {exc}", EX_TEMPFAIL) from None


def _poll(source: LoreSource | PiGitSource, db: Database, cfg: Settings, *,
          show_progress: bool) -> LiveSummary:
    """One poll; a git walk shows its progress bar on a terminal."""
    from bot.ingest.pigit import PiGitSource

    if not isinstance(source, PiGitSource):
        return source.poll(db, cfg.ingest, cfg.lists, max_age_days=cfg.plan.max_age_days)
    from bot.cli.progress import WalkBar

    with WalkBar(console, enabled=show_progress and console.is_terminal) as bar:
        return source.poll(db, cfg.ingest, cfg.lists, progress=bar)


@ingest_app.command("lore")
def ingest_lore(
    url: str = typer.Argument(..., help="The list's URL on a public-inbox server."),
    list_name: str = LIST_OPTION,
    once: bool = typer.Option(False, "--once", help="Poll once and exit."),
    interval: int = typer.Option(300, "--interval", help="Seconds between polls."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Follow a list's new.atom feed (backfilling by search after an outage)."""
    from bot.config.sections import archive_url_problem
    from bot.ingest.lore import LoreSource

    if problem := archive_url_problem(url):
        raise UserError(problem, exit_code=EX_USAGE)
    _logging()
    _poll_loop(LoreSource(url, list_name), once, interval, as_json)


@ingest_app.command("pi-git")
def ingest_pi_git(
    location: str = typer.Argument(
        ..., help="A public-inbox archive (a v2 inbox, one epoch, a v1 inbox): a path or a URL."),
    list_name: str = LIST_OPTION,
    once: bool = typer.Option(True, "--once/--follow", help="Walk once (default) or keep polling."),
    interval: int = typer.Option(300, "--interval", help="Seconds between polls with --follow."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Import a public-inbox git archive, then only its new commits on each run."""
    from bot.ingest.pigit import PiGitSource

    source = PiGitSource(location, list_name)
    if not source.remote and not source.root.is_dir():
        raise UserError(f"{location}: no such directory", exit_code=EX_NOINPUT)
    _logging()
    _poll_loop(source, once, interval, as_json)


def run_service(
    once: bool = typer.Option(False, "--once", help="Poll every source once and exit."),
) -> None:
    """Follow every configured list: poll, plan and run reviews, act on commands, reply.

    Polls each [[sources]] on its interval until SIGTERM; after each round the automatic
    pipeline plans review runs for new series, dispatches them and delivers due replies."""
    import datetime as dt

    from bot.db.models import utcnow
    from bot.ingest.service import run, stop_on_signals
    from bot.runs.rounds import dispatch_runs, run_round, unstarted_runs

    _logging()
    cfg = settings()
    if not cfg.sources:
        raise UserError("no [[sources]] in the configuration; see `lorelab init`", exit_code=78)
    db = open_database()
    _advise_reparse(db)
    stop = threading.Event()
    stop_on_signals(stop)
    # Runs committed but never sent to the workers (a crash in between) go out now.
    dispatch_runs(db, cfg, unstarted_runs(db))
    since = [utcnow() - dt.timedelta(days=1)]

    def after_polls() -> None:
        started = utcnow()
        run_round(db, cfg, since[0])
        since[0] = started

    run(db, cfg, stop=stop, once=once, after_polls=after_polls)


def _when(iso: str | None) -> str:
    """A stored time as a person reads it: to the minute, in UTC."""
    import datetime as dt

    if not iso:
        return ""
    return dt.datetime.fromisoformat(iso).astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def cursor_words(position: dict[str, Any]) -> str:
    """A source's stored position in words: the newest feed entry read and the threads fetched
    for context (lore), or the commit each epoch was read up to (pi-git). The feed's HTTP
    validators and the message-ids already seen only matter to the next poll."""
    words = []
    if position.get("newest"):
        words.append(f"newest {_when(position['newest'])}")
    if fetched := len(position.get("context_fetched") or {}):
        words.append(f"{fetched} thread{'s' if fetched != 1 else ''} fetched for context")
    epochs = {key.removeprefix("epoch/"): commit for key, commit in position.items()
              if key.startswith("epoch/") and commit}
    for epoch in sorted(epochs, key=lambda n: (len(n), n)):  # 2 before 10
        words.append(f"epoch {epoch} at {str(epochs[epoch])[:12]}")
    return ", ".join(words)


def list_sources(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """The configured sources with cursor, last poll, last error and messages ingested."""
    from rich.table import Table

    from bot.ingest.cursor import all_cursors

    cfg = settings()
    db = open_database()
    cursors = {(c["kind"], c["location"]): c for c in all_cursors(db)}
    rows = []
    for source in cfg.sources:
        location = source.url.rstrip("/")
        cursor = cursors.pop((source.kind, location), None) or {}
        rows.append({
            "kind": source.kind, "location": location, "list": source.list or None,
            "interval": source.interval, "configured": True,
            "position": cursor.get("position", {}),
            "messages_ingested": cursor.get("messages_ingested", 0),
            "last_poll": cursor.get("last_poll"), "last_error": cursor.get("last_error"),
            "skipped": cursor.get("skipped", 0), "skips": cursor.get("skips", []),
        })
    for cursor in cursors.values():  # read with `lorelab ingest lore|pi-git`, not configured
        rows.append({**cursor, "interval": None, "configured": False})
    if as_json:
        emit_json(rows)
        return
    table = Table("kind", "location", "list", "ingested", "skipped", "last poll", "cursor",
                  "last error")
    for row in rows:
        table.add_row(row["kind"], row["location"], row["list"] or "",
                      str(row["messages_ingested"]), str(row["skipped"]),
                      _when(row["last_poll"]) or "never", cursor_words(row["position"] or {}),
                      row["last_error"] or "")
    out = stdout_console()
    out.print(table)
    for row in rows:
        if row["skipped"]:
            shown = len(row["skips"])
            more = f" (the newest {shown})" if shown < row["skipped"] else ""
            out.print(f"{row['location']}: {row['skipped']} commits skipped{more}:",
                      markup=False)
            for skip in row["skips"]:
                out.print(f"  epoch {skip['epoch']} commit {skip['commit']} "
                          f"object {skip['object']}: {skip['reason']}", markup=False)
    if advice := _reparse_advice(db):
        console.print(f"note: {advice}", markup=False, highlight=False)
