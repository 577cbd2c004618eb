"""`lorelab review` as a new user reads it: a tree named as `apply` names it, a suppressed
reply that says why and can be let go once the setting is fixed, and steps after a failed
apply shown as skipped. The main job on the stand-in tree, as in tests/runs/test_review.py."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.runs.test_review import BENCH, Review
from tests.support.gitrepo import git

pytestmark = [
    pytest.mark.slow,
    pytest.mark.sqlite_only,  # the stages' SQL is tested on both in their own tests
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

NO_LIST = "no configured list in its Cc (linux-mm@kvack.org)"


def test_a_reply_to_an_unconfigured_list_says_why_and_goes_once_the_list_is_added(
        tmp_path, monkeypatch):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    # Mail saved without its List-Id (as `git send-email` writes it): the list is known only
    # by its address in To, which no [[lists]] table names yet.
    review.mbox.write_bytes(re.sub(rb"(?m)^List-Id: .*\n", b"", review.mbox.read_bytes()))
    with review.config.open("a") as config:
        config.write(f'\n[[trees]]\nname = "mm"\npath = "{review.tree}"\n')
    monkeypatch.chdir(review.tree)  # a kernel tree: "mm" is also a directory here
    proc = review.cli.run("review", str(review.mbox), "--tree", "mm", "--bench", BENCH,
                          check=False)
    text = proc.stdout.decode()
    assert proc.returncode in (0, 10, 15), proc.stderr.decode()
    assert f"this reply is suppressed: {NO_LIST}" in text
    [row] = review.cli.json("outbox", "list")
    assert row["state"] == "suppressed" and row["reason"].startswith(NO_LIST)
    assert row["lists"] == [] and "linux-mm@kvack.org" in row["recipients"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", row["created_at"])
    # Piped, the table keeps each reason on one line, whatever its length.
    listed = review.cli.run("outbox", "list").stdout.decode()
    assert any(NO_LIST in line and "suppressed" in line for line in listed.splitlines())
    for action in ("retry", "approve"):
        refused = review.cli.run("outbox", action, str(row["id"]), check=False)
        assert refused.returncode == 1 and b"still suppressed: no configured list" in \
            refused.stderr
    with review.config.open("a") as config:
        config.write('\n[[lists]]\nname = "linux-mm"\naddress = "linux-mm@kvack.org"\n')
    retried = review.cli.run("outbox", "retry", str(row["id"])).stdout.decode()
    assert "now queued" in retried
    [row] = review.cli.json("outbox", "list")
    assert (row["state"], row["reason"], row["lists"]) == ("queued", None,
                                                           ["linux-mm@kvack.org"])
    # The verdict's figures in plain notation (`bench` printed 1.52088e+07).
    analyzed = review.cli.run("analyze", "1").stdout.decode()
    assert "reclaim-sim.throughput" in analyzed and not re.search(r"\de[+-]\d", analyzed)


def test_steps_after_a_failed_apply_show_as_skipped(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    vmscan = review.tree / "mm/vmscan.c"
    vmscan.write_text(vmscan.read_text().replace("#define VM_EVENT_BATCH\t\t1",
                                                 "#define VM_EVENT_BATCH\t\t8"))
    git(review.tree, "commit", "-q", "-am", "mm/vmscan: batch by 8")
    proc = review.cli.run("review", str(review.mbox), "--tree", str(review.tree), "--bench",
                          BENCH, "--base", "master", check=False)
    assert proc.returncode == 12, proc.stderr.decode()
    lines = proc.stdout.decode().splitlines()
    said = lines + proc.stderr.decode().splitlines()  # logged warnings go to stderr
    assert "apply: failed" in lines and "report: done" in lines
    for step in ("build-base", "build-patched", "bench"):
        assert f"{step}: skipped (apply failed)" in lines
        assert f"{step}: running" not in lines and f"{step}: failed" not in lines
        # Only the skipped line: not also "run 1: build-base failed: not built: ...".
        assert not [line for line in said if f"{step} failed" in line], said
    shown = review.cli.run("runs", "show", "1").stdout.decode().splitlines()
    assert "  build-base: skipped (apply failed)" in shown
    assert "  bench: skipped (apply failed)" in shown
    [run] = review.cli.json("runs", "list")
    assert [s["skipped_for"] for s in run["steps"]] == [None, "apply", "apply", "apply", None]
