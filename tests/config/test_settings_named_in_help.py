"""Help texts name settings as the config file spells them ("[[trees]]", "[commands]"), and
`--help` shows them so: help is plain text, never read as rich markup, which takes "[...]" for
a style and drops it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import Lorelab


@pytest.mark.parametrize(("command", "named"), [
    (("review",), ("a [[trees]] name, as `apply` takes", "the first [[trees]] entry",
                   "a [[lab_hosts]] name")),
    (("apply",), ("A configured [[trees]] name.",)),
    (("build",), ("A configured [[trees]] name.",)),
    (("bench",), ("A [[lab_hosts]] name",)),
    (("commands", "scan"), ("[commands] max_age_hours",)),
])
def test_help_shows_the_settings_it_names(tmp_path: Path, command: tuple[str, ...],
                                          named: tuple[str, ...]) -> None:
    cli = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    shown = " ".join(cli.run(*command, "--help").stdout.decode().split())  # unwrapped
    for text in named:
        assert text in shown
