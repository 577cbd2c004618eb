"""Migration 0014 on a database that holds trailers stored under the old rule: those a reply
gave in another person's name are removed, the sender's own are kept."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import Patch, Trailer
from bot.db.session import Database, downgrade, upgrade
from bot.demo.threads import SeriesSpec, make_reply, make_series, make_tree
from tests.series.mailing import msgs_id, only_series, store

pytestmark = pytest.mark.empty_database


def test_trailers_given_in_another_name_are_removed(db_url: str, tmp_path) -> None:
    engine = sa.create_engine(db_url)
    upgrade(engine)
    db = Database(db_url)
    spec = SeriesSpec(title="mm: old trailers", patches=1)
    msgs = make_series(make_tree(tmp_path / "linux"), spec)
    forged = make_reply(msgs[0], author=("Rita Reviewer", "rita@example.org"), body="Ok.",
                        trailers=["Reviewed-by: Linus Torvalds <torvalds@linux-foundation.org>"])
    own = make_reply(msgs[0], author=("Rita Reviewer", "rita@example.org"), body="Ok.",
                     trailers=["Tested-by: Rita Reviewer <rita+lkml@example.org>"])
    store(db, msgs + [forged, own], IngestSettings(parse_workers=0))
    # The rows lorelab before 0014 stored: the forged trailer among them.
    downgrade(engine, "0013")
    with engine.begin() as conn:
        patch_id = conn.scalar(sa.select(Patch.id))
        conn.execute(sa.delete(Trailer))
        conn.execute(sa.insert(Trailer), [
            {"patch_id": patch_id, "name": "Reviewed-by", "origin": "reply",
             "value": "Linus Torvalds <torvalds@linux-foundation.org>",
             "source_msgid": msgs_id(forged)},
            {"patch_id": patch_id, "name": "Tested-by", "origin": "reply",
             "value": "Rita Reviewer <rita+lkml@example.org>", "source_msgid": msgs_id(own)},
        ])
    upgrade(engine)
    (patch,) = only_series(db)["versions"][0]["patches"]
    given = [(t["name"], t["value"]) for t in patch["trailers"] if t["origin"] != "own"]
    assert given == [("Tested-by", "Rita Reviewer <rita+lkml@example.org>")]
    db.dispose()
    engine.dispose()
