"""Engines, sessions and schema upgrades for SQLite (embedded) and PostgreSQL (deployed).

A fresh, empty database is given the latest schema on first use, made from the models; a
database at an older schema is never changed behind the user's back: they are told to run
`lorelab db upgrade`. Alembic is imported only when a migration runs: it costs half a second on
every command.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

import migrations
from bot.paths import data_dir

if TYPE_CHECKING:
    from alembic.config import Config

# The newest revision in migrations/versions; tests check it against Alembic's own view.
SCHEMA_HEAD = "0019"


# Rows of each index SQLite's ANALYZE reads: enough for the planner, milliseconds at any size.
SQLITE_ANALYSIS_LIMIT = 1000


class SchemaError(RuntimeError):
    """The database's schema does not match the code; the text says what to run."""


def json_text(value: object) -> str:
    """A JSON column's value as the engines store it."""
    return orjson.dumps(value).decode()


# Every message has five JSON columns; the stdlib encoder was a tenth of ingest time.
_JSON = {"json_serializer": json_text, "json_deserializer": orjson.loads}


# A new SQLite database's page: the largest SQLite has. Most of an archive is compressed raw
# mail, a few KB a message: in 4 KB pages a message of more than 4 KB spilled into a chain of
# overflow pages, each its own write to the WAL and again to the database. In 64 KB pages it
# stays in its row, and the file is 5% smaller; a 20,000-message ingest's storing process
# spent 0.45 s of system time instead of 0.64 s (bench/ingest.py; docs/performance-log.md).
SQLITE_PAGE_SIZE = 65536
SQLITE_CHECKPOINT_BYTES = 64 * 2**20

# How long a writer waits for another's lock before it gives up (a command exits 75, the agent
# answers a delivery 451, a poll is retried): SQLite's busy timeout, and on PostgreSQL the wait
# for the ingest lock (`bot.ingest.serial`), rather than hanging behind a stopped process.
LOCK_WAIT_SECONDS = 30

# Every engine made here and still in use, for `dispose_engines`.
_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1].split("?", 1)[0]
        # Only the default data directory is made: a typo in a path must not make a tree.
        if path and path != ":memory:" and Path(path).parent.resolve() == data_dir().resolve():
            data_dir().mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": LOCK_WAIT_SECONDS}, **_JSON)
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = sa.create_engine(url, pool_pre_ping=True, **_JSON)
    _ENGINES.add(engine)
    return engine


def dispose_engines() -> None:
    """Close the pooled connections of every engine still in use, as the end of the process
    would (SQLite's last connection folds the write-ahead log back into the database file)."""
    for engine in list(_ENGINES):
        engine.dispose()


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    cur = dbapi_conn.cursor()
    # Only a database not yet written takes it (before WAL is turned on); an older one keeps its
    # pages, which only a VACUUM outside WAL mode changes, and works as before.
    cur.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
    # WAL lets the web page read while ingest writes; NORMAL is durable across process crashes.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    # An ingest batch writes more than the default 1000-page WAL, so every commit also paid for
    # a checkpoint (copy back and fsync): checkpoint every 64 MB instead. Durability is the same.
    page_size = cur.execute("PRAGMA page_size").fetchone()[0]
    cur.execute(f"PRAGMA wal_autocheckpoint={SQLITE_CHECKPOINT_BYTES // page_size}")
    # 64 MB of page cache (default 2 MB): a batch's index updates otherwise re-read pages.
    cur.execute("PRAGMA cache_size=-65536")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", migrations.__path__[0])
    cfg.attributes["engine"] = engine
    return cfg


def head_revision() -> str:
    """The newest revision according to Alembic's reading of migrations/versions."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(
        alembic_config(sa.create_engine("sqlite://"))
    ).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    if "alembic_version" not in sa.inspect(engine).get_table_names():
        return None
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(engine), revision)


# Alembic's table of the revision a database is at, as its migrations make it.
_VERSION_TABLE = sa.Table(
    "alembic_version",
    sa.MetaData(),
    sa.Column("version_num", sa.String(32), nullable=False),
    sa.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)


def create_schema(engine: Engine) -> None:
    """Give an empty database the latest schema from the models, stamped SCHEMA_HEAD.

    The schema the migrations make (tests/db/test_fresh_schema.py compares the two on both
    backends), for a tenth of the CPU: running them, with Alembic's import, was a third of a
    first command's. The revision is written last: a schema made halfway is never taken for a
    finished one."""
    # Imported here: a database at the latest schema does not need them (40 ms of import).
    from bot.db.models import Base

    with engine.begin() as conn:
        # Not `create_all`: it makes a table's indexes in the order of a set, which changes
        # from one process to the next, and SQLite's planner breaks ties between indexes by it.
        for table in Base.metadata.sorted_tables:
            conn.execute(sa.schema.CreateTable(table))
            for index in sorted(table.indexes, key=lambda index: str(index.name)):
                conn.execute(sa.schema.CreateIndex(index))
        # A key that closes a circle of tables (`use_alter`) comes once both tables are there;
        # SQLite, which cannot add one later, made it with its table. (Left in the models: by
        # default AddConstraint drops it from every later CREATE TABLE, SQLite's too.)
        if conn.dialect.supports_alter:
            for table in Base.metadata.sorted_tables:
                for key in sorted(table.foreign_key_constraints, key=lambda key: str(key.name)):
                    if key.use_alter:
                        conn.execute(sa.schema.AddConstraint(key, isolate_from_table=False))
        _VERSION_TABLE.create(conn, checkfirst=False)
        conn.execute(_VERSION_TABLE.insert().values(version_num=SCHEMA_HEAD))


def newer_schema(revision: str | None) -> bool:
    """Whether `revision` comes after this lorelab's newest (revisions are numbered 0001...)."""
    return revision is not None and revision.isdigit() and revision > SCHEMA_HEAD


def ensure_schema(engine: Engine) -> None:
    """Create the schema in an empty database; refuse to run on an outdated one."""
    current = current_revision(engine)
    if current == SCHEMA_HEAD:
        return
    if current is None and not sa.inspect(engine).get_table_names():
        create_schema(engine)
        return
    if newer_schema(current):
        raise SchemaError(
            f"the database at {engine.url.render_as_string(hide_password=True)} has schema "
            f"{current}, made by a newer lorelab (this one knows up to {SCHEMA_HEAD}): use "
            "that lorelab, or another database")
    raise SchemaError(
        f"the database at {engine.url.render_as_string(hide_password=True)} has schema "
        f"{current or 'unknown (not made by lorelab?)'}, this lorelab needs {SCHEMA_HEAD}: "
        "run `lorelab db upgrade`"
    )


class Database:
    """One engine and its session factory."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on any error."""
        with self._sessions() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def optimize(self) -> None:
        """Refresh the query planner's statistics (ANALYZE), for plans that stay on the indexes
        as the tables grow: without statistics SQLite took a thread's messages by `kind`.

        On SQLite each index is sampled (`analysis_limit`), so the cost does not grow with the
        archive; PostgreSQL samples on its own."""
        with self.engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql(f"PRAGMA analysis_limit={SQLITE_ANALYSIS_LIMIT}")
                conn.exec_driver_sql("ANALYZE")
            else:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
            conn.commit()

    def dispose(self) -> None:
        self.engine.dispose()


def open_database(url: str) -> Database:
    """The database at `url`, its schema made if it is empty (SchemaError if outdated)."""
    db = Database(url)
    ensure_schema(db.engine)
    return db
