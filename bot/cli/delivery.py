"""`lorelab ingest stdin` on its fast path: what a mail server runs for every delivered mail.

Starting the whole command line costs about a second of CPU, nearly all of it imports (typer,
rich, numpy, scipy and every other subcommand) that storing one mail never uses. `bot.cli.main`
hands the arguments here first; when they are exactly a delivery (`[--config PATH] ingest stdin
[--list NAME] [--json]`) the mail is stored with only the storing modules imported, and
anything else (`--help`, a typo) goes on to the full command line, which says what is wrong.
Exit statuses are those of `lorelab ingest stdin --help`: 0 stored (or quarantined), 75 when
the mail server should try again.

Cheaper still: a delivery hands the mail to a `lorelab deliver` agent (LMTP, `bot.ingest.lmtp`)
when one answers, and then imports nothing of storing at all: the agent named by
`LORELAB_DELIVER_SOCKET=PATH` (the administrator runs it), else the one an earlier delivery left
behind (`bot.cli.agent_start`). When none answers, it stores the mail itself and, unless the
administrator runs the agent, starts one for the mail after it. `lorelab deliver` is the agent:
it runs until stopped (SIGTERM or Ctrl-C: exit 0) or, with `--idle`, until that many seconds
pass without mail; it exits 75 when the database cannot be opened at start, 78 when the
settings cannot be used, 1 when the socket path is taken.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

    from bot.config import Settings
    from bot.db.session import Database
    from bot.ingest.lmtp import Store
    from bot.ingest.sources import RawMail

EX_TEMPFAIL = 75  # sysexits.h: the mail server keeps the message and tries again later


@dataclass(frozen=True)
class Delivery:
    config: str | None = None
    list_name: str | None = None
    as_json: bool = False


def _option(args: list[str], i: int, names: tuple[str, ...]) -> tuple[str, int] | None:
    """The value of option `args[i]` if it is one of `names` (as `NAME V` or `--name=V`)."""
    arg = args[i]
    if arg in names and i + 1 < len(args):
        return args[i + 1], i + 2
    for name in names:
        if name.startswith("--") and arg.startswith(name + "="):
            return arg[len(name) + 1 :], i + 1
    return None


def parse_delivery(args: list[str]) -> Delivery | None:
    """The delivery these arguments ask for, or None when they are anything else."""
    config = None
    i = 0
    if args and (found := _option(args, 0, ("--config", "-c"))):
        config, i = found
    if args[i : i + 2] != ["ingest", "stdin"]:
        return None
    i += 2
    list_name, as_json = None, False
    while i < len(args):
        if args[i] == "--json":
            as_json, i = True, i + 1
        elif found := _option(args, i, ("--list", "-l")):
            list_name, i = found
        else:
            return None
    return Delivery(config, list_name, as_json)


def deliver(delivery: Delivery) -> int:
    """Store one mail from standard input; the exit status."""
    from bot.cli.agent_start import EXPLICIT_SOCKET, agent_socket, start_agent
    from bot.ingest.sources import read_stdin

    mail = read_stdin(sys.stdin.buffer)
    explicit = os.environ.get(EXPLICIT_SOCKET)
    left_behind = None if explicit else agent_socket(delivery.config)
    agent = explicit or (str(left_behind) if left_behind else None)
    if agent and not delivery.as_json:
        handed = hand_over(agent, mail.data, delivery.list_name)
        if handed is not None:
            return handed
    status, idle = _store_here(delivery, mail)
    if status == 0 and left_behind and idle:
        start_agent(left_behind, delivery.config, idle)
    return status


def hand_over(path: str, message: bytes, list_name: str | None = None) -> int | None:
    """Give `message` to the LMTP agent on socket `path`: the exit status its answer means
    (0 stored, 75 try again), or None when no agent answers there (then store it here)."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(600)  # Postfix's own lmtp_data_done_timeout
            sock.connect(path)
            replies = sock.makefile("rb")

            def say(line: bytes) -> bytes:
                if line:
                    sock.sendall(line)
                reply = replies.readline()
                while reply[3:4] == b"-":  # a multi-line reply: its last line counts
                    reply = replies.readline()
                return reply

            if not say(b"").startswith(b"220") or not say(b"LHLO localhost\r\n").startswith(
                b"250"
            ):
                return None
            # A recipient without a domain names the list (`--list`), as the agent reads it;
            # without one, the agent goes by its own `--list` or the mail's List-Id.
            recipient = f"RCPT TO:<{list_name or 'lorelab@localhost'}>\r\n".encode()
            for command in (b"MAIL FROM:<>\r\n", recipient):
                if not say(command).startswith(b"250"):
                    return EX_TEMPFAIL
            if not say(b"DATA\r\n").startswith(b"354"):
                return EX_TEMPFAIL
            lines = message.replace(b"\r\n", b"\n").split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            stuffed = b"".join(b"." + ln + b"\r\n" if ln.startswith(b".") else ln + b"\r\n"
                               for ln in lines)
            answer = say(stuffed + b".\r\n")
            sock.sendall(b"QUIT\r\n")
    except OSError:
        return None  # no agent (or it went away before answering): store the mail here
    if answer.startswith(b"250"):
        return 0
    print(f"lorelab: the delivery agent said: {answer.decode(errors='replace').strip()}",
          file=sys.stderr)
    return EX_TEMPFAIL


