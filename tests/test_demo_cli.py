"""`lorelab demo`, the README's main-job command, on the embedded default."""

from __future__ import annotations

from pathlib import Path

from tests.cli import Lorelab


def test_demo_ingests_a_two_version_series_and_the_seeds(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, "")
    env = {"LORELAB_DATA_DIR": str(tmp_path / "data")}
    result = lorelab.json("demo", **env)
    assert result["ingest"]["quarantined"] == 2
    assert result["kinds"]["inline-diff"] == 1  # the lru_gen seed reply
    (series,) = result["series"]
    assert [(v["version"], v["complete"]) for v in series["versions"]] == [(1, True), (2, True)]
    # Run again: a fresh database each time, the same answer.
    assert lorelab.json("demo", **env)["series"][0]["title"] == series["title"]
    human = lorelab.run("demo", **env).stdout.decode()
    assert "v2 3/3 complete" in human and "lorelab claims FILE" in human
