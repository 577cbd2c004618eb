"""The JSON API under a seeded schemathesis run: no request, however odd, gets a server error.

schemathesis reads the app's own /openapi.json and generates requests for every operation:
values that fit the schema (positive) and values that do not (negative). They go over HTTP to
the real app, served by uvicorn, on a real database holding real data (series ingested from git
threads, runs, a campaign, a reply), with the admin token, so that the admin POSTs reach the
database too. The run is seeded and short: the same few hundred requests every time.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis.generation.modes import GenerationMode

from bot.db.session import Database
from bot.demo.threads import make_tree
from bot.web.app import MAX_ID
from tests.support.web_data import ADMIN_TOKEN, populate, web_settings
from tests.support.web_server import serving

SEED = 20261201
CASES = {GenerationMode.POSITIVE: 25, GenerationMode.NEGATIVE: 20}  # per operation
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def answers(base: str, operation: Any, mode: GenerationMode) -> list[tuple[int, str]]:
    """Each generated request's status and what it was, for CASES[mode] requests."""
    out = []

    @seed(SEED)
    @settings(max_examples=CASES[mode], database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case: schemathesis.Case) -> None:
        response = case.call(base_url=base, headers=AUTH, timeout=30)
        out.append((response.status_code, f"{mode.value}: {case.method} "
                                          f"{case.formatted_path} query={case.query}"))

    send()
    return out


def fuzz(base: str) -> tuple[int, list[str], dict[int, int]]:
    """Every operation of the schema, CASES of each mode: (requests sent, the 5xx among them
    described, how many got each status)."""
    schema = schemathesis.openapi.from_url(base + "/openapi.json")
    sent = [answer for result in schema.get_all_operations() for mode in CASES
            # an operation without parameters has nothing to get wrong (GET /api/hosts)
            if mode is GenerationMode.POSITIVE or list(result.ok().iter_parameters())
            for answer in answers(base, result.ok(), mode)]
    errors = [f"{what} -> {status}" for status, what in sent if status >= 500]
    return len(sent), errors, dict(Counter(status for status, _ in sent))


def test_a_seeded_schemathesis_run_finds_no_server_error(db: Database, tmp_path: Path):
    populate(db, make_tree(tmp_path / "linux"))
    with serving(web_settings(db.url)) as base:
        sent, errors, statuses = fuzz(base)
    assert errors == [], f"{len(errors)} server errors in {sent} requests:\n" + "\n".join(
        errors[:20])
    assert sent >= 250  # the run was not cut short
    # It reached the data, not only the validation: rows found, and ids that are not there.
    assert statuses.get(200, 0) >= 20 and statuses.get(404, 0) >= 20, statuses
    assert statuses.get(422, 0) >= 20, statuses  # and bad values were refused, not served


# Each id a database cannot hold, or that is no id at all, and the words that name what is wrong.
BAD_IDS = {2**64: "less than or equal to 2147483647", 2**31: "less than or equal to 2147483647",
           0: "greater than or equal to 1", -1: "greater than or equal to 1",
           "abc": "valid integer"}
GETS = ("/api/series/{}", "/api/runs/{}", "/api/campaigns/{}", "/series/{}", "/runs/{}",
        "/runs/{}/config", "/campaigns/{}")
POSTS = ("/api/runs/{}/retest", "/api/runs/{}/cancel", "/api/replies/{}/approve",
         "/runs/{}/retest", "/runs/{}/cancel", "/replies/{}/approve")
BAD_PAGING = ({"offset": 2**64}, {"offset": 2**31}, {"offset": -1}, {"offset": "x"},
              {"limit": 10**30}, {"limit": 0}, {"limit": "1e3"})


def test_ids_and_offsets_out_of_range_get_a_clear_422_not_a_server_error(db: Database,
                                                                         tmp_path: Path):
    data = populate(db, make_tree(tmp_path / "linux"))
    with serving(web_settings(db.url)) as base:
        for path in GETS + POSTS:
            for bad, words in BAD_IDS.items():
                url = base + path.format(bad)
                got = requests.post(url, headers=AUTH, data={"token": ADMIN_TOKEN}, timeout=10,
                                    allow_redirects=False) if path in POSTS else \
                    requests.get(url, timeout=10)
                assert got.status_code == 422, (url, got.status_code, got.text[-300:])
                assert words in got.text, (url, got.text[-300:])
            # the largest id that fits is looked up, and is not there
            assert requests.get(base + path.format(MAX_ID), timeout=10).status_code in (
                404, 405), path
        for page in ("/api/series", "/"):
            for query in BAD_PAGING:
                got = requests.get(base + page, params=query, timeout=10)
                assert got.status_code == 422, (page, query, got.status_code, got.text[-300:])
                assert next(iter(query)) in got.text
            last = requests.get(base + "/api/series", params={"offset": MAX_ID}, timeout=10)
            assert last.status_code == 200 and last.json() == []
        # nothing was changed by any of it
        detail = requests.get(f"{base}/api/series/{data.regressed}", timeout=10).json()
        assert detail["replies"][0]["state"] == "pending-approval" and len(detail["runs"]) == 2


def test_a_nul_in_a_filter_gets_a_clear_422(db: Database, tmp_path: Path):
    populate(db, make_tree(tmp_path / "linux"))
    with serving(web_settings(db.url)) as base:
        for page in ("/api/series", "/"):
            for name in ("list", "state", "author"):
                got = requests.get(base + page, params={name: "linux\x00mm"}, timeout=10)
                assert got.status_code == 422, (page, name, got.status_code, got.text[-300:])
                assert "NUL character" in got.text and name in got.text
