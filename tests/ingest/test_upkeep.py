"""The planner's statistics are refreshed as ingest grows the archive (so plans made for an
empty database do not stay), and not for every small batch or delivery."""

from __future__ import annotations

import sqlalchemy as sa

from bot.db.models import Message, pack_mail
from bot.db.session import Database
from bot.ingest.upkeep import StatisticsUpkeep


def add_messages(db: Database, count: int, start: int) -> int:
    with db.session() as session:
        session.execute(sa.insert(Message), [
            {"msgid": f"m{n}@example.org", "kind": "reply", "raw": pack_mail(b"x"),
             "raw_size": 1} for n in range(start, start + count)
        ])
    return count


def has_statistics(db: Database) -> bool:
    with db.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            if not conn.exec_driver_sql(
                "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'"
            ).scalar():
                return False
            query = "SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'messages'"
        else:
            query = "SELECT count(*) FROM pg_stats WHERE tablename = 'messages'"
        return bool(conn.exec_driver_sql(query).scalar())


def test_statistics_are_refreshed_each_time_the_archive_doubles(db: Database) -> None:
    upkeep = StatisticsUpkeep(db, min_growth=4)
    upkeep.stored(add_messages(db, 3, 0))
    assert not has_statistics(db) and upkeep.refreshes == 0  # too few to bother
    upkeep.stored(add_messages(db, 2, 3))
    assert has_statistics(db) and upkeep.refreshes == 1  # from nothing to 5
    upkeep.stored(add_messages(db, 4, 5))
    assert upkeep.refreshes == 1  # 9 is not yet twice 5
    upkeep.stored(add_messages(db, 1, 9))
    assert upkeep.refreshes == 2
