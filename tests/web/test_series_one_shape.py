"""`/api/series` and `lorelab series list --json` give a series the same shape: one function
builds both (bot.series.views.series_views), with the latest run and its stages; the real
site under uvicorn, on SQLite and PostgreSQL, with runs, a failed apply and a reply."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from bot.db.session import Database
from bot.demo.threads import make_tree
from tests.cli import Lorelab
from tests.support.web_data import WebData, populate, web_settings
from tests.support.web_server import serving


@pytest.fixture
def data(db: Database, tmp_path: Path) -> WebData:
    return populate(db, make_tree(tmp_path / "linux"))


def test_the_api_and_the_command_line_list_series_in_one_shape(
        db: Database, db_url: str, data: WebData, tmp_path: Path) -> None:
    listed = Lorelab(tmp_path, db_url).json("series", "list")
    with serving(web_settings(db.url)) as site:
        served = requests.get(f"{site}/api/series", timeout=10).json()
    assert served == listed
    regressed = next(s for s in listed if s["id"] == data.regressed)
    assert regressed["author"]["email"] and [v["version"] for v in regressed["versions"]] == [1, 2]
    assert regressed["run_id"] == data.review_run
    assert {s["name"]: s["state"] for s in regressed["stages"]}["reply"] == "pending-approval"
    conflicted = next(s for s in listed if s["id"] == data.conflicted)
    assert {s["name"]: s["state"] for s in conflicted["stages"]}["apply"] == "failed"
