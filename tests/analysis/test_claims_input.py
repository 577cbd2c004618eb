"""`lorelab claims FILE` on a file that is not text mail says so and fails."""

from __future__ import annotations

import random
from pathlib import Path

from tests.cli import Lorelab


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
