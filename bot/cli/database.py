"""Opening the configured database from a command, with errors that say what to do."""

from __future__ import annotations

import sqlalchemy as sa

from bot.cli.context import UserError, settings
from bot.db import session as stored
from bot.db.session import Database, SchemaError


def open_database(url: str | None = None) -> Database:
    """The configured database, its schema created if it is new and checked if it is not."""
    url = url or settings().database.resolved_url()
    try:
        return stored.open_database(url)
    except SchemaError as exc:
        raise UserError(str(exc)) from None
    except sa.exc.OperationalError as exc:
        raise UserError(
            f"cannot open the database {sa.engine.make_url(url).render_as_string()}: "
            f"{exc.orig}; check [database] url or LORELAB_DATABASE_URL",
            exit_code=75,
        ) from None
