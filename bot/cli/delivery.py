"""`lorelab ingest stdin` on its fast path: what a mail server runs for every delivered mail.

Starting the whole command line costs about a second of CPU, nearly all of it imports (typer,
rich, numpy, scipy and every other subcommand) that storing one mail never uses. `bot.cli.main`
hands the arguments here first; when they are exactly a delivery (`[--config PATH] ingest stdin
[--list NAME] [--json]`) the mail is stored with only the storing modules imported, and
anything else (`--help`, a typo) goes on to the full command line, which says what is wrong.
Exit statuses are those of `lorelab ingest stdin --help`: 0 stored (or quarantined), 75 when
the mail server should try again.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

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
    import sqlalchemy as sa

    from bot.config import ConfigError, load_settings
    from bot.db.session import SchemaError, open_database
    from bot.ingest.sources import read_stdin
    from bot.ingest.store import ingest

    if delivery.config:
        # As the full command line does: also for the build sandbox's view of it.
        os.environ["LORELAB_CONFIG"] = os.path.abspath(delivery.config)
    mail = read_stdin(sys.stdin.buffer)
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
        return EX_TEMPFAIL
    except sa.exc.OperationalError as exc:
        print(f"lorelab: database unavailable, try again later: {exc.orig}", file=sys.stderr)
        return EX_TEMPFAIL
    if delivery.as_json:
        json.dump(summary.to_dict(), sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        print("\n".join(summary.describe()), file=sys.stderr)
    return 0
