"""The starter file `lorelab init` writes names every setting the loader knows, and loads."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from bot import config
from tests.cli import Lorelab


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


def section_classes() -> dict[str, type]:
    """{section: its settings class} for every section `config.Settings` has, as it is now
    (a section or a key added later is checked without touching this test)."""
    hints = typing.get_type_hints(config.Settings)
    found = {}
    for f in dataclasses.fields(config.Settings):
        hint = hints[f.name]
        kind = typing.get_args(hint)[0] if typing.get_origin(hint) is list else hint
        if dataclasses.is_dataclass(kind):
            found[f.name] = kind
    return found


def test_every_section_of_the_settings_is_one_the_loader_reads() -> None:
    assert set(section_classes()) == {*config._SECTIONS, *config._ARRAYS}


def test_lorelab_init_writes_every_setting(tmp_path: Path) -> None:
    target = tmp_path / "lorelab.toml"
    Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}").run("init", str(target))
    named = named_keys(target.read_text())
    classes = section_classes()
    missing = {section: sorted(f.name for f in dataclasses.fields(kind)
                               if f.name not in named.get(section, set()))
               for section, kind in classes.items()}
    assert {s: m for s, m in missing.items() if m} == {}
    unknown = {s: sorted(keys - {f.name for f in dataclasses.fields(classes[s])})
               for s, keys in named.items()}
    assert {s: k for s, k in unknown.items() if k} == {}


def uncommented(text: str) -> str:
    """The starter file with every commented-out table and setting switched on (a setting that
    is on already in its table keeps its value; so does the first of two commented ones)."""
    tables: list[list[str]] = [[]]
    for line in text.splitlines():
        header = re.match(r"^#?\s*(\[\[?\w+\]\]?)\s*$", line)
        if header:
            tables.append([header[1]])
        else:
            tables[-1].append(line)
    out = []
    for table in tables:
        on = {m[1] for line in table if (m := re.match(r"^(\w+)\s*=", line))}
        for line in table:
            key = re.match(r"^#\s*(\w+)\s*=", line)
            if key and key[1] not in on:
                line = line.lstrip("# ")
                on.add(key[1])
            out.append(line)
    return "\n".join(out) + "\n"


def test_each_commented_setting_can_be_switched_on_as_written(tmp_path: Path) -> None:
    """What the starter file shows for a setting is a value the loader takes."""
    path = tmp_path / "all.toml"
    path.write_text(uncommented(config.starter_config()))
    loaded = config.load_settings(path, env={})
    assert loaded.lab_hosts and loaded.trees and loaded.sources and loaded.suites


def test_the_starter_file_loads_as_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config.starter_config())
    loaded = config.load_settings(path, env={})
    defaults = config.Settings()
    for section in config._SECTIONS:
        assert getattr(loaded, section) == getattr(defaults, section), section
