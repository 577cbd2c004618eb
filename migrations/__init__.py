"""Alembic migrations: the only way lorelab's schema changes (`lorelab db upgrade|downgrade`)."""
