"""`lorelab review https://HOST/LIST/MSGID/` when HOST cannot be reached: the same one line and
exit status 75 (temporary: README.md's exit codes) as `review MSGID` with no archive reachable."""

from __future__ import annotations

from pathlib import Path

from tests.cli import Lorelab

# .invalid never resolves (RFC 6761): the same answer as a machine without a network.
URL = "https://lore.lorelab-test.invalid/linux-mm/foo@bar/"


def test_a_lore_url_whose_host_does_not_resolve(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    proc = lorelab.run("review", URL, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 75, err
    assert err.startswith("lorelab: cannot reach lore.lorelab-test.invalid: name does not "
                          "resolve (no network?)"), err
    assert len(err.splitlines()) == 1, err
