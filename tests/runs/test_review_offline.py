"""`lorelab review MSGID` for a message that is not stored, with no archive to fetch it from
(none configured, or none reachable): one line at once, naming `[ingest] lore_url`."""

from __future__ import annotations

from pathlib import Path

from tests.cli import Lorelab

NOWHERE = "https://lore.lorelab-test.invalid/all"  # .invalid never resolves (RFC 6761)


def test_no_archive_configured(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    proc = lorelab.run("review", "q1@example.org", check=False, LORELAB_INGEST_LORE_URL="")
    err = proc.stderr.decode()
    assert proc.returncode == 66, err
    assert err.startswith("lorelab: <q1@example.org> is not stored here, and no archive is "
                          "configured to fetch it from: set [ingest] lore_url")
    assert len(err.splitlines()) == 1


def test_no_archive_reachable(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    proc = lorelab.run("review", "<q1@example.org>", check=False,
                       LORELAB_INGEST_LORE_URL=NOWHERE)
    err = proc.stderr.decode()
    assert proc.returncode == 75, err
    assert err.startswith("lorelab: <q1@example.org> is not stored here, and cannot reach "
                          "lore.lorelab-test.invalid: name does not resolve (no network?)")
    assert "[ingest] lore_url" in err and len(err.splitlines()) == 1
