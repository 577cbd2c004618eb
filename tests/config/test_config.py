"""Settings from a TOML file and LORELAB_* variables, and `lorelab init`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_settings
from tests.cli import Lorelab


def test_embedded_default_needs_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("LORELAB_CONFIG", raising=False)
    settings = load_settings()
    assert settings.source is None
    assert settings.database.resolved_url() == f"sqlite:///{tmp_path / 'lorelab.db'}"


def test_file_then_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "lorelab.toml"
    cfg.write_text(
        '[database]\nurl = "postgresql+psycopg://db/lorelab"\n'
        "[ingest]\nbatch_size = 100\n"
        '[[lists]]\nname = "linux-mm"\naddress = "linux-mm@kvack.org"\n'
    )
    settings = load_settings(cfg, env={"LORELAB_INGEST_BATCH_SIZE": "7"})
    assert settings.database.url == "postgresql+psycopg://db/lorelab"
    assert settings.ingest.batch_size == 7
    assert settings.lists[0].address == "linux-mm@kvack.org"
    env_only = load_settings(env={"LORELAB_CONFIG": str(cfg)})
    assert env_only.ingest.batch_size == 100


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[database\n", {}, "not valid TOML"),
        ("[ingest]\nbatchsize = 3\n", {}, "[ingest] batchsize: unknown setting"),
        ("[ingest]\nbatch_size = 'many'\n", {}, "expected a whole number"),
        ("[smtp]\n", {}, "unknown section [smtp]"),
        ("", {"LORELAB_INGEST_BATCH_SIZE": "lots"}, "LORELAB_INGEST_BATCH_SIZE = 'lots'"),
    ],
)
def test_bad_config_says_what_to_fix(tmp_path: Path, text: str, env: dict, message: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, env=env)
    assert message in str(err.value)


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lorelab init"):
        load_settings(tmp_path / "nope.toml", env={})


def test_init_writes_a_starter_that_loads(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    target = tmp_path / "conf" / "lorelab.toml"
    lorelab.run("init", str(target))
    assert "[database]" in target.read_text()
    assert load_settings(target, env={}).ingest.batch_size == 2000
    again = lorelab.run("init", str(target), check=False)
    assert again.returncode == 1 and b"--force" in again.stderr
    bad = lorelab.run("series", "list", LORELAB_CONFIG=str(tmp_path / "missing.toml"), check=False)
    assert bad.returncode == 78 and b"lorelab init" in bad.stderr
