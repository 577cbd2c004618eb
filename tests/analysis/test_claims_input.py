"""`lorelab claims FILE` as a user meets it: a file that is not text mail says so and fails, and
what it prints into a pipe keeps each line whole."""

from __future__ import annotations

import random
from pathlib import Path

from tests.cli import Lorelab
from tests.support.paths import REPO


def test_a_binary_file_is_not_text_mail(tmp_path: Path) -> None:
    binary = tmp_path / "binary.bin"
    binary.write_bytes(random.Random(17).randbytes(3000))
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    proc = lorelab.run("claims", str(binary), check=False)
    assert proc.returncode == 65, proc  # EX_DATAERR
    assert b"No performance claims found" not in proc.stdout
    assert proc.stderr.decode() == f"lorelab: {binary}: not text mail (binary data)\n"
    proc = lorelab.run("claims", str(binary), "--json", check=False)
    assert proc.returncode == 65 and proc.stdout == b""


def test_claims_piped_keep_each_line_whole(tmp_path: Path) -> None:
    """Into a pipe nothing is wrapped at 80 columns: the heading, the judgement and each table
    row stay on their lines, however long (tests/series/test_piped_listing.py: the same rule)."""
    seed = REPO / "bot" / "demo" / "seeds" / "vmscan-bailout-hackbench-reply.txt"
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    out = lorelab.run("claims", str(seed), COLUMNS="80").stdout.decode()
    lines = out.splitlines()
    assert any(line.endswith("10 runs, stated on line 19") for line in lines), out
    assert any("bail-out 125: could not tell: between -0.41% and +6.63%; bail-out 130: could "
               "not tell: between -2.91% and +3.45%; bail-out 135: could not tell" in line
               for line in lines), out
    rows = [line for line in lines if line.startswith("│bail-out")]
    assert len(rows) == 3 and all("could not tell: between" in row for row in rows), out
