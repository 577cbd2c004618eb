"""The starter file `lorelab init` writes names every setting the loader knows, and loads."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from bot import config


def named_keys(text: str) -> dict[str, set[str]]:
    """{section: keys} of every `key =` line, commented out or not, under each [section]."""
    found: dict[str, set[str]] = {}
    section = None
    for line in text.splitlines():
        header = re.match(r"^#?\s*\[\[?(\w+)\]\]?\s*$", line)
        if header:
            section = header[1]
            continue
        key = re.match(r"^#?\s*(\w+)\s*=", line)
        if key and section:
            found.setdefault(section, set()).add(key[1])
    return found


def test_the_starter_file_names_every_setting() -> None:
    named = named_keys(config.starter_config())
    missing = {
        section: sorted(f.name for f in dataclasses.fields(kind)
                        if f.name not in named.get(section, set()))
        for section, kind in {**config._SECTIONS, **config._ARRAYS}.items()
    }
    assert {s: m for s, m in missing.items() if m} == {}
    unknown = {s: sorted(keys - {f.name for f in dataclasses.fields(
        {**config._SECTIONS, **config._ARRAYS}[s])}) for s, keys in named.items()}
    assert {s: k for s, k in unknown.items() if k} == {}


def test_the_starter_file_loads_as_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config.starter_config())
    loaded = config.load_settings(path, env={})
    defaults = config.Settings()
    for section in config._SECTIONS:
        assert getattr(loaded, section) == getattr(defaults, section), section
