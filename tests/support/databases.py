"""Test databases: empty ones, and copies of a template made once per test session.

Making the schema costs a PostgreSQL test database a few tenths of a second in-process (and
more when the first `lorelab` command of a test does it in a subprocess). So each backend gets
one template per session, given the latest schema with `ensure_schema` as a new database is
(from the models; tests/db/test_fresh_schema.py holds it equal to what the migrations make),
and every test gets its own copy: `CREATE DATABASE ... TEMPLATE` on
PostgreSQL, a file copy on SQLite. Template names carry the pytest-xdist worker and the process
id, so that concurrent sessions on one server never share (or drop) each other's templates.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import sqlalchemy as sa

from bot.db.session import Database, ensure_schema


def session_tag() -> str:
    """What makes this session's names unique: the xdist worker (if any) and the process."""
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{os.getpid()}"


def _admin_execute(admin: str | sa.Engine, statement: str) -> None:
    """Run `statement` on the server, outside a transaction (as CREATE/DROP DATABASE must)."""
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT") if isinstance(admin, str) \
        else admin
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(statement))
    finally:
        if engine is not admin:
            engine.dispose()


def pg_url(admin_url: str, name: str) -> str:
    return admin_url.rsplit("/", 1)[0] + "/" + name


def create_pg_database(admin_url: str, template: str | None = None, name: str | None = None,
                       admin: sa.Engine | None = None) -> str:
    """A new PostgreSQL database (empty, or a copy of `template`); its URL."""
    name = name or f"lorelab_test_{uuid.uuid4().hex[:12]}"
    source = f' TEMPLATE "{template}"' if template else ""
    _admin_execute(admin or admin_url, f'CREATE DATABASE "{name}"{source}')
    return pg_url(admin_url, name)


def drop_pg_database(admin_url: str, url: str, admin: sa.Engine | None = None) -> None:
    name = url.rsplit("/", 1)[1]
    _admin_execute(admin or admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate(url: str) -> None:
    """Bring the database at `url` to the latest schema, as the suite always did."""
    database = Database(url)
    try:
        ensure_schema(database.engine)
    finally:
        database.dispose()  # a template must have no connections left to be copied


def drop_stale_databases(admin_url: str) -> None:
    """Drop the templates and copies of sessions whose process is gone (killed before they
    cleaned up); the server is this machine's, so the pid in a name says whether its session
    lives."""
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            names = conn.scalars(sa.text(
                "SELECT datname FROM pg_database"
                " WHERE datname LIKE 'lorelab_template_%' OR datname LIKE 'lorelab_copy_%'")).all()
        for name in names:
            pid = name.rsplit("_", 1)[-1]
            if pid.isdigit() and (int(pid) == os.getpid() or not Path(f"/proc/{pid}").exists()):
                drop_pg_database(admin_url, pg_url(admin_url, name), engine)
    finally:
        engine.dispose()


DROP_BATCH = 16  # finished copies (8.8 MB each) a pytest-xdist worker keeps at most


class PostgresTemplate:
    """A PostgreSQL database migrated once; `copy()` hands out a new database made from it.

    The next copy is made in a background thread while a test runs. Databases done with are
    dropped on a thread of their own, `DROP_BATCH` at a time: dropping each right after its test,
    on the copies' thread, made every copy wait behind a drop, and a copy made just after a drop
    took 0.18-0.23 s instead of 0.04-0.06 s (PostgreSQL 15, the PostgreSQL tests under two
    pytest-xdist workers: 55 s of waiting for copies in all, 0.3 s since; the fast loop, four
    alternating pairs, 204-222 -> 185-189 s). Copies are named for their session, as templates
    are, so that those of a killed session are dropped by the next (`drop_stale_databases`).
    """

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.name = f"lorelab_template_{session_tag()}"
        drop_stale_databases(admin_url)
        self.url = create_pg_database(admin_url, name=self.name)
        try:
            migrate(self.url)
        except BaseException:
            drop_pg_database(admin_url, self.url)
            raise
        self._admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-template")
        self._dropping = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-drop")
        self._next: Future[str] | None = None
        self._done: list[str] = []  # databases tests are done with, not dropped yet

    def _make_copy(self) -> str:
        name = f"lorelab_copy_{uuid.uuid4().hex[:12]}_{session_tag()}"
        return create_pg_database(self.admin_url, template=self.name, name=name, admin=self._admin)

    def copy(self) -> str:
        """A new database at the latest schema; give it back with `drop(url)`."""
        # The first copy is made here, before anything runs in the background: two copies of one
        # template are never made at once.
        url = self._next.result() if self._next is not None else self._make_copy()
        self._next = self._background.submit(self._make_copy)
        return url

    def drop(self, url: str) -> None:
        self._done.append(url)
        if len(self._done) >= DROP_BATCH:
            self._drop_done()

    def _drop_done(self) -> None:
        done, self._done = self._done, []
        self._dropping.submit(self._drop_all, done)

    def _drop_all(self, urls: list[str]) -> None:
        for url in urls:
            drop_pg_database(self.admin_url, url, self._admin)

    def close(self) -> None:
        """Drop the spare copy and the template (after every pending drop)."""
        if self._next is not None:
            with contextlib.suppress(Exception):  # the spare was never made: nothing to drop
                self.drop(self._next.result())
        self._drop_done()
        self._background.shutdown(wait=True)
        self._dropping.shutdown(wait=True)
        self._admin.dispose()
        drop_pg_database(self.admin_url, self.url)


class SqliteTemplate:
    """A SQLite file migrated once; `copy(path)` puts a copy at `path`."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "lorelab.db"
        migrate(f"sqlite:///{self.path}")
        # The last connection closed checkpoints the WAL: the schema is all in the main file.
        assert not self.path.with_name(self.path.name + "-wal").exists()

    def copy(self, path: Path) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.path, path)
        return f"sqlite:///{path}"
