"""Input that cannot be read at all: one line saying what it is and what to do instead, and
an exit status that says it is permanent (66, EX_NOINPUT), not worth retrying (75)."""

from __future__ import annotations

from pathlib import Path

from tests.cli import Lorelab

EX_NOINPUT = 66


def test_a_missing_archive_is_no_input(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    proc = lorelab.run("ingest", "pi-git", str(tmp_path / "nonexistent"), check=False)
    err = proc.stderr.decode()
    assert proc.returncode == EX_NOINPUT, err
    assert err == f"lorelab: {tmp_path / 'nonexistent'}: no such directory\n"
    # A directory that is not an archive is as permanent; the error names what it takes.
    (tmp_path / "empty").mkdir()
    proc = lorelab.run("ingest", "pi-git", str(tmp_path / "empty"), check=False)
    assert proc.returncode == EX_NOINPUT
    assert proc.stderr.decode() == (
        f"lorelab: {tmp_path / 'empty'}: no public-inbox archive here; give a v2 inbox (the"
        " folder holding git/0.git), one epoch's git repository, or a v1 inbox's git"
        " repository\n")


def test_an_mbox_that_is_a_directory_points_to_maildir(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    (tmp_path / "mail").mkdir()
    proc = lorelab.run("ingest", "mbox", str(tmp_path / "mail"), check=False)
    assert proc.returncode == EX_NOINPUT
    assert proc.stderr.decode() == (f"lorelab: {tmp_path / 'mail'}: is a directory; for a "
                                    "maildir use `lorelab ingest maildir`\n")
    proc = lorelab.run("ingest", "mbox", str(tmp_path / "none.mbox"), check=False)
    assert proc.returncode == EX_NOINPUT and b"no such file" in proc.stderr
