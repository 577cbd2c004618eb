"""One time format in JSON: the web API writes times exactly as `lorelab ... --json` does.

The real app is served over real data (tests/support/web_data.py) and every value that is a
time, anywhere in the answers of the JSON endpoints, must match the CLI's format: ISO 8601 with
`T`, optional microseconds and the offset `+00:00` (never pydantic's `Z`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import requests

from bot.db.session import Database
from bot.demo.threads import make_tree
from tests.cli import Lorelab
from tests.support.web_data import populate, web_settings
from tests.support.web_server import serving

# The one format (README.md, "JSON shapes").
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00$")
LOOKS_LIKE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:")


def times(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Every (path, value) in a JSON document whose value is a date with a time."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in times(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in times(v, f"{where}[{i}]")]
    if isinstance(value, str) and LOOKS_LIKE_TIME.match(value):
        return [(where, value)]
    return []


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def test_every_api_time_has_the_cli_format(db: Database, tree: Path, tmp_path: Path) -> None:
    data = populate(db, tree)
    paths = [f"/api/runs/{data.review_run}", f"/api/campaigns/{data.campaign}", "/api/hosts",
             f"/api/series/{data.regressed}", "/api/series"]
    seen: dict[str, list[tuple[str, str]]] = {}
    with serving(web_settings(db.url)) as base:
        for path in paths:
            response = requests.get(base + path, timeout=10)
            assert response.status_code == 200, response.text
            seen[path] = times(response.json())
    cli = Lorelab(tmp_path / "home", db.url)
    seen["runs show --json"] = times(cli.json("runs", "show", str(data.review_run)))
    for where, found in seen.items():
        assert found, f"{where} has no time to check"
        wrong = [(path, value) for path, value in found if not ISO_TIME.match(value)]
        assert not wrong, f"{where}: {wrong[:5]}"
