"""Opening the configured database from a command, with errors that say what to do."""

from __future__ import annotations

import sqlalchemy as sa

from bot.cli.context import UserError, settings
from bot.db.session import Database, SchemaError, ensure_schema


def open_database(url: str | None = None) -> Database:
    """The configured database, its schema created if it is new and checked if it is not."""
    url = url or settings().database.resolved_url()
    db = Database(url)
    try:
        ensure_schema(db.engine)
    except SchemaError as exc:
        raise UserError(str(exc)) from None
    except sa.exc.OperationalError as exc:
        raise UserError(
            f"cannot open the database {db.engine.url.render_as_string(hide_password=True)}: "
            f"{exc.orig}; check [database] url or LORELAB_DATABASE_URL",
            exit_code=75,
        ) from None
    return db
