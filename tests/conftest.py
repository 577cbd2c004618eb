"""Shared fixtures: databases (SQLite and a real PostgreSQL), the seeds, generated threads.

`db_url` and `db` are copies of a database given the schema once per session and backend
(tests/support/databases.py); `empty_db_url` is an empty database, for the tests of the
migrations themselves. Tests marked `empty_database` get an empty database from `db_url` too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.session import Database, ensure_schema
from tests.support.databases import (
    PostgresTemplate,
    SqliteTemplate,
    create_pg_database,
    drop_pg_database,
)

PG_ADMIN_URL = os.environ.get(
    "LORELAB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--alone", choices=("with-others", "skip", "only"), default="with-others",
        help="tests marked `alone` (they measure this machine's speed): run them with the others"
             " (default), leave them out (the parallel pass of scripts/test.sh), or run only them"
             " (its serial pass after it, with no other test beside them)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """PostgreSQL variants only where the SQL can differ from SQLite's (storing, assembling,
    querying, delivering, migrating): a module whose SQL cannot differ says `sqlite_only`.
    With `--alone skip` or `--alone only`, the tests marked `alone` left out, or only they.
    The real-kernel tests (an hour under TCG) only when `-m` names `kernel`: any `-m` replaces
    the `-m 'not kernel'` of `addopts`, and `-m slow` started them too."""
    alone = config.getoption("--alone")
    kernel = "kernel" in (config.getoption("markexpr") or "")
    dropped = [item for item in items
               if (item.get_closest_marker("sqlite_only") and "[postgresql" in item.nodeid)
               or (not kernel and item.get_closest_marker("kernel"))
               or (alone != "with-others"
                   and (item.get_closest_marker("alone") is None) == (alone == "only"))]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = set(dropped)
        items[:] = [item for item in items if item not in gone]


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
    return create_pg_database(admin_url)


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[PostgresTemplate]:
    """This session's PostgreSQL database at the latest schema, dropped at the end."""
    template = PostgresTemplate(pg_server)
    try:
        yield template
    finally:
        template.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SqliteTemplate:
    """This session's SQLite file at the latest schema."""
    return SqliteTemplate(tmp_path_factory.mktemp("sqlite-template"))


def _database_url(request: pytest.FixtureRequest, tmp_path: Path, migrated: bool) -> Iterator[str]:
    path = tmp_path / "lorelab.db"  # tests find other files next to it by this name
    if request.param == "sqlite":
        if migrated:
            yield request.getfixturevalue("sqlite_template").copy(path)
        else:
            yield f"sqlite:///{path}"
        return
    if not migrated:
        admin = request.getfixturevalue("pg_server")
        url = make_pg_database(admin)
        try:
            yield url
        finally:
            drop_pg_database(admin, url)
        return
    template = request.getfixturevalue("pg_template")
    url = template.copy()
    try:
        yield url
    finally:
        template.drop(url)


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL at the latest schema: a SQLite file, and a PostgreSQL database.

    Empty instead for tests marked `empty_database`.
    """
    migrated = request.node.get_closest_marker("empty_database") is None
    yield from _database_url(request, tmp_path, migrated)


@pytest.fixture(params=BACKENDS)
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database URL: a SQLite file, and a fresh PostgreSQL database."""
    yield from _database_url(request, tmp_path, migrated=False)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    ensure_schema(database.engine)  # a no-op at the latest schema; migrates an empty database
    yield database
    database.dispose()


@pytest.fixture
def ingest_settings() -> IngestSettings:
    return IngestSettings(batch_size=50)
