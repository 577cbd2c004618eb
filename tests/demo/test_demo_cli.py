"""`lorelab demo`, the README's main-job command: a whole review on the embedded default."""

from __future__ import annotations

import mailbox
from pathlib import Path

import pytest

from tests.cli import Lorelab

pytestmark = pytest.mark.slow  # end to end: CI, not the fast loop


def test_demo_reviews_the_series_end_to_end_and_leaves_the_reply_in_the_outbox(tmp_path: Path):
    lorelab = Lorelab(tmp_path, "")
    data = tmp_path / "data"
    proc = lorelab.run("demo", "--json", check=False, LORELAB_DATA_DIR=str(data))
    assert proc.returncode == 0, proc.stderr.decode()  # the demo succeeded, whatever it found
    import json

    result = json.loads(proc.stdout)
    assert result["ingest"]["stored"] == 3 and result["seeds"]["read"] == 3
    assert [s["name"] for s in result["steps"]] == [
        "apply", "build-base", "build-patched", "bench", "report"]
    assert all(s["state"] == "done" for s in result["steps"]), result["steps"]
    # The batching series makes the simulator faster; on a loaded machine the rule may
    # still be undecided, but it must never call it a regression.
    assert result["verdict"] in ("improvement", "no change", "inconclusive")
    reply = result["reply"]
    assert reply.startswith("From: lorelab") or "\nFrom: lorelab" in reply
    assert "reclaim-sim.throughput" in reply and "b4 am " in reply
    assert "In-Reply-To:" in reply and "batch reclaim event counter updates" in reply
    assert result["reply_state"] == "queued"

    # The same run is what the maintainer CLI shows, from the database the demo names.
    shown = Lorelab(tmp_path, result["database"]).json("runs", "show", str(result["run"]))
    assert shown["state"] == "done" and shown["kind"] == "review"
    assert shown["outcome"] == result["verdict"]  # what the demo printed, decided in one place

    # Delivery in the embedded default writes the reply to the outbox maildir.
    sent = Lorelab(tmp_path, result["database"]).json(
        "outbox", "send", LORELAB_DATA_DIR=str(data))
    assert sent["sent"], sent
    (message,) = list(mailbox.Maildir(data / "outbox", create=False))
    assert message["In-Reply-To"].strip("<>").endswith("@example.org")

    # Run again: a fresh database and tree each time, the same series.
    again = lorelab.json("demo", check=False, LORELAB_DATA_DIR=str(data))
    assert again["title"] == result["title"] and again["run"] == 1
