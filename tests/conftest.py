"""Shared fixtures: databases (SQLite and a real PostgreSQL), the seeds, generated threads."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.session import Database, ensure_schema

PG_ADMIN_URL = os.environ.get(
    "LORELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def postgres_available() -> str | None:
    """None when PostgreSQL answers, else why not (the reason the PostgreSQL tests skip)."""
    try:
        engine = sa.create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect():
            pass
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: skip with the reason
        return f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {exc.__class__.__name__}"


def redis_reason() -> str | None:
    """None when Redis answers on 127.0.0.1:6379, else why not (the reason its tests skip)."""
    try:
        import redis

        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2).ping()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: skip with the reason
        return f"Redis at 127.0.0.1:6379 is not reachable: {exc.__class__.__name__}"


@pytest.fixture(scope="session")
def pg_server() -> str:
    reason = postgres_available()
    if reason:
        pytest.skip(reason)
    return PG_ADMIN_URL


def make_pg_database(admin_url: str) -> str:
    """A new, empty PostgreSQL database; its URL."""
    name = f"lorelab_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop_pg_database(admin_url: str, url: str) -> None:
    name = url.rsplit("/", 1)[1]
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database URL: a SQLite file, and a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lorelab.db'}"
        return
    admin = request.getfixturevalue("pg_server")
    url = make_pg_database(admin)
    try:
        yield url
    finally:
        drop_pg_database(admin, url)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    ensure_schema(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def ingest_settings() -> IngestSettings:
    return IngestSettings(batch_size=50)
