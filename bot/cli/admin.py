"""Set-up commands: `lorelab init`, `lorelab db upgrade|downgrade|current`."""

from __future__ import annotations

from pathlib import Path

import typer

from bot.cli.context import UserError, console, emit_json, settings
from bot.config import default_config_path, starter_config
from bot.db.session import (
    SCHEMA_HEAD,
    Database,
    current_revision,
    downgrade,
    newer_schema,
    upgrade,
)
from bot.ingest.rules_edition import RULES_EDITION, reparse_advice, stored_edition

db_app = typer.Typer(help="The database schema (Alembic migrations).")


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.add_typer(db_app, name="db")


def init(
    path: Path = typer.Argument(None, help="Where to write it (default: the user's config file)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a commented starter configuration file."""
    target = path or default_config_path()
    if target.exists() and not force:
        raise UserError(f"{target} exists; use --force to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(starter_config(), encoding="utf-8")
    console.print(f"wrote {target}; edit it, then run `lorelab db upgrade`")


def _database() -> Database:
    return Database(settings().database.resolved_url())


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head", help="Target revision.")) -> None:
    """Bring the schema up to date (or to REVISION)."""
    db = _database()
    if newer_schema(current := current_revision(db.engine)):
        raise UserError(f"the database has schema {current}, made by a newer lorelab (this one "
                        f"knows up to {SCHEMA_HEAD}): nothing to upgrade; use that lorelab")
    upgrade(db.engine, revision)
    now = current_revision(db.engine)
    console.print(f"database schema at {now}")
    if now == SCHEMA_HEAD and (advice := reparse_advice(stored_edition(db.engine))):
        console.print(f"note: {advice}", markup=False, highlight=False)


@db_app.command("downgrade")
def db_downgrade(
    revision: str = typer.Argument(..., help="Target revision, e.g. -1 or base."),
) -> None:
    """Step the schema back to REVISION (data in dropped tables is lost)."""
    db = _database()
    downgrade(db.engine, revision)
    console.print(f"database schema at {current_revision(db.engine) or 'base (empty)'}")


@db_app.command("current")
def db_current(as_json: bool = typer.Option(False, "--json")) -> None:
    """The schema revision of the database and the one this lorelab needs; the rules edition
    its stored mail was read by and this lorelab's (`lorelab ingest reparse` brings it up)."""
    db = _database()
    current = current_revision(db.engine)
    stored = stored_edition(db.engine) if current == SCHEMA_HEAD else None
    data = {
        "url": db.engine.url.render_as_string(hide_password=True),
        "current": current,
        "head": SCHEMA_HEAD,
        "rules_edition": stored,
        "rules_edition_head": RULES_EDITION,
        "reparse_needed": reparse_advice(stored) is not None,
    }
    if as_json:
        emit_json(data)
        return
    console.print(f"{data['url']}: schema {current or 'none'} (this lorelab: {SCHEMA_HEAD})")
    if current == SCHEMA_HEAD:
        read = "none, no mail stored yet" if stored is None else str(stored)
        console.print(f"rules edition of the stored mail: {read} (this lorelab: {RULES_EDITION})")
    if advice := reparse_advice(stored):
        console.print(f"note: {advice}", markup=False, highlight=False)