def _store_here(delivery: Delivery, mail: RawMail) -> tuple[int, int]:
    """Store `mail` in this process: the exit status, and how long an agent started now
    should wait for the next mail (`[ingest] delivery_agent_idle`; 0 for none)."""
    import sqlalchemy as sa

    from bot.config import ConfigError, load_settings
    from bot.db.session import SchemaError, open_database
    from bot.ingest.store import ingest

    if delivery.config:
        # As the full command line does: also for the build sandbox's view of it.
        os.environ["LORELAB_CONFIG"] = os.path.abspath(delivery.config)
    try:
        cfg = load_settings(delivery.config)
        db = open_database(cfg.database.resolved_url())
        try:
            summary = ingest(db, [mail], settings=cfg.ingest, list_name=delivery.list_name,
                             known_lists=cfg.lists)
        finally:
            db.dispose()
    except (ConfigError, SchemaError) as exc:
        print(f"lorelab: {exc}", file=sys.stderr)
        return EX_TEMPFAIL, 0
    except sa.exc.OperationalError as exc:
        print(f"lorelab: database unavailable, try again later: {exc.orig}", file=sys.stderr)
        return EX_TEMPFAIL, 0
    if delivery.as_json:
        json.dump(summary.to_dict(), sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        print("\n".join(summary.describe()), file=sys.stderr)
    return 0, cfg.ingest.delivery_agent_idle


def register(app: typer.Typer) -> None:
    """Add `lorelab deliver`, the long-running LMTP agent."""
    import typer

    @app.command("deliver")
    def deliver_command(
        socket_path: Path = typer.Option(..., "--socket", help="The Unix socket to listen on."),
        list_name: str = typer.Option(
            None, "--list", "-l",
            help="Store every mail as seen on this list (default: the recipient's list, else "
            "its List-Id).",
        ),
        db_wait: float = typer.Option(
            30.0, "--db-wait",
            help="Seconds a mail waits for a locked SQLite database before the answer is 451.",
        ),
        idle: int = typer.Option(
            0, "--idle", min=0,
            help="Exit after this many seconds without mail (0: run until stopped).",
        ),
    ) -> None:
        """Run the delivery agent: LMTP on a Unix socket, for Postfix and Exim.

        Each mail is stored before the 250 reply to its DATA; 451 (try again later) when the
        database cannot take it now. Runs until stopped (SIGTERM, Ctrl-C: exit 0) or idle for
        --idle seconds (exit 0); exits 75 when the database cannot be opened at start, 78 when
        the settings cannot be used, 1 when another agent listens on the socket or the path
        is not a socket. `lorelab ingest stdin` starts one itself for the mail after it
        (`[ingest] delivery_agent_idle`), unless LORELAB_DELIVER_SOCKET names yours.
        """
        raise typer.Exit(serve_agent(socket_path, list_name, db_wait, idle))


def serve_agent(path: Path, list_name: str | None, db_wait: float, idle: int = 0) -> int:
    """Listen on `path` until SIGTERM, Ctrl-C or `idle` seconds without mail (0: no limit);
    the exit status."""
    import signal

    import sqlalchemy as sa

    from bot.cli.context import UserError, settings
    from bot.cli.database import open_database
    from bot.ingest.lmtp import listen

    cfg = settings()
    db = open_database()
    if db.engine.dialect.name == "sqlite":
        wait_ms = int(db_wait * 1000)
        sa.event.listen(db.engine, "connect",
                        lambda conn, _: conn.execute(f"PRAGMA busy_timeout = {wait_ms}"))
        db.engine.dispose()  # connections made so far had the default wait
    try:
        server = listen(path, _agent_store(db, cfg, list_name))
    except (FileExistsError, OSError) as exc:
        raise UserError(f"cannot listen on {path}: {exc}") from None

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    until = f", until {idle} s pass without mail" if idle else ""
    print(f"lorelab: delivering by LMTP on {path}{until}", file=sys.stderr, flush=True)
    if idle:
        server.stop_when_idle(idle)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        with server.lock:  # the mail being stored, if any, is stored (and answered) first
            server.server_close()
            db.dispose()
    return 0


def _agent_store(db: Database, cfg: Settings, list_name: str | None) -> Store:
    """Storing one mail for the agent: `TemporaryFailure` when the database cannot take it."""
    import logging

    import sqlalchemy as sa

    from bot.ingest.lmtp import TemporaryFailure
    from bot.ingest.sources import RawMail
    from bot.ingest.store import ingest
    from bot.ingest.upkeep import StatisticsUpkeep

    log = logging.getLogger("bot.ingest.lmtp")
    configured = {known.name for known in cfg.lists}
    # Each `ingest` call counts only its own mail; the agent counts them all, so the planner's
    # statistics are refreshed as deliveries grow the archive.
    upkeep = StatisticsUpkeep(db)

    def store(message: bytes, recipients: list[str]) -> str:
        name = list_name or _named_list(recipients, configured)
        try:
            summary = ingest(db, [RawMail(message, "lmtp")], settings=cfg.ingest,
                             list_name=name, known_lists=cfg.lists)
        except sa.exc.DBAPIError as exc:
            raise TemporaryFailure(f"the database is unavailable: {exc.orig}") from None
        except Exception as exc:
            # A bug must not lose mail: the server keeps it, and the log says what happened.
            log.exception("storing a delivered mail failed")
            raise TemporaryFailure(f"lorelab failed ({type(exc).__name__})") from None
        try:
            upkeep.stored(summary.stored)
        except sa.exc.DBAPIError:
            log.warning("refreshing the planner's statistics failed; the mail is stored")
        if summary.stored:
            return "stored"
        if summary.quarantined:
            return "quarantined: " + "; ".join(summary.quarantine_reasons[:1])
        return "already stored"

    return store


def _named_list(recipients: list[str], configured: set[str]) -> str | None:
    """The list a mail was delivered for: a recipient without a domain (`ingest stdin --list`
    handing over) names it; else a recipient whose local part is a configured list's name."""
    for address in recipients:
        local, at, _ = address.partition("@")
        if local and (not at or local in configured):
            return local
    return None
