"""A store whose mail an older lorelab read is told to run `lorelab ingest reparse`, by
`db upgrade`, `db current`, `sources` and the commands that follow lists, until a reparse has
read it all again; a store this lorelab filled is never told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import RulesEdition
from bot.db.session import SCHEMA_HEAD, Database, downgrade, upgrade
from bot.demo.threads import SeriesSpec, as_mbox, make_series, make_tree
from bot.ingest.reparse import reparse
from bot.ingest.rules_edition import RULES_EDITION
from tests.cli import Lorelab
from tests.series.mailing import store
from tests.support.pi_server import PublicInbox, missing_reason

ADVICE = "`lorelab ingest reparse` reads the mail again"


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")
    return make_series(tree, SeriesSpec(title="mm: read by the rules of the day", patches=2))


def _current(lorelab: Lorelab) -> dict:
    return json.loads(lorelab.run("db", "current", "--json").stdout)


def _set_edition(db: Database, edition: int) -> None:
    with db.session() as session:
        session.execute(sa.update(RulesEdition).values(edition=edition))


@pytest.mark.empty_database
def test_an_upgraded_store_is_told_to_reparse_until_a_reparse_read_it_all(
    db_url: str, tmp_path: Path, series: list[bytes]
) -> None:
    engine = sa.create_engine(db_url)
    upgrade(engine)
    db = Database(db_url)
    store(db, series, IngestSettings(batch_size=50, parse_workers=0))
    downgrade(engine, "0016")  # the store as a lorelab before rules editions left it
    lorelab = Lorelab(tmp_path, db_url)

    upgraded = lorelab.run("db", "upgrade").stderr.decode()
    assert f"database schema at {SCHEMA_HEAD}" in upgraded
    assert "read by an older lorelab (rules edition 0" in upgraded and ADVICE in upgraded
    current = _current(lorelab)
    assert (current["rules_edition"], current["reparse_needed"]) == (0, True)
    assert current["rules_edition_head"] == RULES_EDITION
    assert ADVICE in lorelab.run("db", "current").stderr.decode()

    lorelab.run("ingest", "reparse")
    current = _current(lorelab)
    assert (current["rules_edition"], current["reparse_needed"]) == (RULES_EDITION, False)
    assert "note:" not in lorelab.run("db", "upgrade").stderr.decode()
    assert "note:" not in lorelab.run("db", "current").stderr.decode()
    db.dispose()
    engine.dispose()


@pytest.mark.empty_database
def test_an_empty_store_records_the_edition_of_its_first_mail(
    db_url: str, tmp_path: Path, series: list[bytes]
) -> None:
    engine = sa.create_engine(db_url)
    upgrade(engine, "0016")
    lorelab = Lorelab(tmp_path, db_url)
    assert "note:" not in lorelab.run("db", "upgrade").stderr.decode()  # no mail: nothing to read
    assert _current(lorelab)["rules_edition"] is None

    mbox = tmp_path / "series.mbox"
    mbox.write_bytes(as_mbox(series))
    lorelab.run("ingest", "mbox", str(mbox), "--list", "linux-mm")
    current = _current(lorelab)
    assert (current["rules_edition"], current["reparse_needed"]) == (RULES_EDITION, False)
    engine.dispose()


def test_mail_stored_later_keeps_the_older_edition_of_the_store(
    db: Database, series: list[bytes], ingest_settings: IngestSettings
) -> None:
    store(db, series[:1], ingest_settings)
    _set_edition(db, RULES_EDITION - 1)  # the cover letter was read by the edition before
    store(db, series[1:], ingest_settings)  # this lorelab reads the patches
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(RulesEdition.edition)).scalar_one() == RULES_EDITION - 1


def test_a_reparse_stopped_halfway_leaves_the_advice(
    db: Database, series: list[bytes], ingest_settings: IngestSettings
) -> None:
    store(db, series, ingest_settings)
    _set_edition(db, RULES_EDITION - 1)

    def stop(_summary: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reparse(db, batch_size=1, on_batch=stop)
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(RulesEdition.edition)).scalar_one() == RULES_EDITION - 1
    reparse(db, batch_size=1)
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(RulesEdition.edition)).scalar_one() == RULES_EDITION


@pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")
def test_following_an_archive_warns_of_a_store_read_by_the_edition_before(
    db_url: str, db: Database, tmp_path: Path, series: list[bytes],
    ingest_settings: IngestSettings,
) -> None:
    store(db, series[:1], ingest_settings)
    _set_edition(db, RULES_EDITION - 1)
    archive = PublicInbox(tmp_path / "pi")
    mbox = tmp_path / "series.mbox"
    mbox.write_bytes(as_mbox(series))
    archive.import_mbox(mbox)
    lorelab = Lorelab(tmp_path, db_url)

    walked = lorelab.run("ingest", "pi-git", str(archive.inbox), "--list", "linux-mm")
    said = walked.stderr.decode()
    assert f"read by an older lorelab (rules edition {RULES_EDITION - 1}" in said
    assert ADVICE in said
    assert ADVICE in lorelab.run("sources").stderr.decode()

    lorelab.run("ingest", "reparse")
    again = lorelab.run("ingest", "pi-git", str(archive.inbox), "--list", "linux-mm")
    assert "reparse" not in again.stderr.decode()
    assert "reparse" not in lorelab.run("sources").stderr.decode()
