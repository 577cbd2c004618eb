"""`lorelab serve` right after `lorelab demo`, as a new user types them: the site shows the
demo's run (the real `lorelab serve` process and its HTTP API), and the demo says so."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.cli import Lorelab
from tests.support.web_server import free_port

pytestmark = [
    pytest.mark.slow,  # the demo reviews a series end to end
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="the demo builds its stand-in tree with make and gcc"),
]


def served(env: dict[str, str]) -> tuple[str, list[dict]]:
    """What `lorelab serve` says first on stderr, and its /api/series."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", "from bot.cli import main; main()", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        said = server.stderr.readline().decode()  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while True:
            try:
                return said, requests.get(f"http://127.0.0.1:{port}/api/series", timeout=5).json()
            except requests.ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, "serve ended"
                time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_after_the_demo_shows_the_demos_run(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, "")  # no config file, no database URL: a fresh user
    del lorelab.env["LORELAB_DATABASE_URL"]
    demo = lorelab.run("demo").stdout.decode()
    assert "`lorelab serve` shows it" in demo
    # what it suggests reads the demo's database, not the user's (empty) one
    assert re.search(r"`lorelab -c \S+config.toml outbox list` shows it", demo), demo
    said, series = served(lorelab.env)
    assert "serving the demo's (sqlite:///" in said and "demo.db" in said, said
    assert [s["title"] for s in series] == ["mm/vmscan: batch reclaim event counter updates"]
    assert series[0]["run_state"] == "done"
    # A command that only reads makes the user's database, empty: still the demo's is served.
    lorelab.run("outbox", "list")
    said, series = served(lorelab.env)
    assert "serving the demo's" in said and len(series) == 1, said
    # Once the user has stored mail of their own, that is what is served.
    mail = tmp_path / "one.mbox"
    mail.write_bytes(b"From ada@example.org Mon Nov 30 10:00:00 2026\nFrom: Ada <ada@example.org>\n"
                     b"Subject: [PATCH] mm: one\nMessage-ID: <one@example.org>\n"
                     b"Date: Mon, 30 Nov 2026 10:00:00 +0000\n\nOne line.\n---\n"
                     b"diff --git a/mm/a.c b/mm/a.c\n--- a/mm/a.c\n+++ b/mm/a.c\n"
                     b"@@ -1 +1 @@\n-int a;\n+int b;\n")
    lorelab.run("ingest", "mbox", str(mail))
    said, series = served(lorelab.env)
    assert "demo" not in said and [s["title"] for s in series] == ["mm: one"], (said, series)
