"""A new database's schema, made from the models (`create_schema`), is the one the migrations
make: a migration whose change the models lack (or the other way round) fails here. Neither a
new database nor one at the latest schema needs Alembic; an older one is upgraded on request.

Compared as the engine reports them: every table, its columns (type, nullability, server
default, autoincrement), primary key, foreign keys, indexes (unique and partial), unique and
check constraints, PostgreSQL's sequences, and the revision in alembic_version. Not the order of
the columns: a migration adds columns at the end of a table, where its model may put them
anywhere, and nothing reads columns by position.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.db.session import (
    SCHEMA_HEAD,
    SchemaError,
    create_schema,
    current_revision,
    downgrade,
    ensure_schema,
    head_revision,
    make_engine,
    upgrade,
)
from tests.cli import SHOW_MODULES, Lorelab
from tests.support.databases import create_pg_database, drop_pg_database


def schema_of(engine: sa.Engine) -> dict[tuple[str, str], Any]:
    """Everything the engine reports of the schema, by (table, what), in values that compare
    by content."""
    inspector = sa.inspect(engine)

    def by_name(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(items, key=lambda item: str(item.get("name")))

    schema: dict[tuple[str, str], Any] = {}
    for table in inspector.get_table_names():
        for column in inspector.get_columns(table):
            schema[table, f"column {column['name']}"] = {
                **column, "type": column["type"].compile(engine.dialect)}
        schema[table, "primary key"] = inspector.get_pk_constraint(table)
        schema[table, "foreign keys"] = by_name(inspector.get_foreign_keys(table))
        schema[table, "indexes"] = by_name(inspector.get_indexes(table))
        schema[table, "unique constraints"] = by_name(inspector.get_unique_constraints(table))
        schema[table, "check constraints"] = by_name(inspector.get_check_constraints(table))
        schema[table, "options"] = inspector.get_table_options(table)
    with engine.connect() as conn:
        schema["alembic_version", "rows"] = conn.scalars(
            sa.text("SELECT version_num FROM alembic_version")).all()
    if engine.dialect.name == "postgresql":
        schema["", "sequences"] = sorted(inspector.get_sequence_names())
    return schema


@pytest.fixture
def two_empty_urls(
    empty_db_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[str, str]]:
    """Two empty databases on the same backend."""
    if empty_db_url.startswith("sqlite"):
        yield empty_db_url, f"sqlite:///{tmp_path / 'other.db'}"
        return
    admin = request.getfixturevalue("pg_server")
    other = create_pg_database(admin)
    try:
        yield empty_db_url, other
    finally:
        drop_pg_database(admin, other)


def test_a_new_database_gets_the_schema_the_migrations_make(
    two_empty_urls: tuple[str, str],
) -> None:
    made, migrated = (make_engine(url) for url in two_empty_urls)
    try:
        ensure_schema(made)  # an empty database: create_schema
        upgrade(migrated)
        assert current_revision(made) == SCHEMA_HEAD == head_revision()
        expected, got = schema_of(migrated), schema_of(made)
        assert ("runs", "column options") in expected
        differences = {key: {"models": got.get(key), "migrations": expected.get(key)}
                       for key in expected.keys() | got.keys() if got.get(key) != expected.get(key)}
        assert differences == {}
    finally:
        made.dispose()
        migrated.dispose()


def test_a_new_database_steps_back_and_up_like_a_migrated_one(empty_db_url: str) -> None:
    """Every downgrade finds what it drops by name: the constraint names are the migrations'."""
    engine = make_engine(empty_db_url)
    try:
        create_schema(engine)
        downgrade(engine, "base")
        assert set(sa.inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade(engine)
        assert current_revision(engine) == SCHEMA_HEAD
    finally:
        engine.dispose()


def test_a_database_at_an_older_revision_is_upgraded_on_request(
    empty_db_url: str, tmp_path: Path
) -> None:
    """Made by the migrations one revision short of the latest: commands refuse it and say to
    upgrade, `lorelab db upgrade` runs the last migration, then commands work."""
    engine = make_engine(empty_db_url)
    try:
        upgrade(engine)
        downgrade(engine, "-1")
        assert current_revision(engine) not in (None, SCHEMA_HEAD)
        with pytest.raises(SchemaError, match="lorelab db upgrade"):
            ensure_schema(engine)
    finally:
        engine.dispose()
    lorelab = Lorelab(tmp_path, empty_db_url)
    refused = lorelab.run("series", "list", check=False)
    assert refused.returncode == 1 and b"lorelab db upgrade" in refused.stderr
    lorelab.run("db", "upgrade")
    assert lorelab.json("db", "current")["current"] == SCHEMA_HEAD
    assert lorelab.json("series", "list") == []


def test_ingest_into_a_new_or_current_database_does_not_import_alembic(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    mbox = tmp_path / "empty.mbox"
    mbox.write_bytes(b"")
    for database in ("new", "at the latest schema"):
        proc = subprocess.run(
            [sys.executable, "-c", SHOW_MODULES, "ingest", "mbox", str(mbox), "--json"],
            capture_output=True, env=lorelab.env, timeout=120,
        )
        code, modules = json.loads(proc.stderr.decode().strip().splitlines()[-1])
        assert code == 0, (database, proc.stderr)
        assert [m for m in modules if m.split(".")[0] == "alembic"] == [], database
    assert lorelab.json("db", "current")["current"] == SCHEMA_HEAD
