"""The schema: migrations up and down on SQLite and PostgreSQL, and models that match them."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from bot.db.models import Base
from bot.db.session import (
    SCHEMA_HEAD,
    SchemaError,
    current_revision,
    ensure_schema,
    head_revision,
    upgrade,
)
from tests.cli import Lorelab

# The migrations themselves, and ensure_schema on databases lorelab did not make: db_url is empty.
pytestmark = pytest.mark.empty_database


def test_schema_head_constant_is_alembics_head() -> None:
    assert head_revision() == SCHEMA_HEAD


def test_upgrade_downgrade_upgrade_with_the_cli(db_url: str, tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, db_url)
    lorelab.run("db", "upgrade")
    assert lorelab.json("db", "current")["current"] == SCHEMA_HEAD
    engine = sa.create_engine(db_url)
    assert {"messages", "series", "series_versions", "patches", "trailers", "quarantine",
            "ingest_cursors", "threads", "lists", "message_lists"} <= set(
        sa.inspect(engine).get_table_names()
    )
    lorelab.run("db", "downgrade", "base")
    assert lorelab.json("db", "current")["current"] is None
    assert set(sa.inspect(engine).get_table_names()) <= {"alembic_version"}
    lorelab.run("db", "upgrade")
    assert lorelab.json("db", "current")["current"] == SCHEMA_HEAD
    engine.dispose()


def test_models_match_the_migrations(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    upgrade(engine)  # not `ensure_schema`: that makes an empty database from the models
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_a_database_lorelab_did_not_make_is_refused(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE somebody_elses (id INTEGER)"))
    with pytest.raises(SchemaError, match="lorelab db upgrade"):
        ensure_schema(engine)
    assert current_revision(engine) is None
    engine.dispose()


def test_a_database_of_a_newer_lorelab_says_so_in_one_line(db_url: str, tmp_path: Path) -> None:
    """Schema 9999 (a later lorelab's): every command and `db upgrade` say so, no traceback."""
    lorelab = Lorelab(tmp_path, db_url)
    lorelab.run("db", "upgrade")
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    for args in (("series", "list"), ("db", "upgrade")):
        proc = lorelab.run(*args, check=False)
        err = proc.stderr.decode()
        assert proc.returncode == 1
        assert "schema 9999, made by a newer lorelab" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
