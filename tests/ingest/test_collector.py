"""The garbage collector around storing (bot/ingest/collector.py): a long-running process (`lorelab
run`, the delivery agent) stores batch after batch, and must get its collector back as it was
after each, even when storing fails."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from bot.config import IngestSettings
from bot.db.session import open_database
from bot.ingest.collector import STORE_GC_THRESHOLD, frozen_heap
from bot.ingest.sources import MboxFile
from bot.ingest.store import ingest
from tests.ingest.test_mbox_slices import mbox


def test_storing_gives_the_collector_back_as_it_was(tmp_path: Path) -> None:
    before = gc.get_threshold(), gc.get_freeze_count()
    db = open_database(f"sqlite:///{tmp_path / 'lorelab.db'}")
    summary = ingest(db, MboxFile(mbox(tmp_path / "list.mbox")),
                     settings=IngestSettings(batch_size=2, parse_workers=2))  # fmt: skip
    db.dispose()
    assert summary.stored == 6
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_failure_while_storing_gives_the_collector_back_too() -> None:
    before = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(RuntimeError), frozen_heap():
        assert gc.get_threshold()[0] == STORE_GC_THRESHOLD
        raise RuntimeError("the database went away")
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
