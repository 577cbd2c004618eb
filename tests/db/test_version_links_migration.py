"""Migration 0012 on a database with series in it: the versions' title keys are computed from
their titles, and a later version of the same author and title, sent in a thread of its own,
still joins its series (assembly finds it through the new index)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import SeriesVersion
from bot.db.session import Database, downgrade, upgrade
from bot.demo.threads import SeriesSpec, make_series, make_tree
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest

pytestmark = pytest.mark.empty_database

TITLE = "mm/vmscan: Keep THE inactive list long enough"


def _store(db: Database, mails: list[bytes]) -> None:
    ingest(db, [RawMail(m, "test") for m in mails],
           settings=IngestSettings(batch_size=50, parse_workers=0), list_name="linux-mm")


def test_title_keys_are_filled_and_a_later_version_finds_its_series(
    db_url: str, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "linux")
    v1 = SeriesSpec(title=TITLE, patches=2)
    v2 = SeriesSpec(title=TITLE, patches=2, version=2, same_changes_as=v1, revised=(1,))
    engine = sa.create_engine(db_url)
    upgrade(engine)
    db = Database(db_url)
    _store(db, make_series(tree, v1))
    # The database as lorelab before 0012 left it: no title keys on versions.
    downgrade(engine, "0011")
    upgrade(engine)
    with engine.connect() as conn:
        keys = conn.execute(sa.select(SeriesVersion.title_key)).scalars().all()
    assert keys == ["mm vmscan keep the inactive list long enough"]

    _store(db, make_series(tree, v2))
    with db.session() as session:
        versions = session.scalars(sa.select(SeriesVersion).order_by(SeriesVersion.version)).all()
        assert [v.version for v in versions] == [1, 2]
        assert versions[0].series_id == versions[1].series_id
    db.dispose()
    engine.dispose()
