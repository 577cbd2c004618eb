"""A setting lorelab cannot use stops every command at load with one line naming it (exit 78),
never with a traceback from the library that would have tripped over it later."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import Lorelab

EX_CONFIG = 78


def _one_line_error(proc) -> str:  # type: ignore[no-untyped-def]
    err = proc.stderr.decode()
    assert proc.returncode == EX_CONFIG, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("url", "what"),
    [
        ("mysql://x", "lorelab supports sqlite and postgresql, not mysql"),
        ("not a url", "not a database URL"),
        ("postgresql+psycopg2://db/lorelab", "driver psycopg2 is not installed"),
        ("sqlite:///{tmp}/nonexistent/dir/x.db", "directory {tmp}/nonexistent/dir does not exist"),
    ],
)
def test_a_database_url_lorelab_cannot_open_is_named(tmp_path: Path, url: str,
                                                     what: str) -> None:
    url, what = url.format(tmp=tmp_path), what.format(tmp=tmp_path)
    lorelab = Lorelab(tmp_path, "sqlite://")
    del lorelab.env["LORELAB_DATABASE_URL"]
    cfg = tmp_path / "lorelab.toml"
    cfg.write_text(f'[database]\nurl = "{url}"\n')
    err = _one_line_error(lorelab.run("-c", str(cfg), "series", "list", check=False))
    assert "[database] url" in err and what in err
    # The same value from the environment names the variable.
    err = _one_line_error(lorelab.run("series", "list", check=False, LORELAB_DATABASE_URL=url))
    assert "LORELAB_DATABASE_URL" in err and what in err
    assert not (tmp_path / "nonexistent").exists()


def test_the_default_data_directory_is_created(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, "")
    lorelab.run("series", "list", LORELAB_DATA_DIR=str(tmp_path / "fresh" / "data"))
    assert (tmp_path / "fresh" / "data" / "lorelab.db").is_file()


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("[web]\nport = 99999\n", "[web] port"),
        ("[web]\nport = 0\n", "[web] port"),
        ("[report]\nsmtp_port = -1\n", "[report] smtp_port"),
        ('[[lab_hosts]]\nname = "lab"\nrunner = "ssh"\naddress = "lab"\nport = 70000\n',
         "[[lab_hosts]] lab: port"),
        ('[report]\nmode = "smtp"\n', "[report] contact"),
        ('[ingest]\nlore_url = "lore.kernel.org/all"\n', "[ingest] lore_url"),
        ('[[sources]]\nkind = "lore"\nurl = "lore.kernel.org/linux-mm"\n', "[[sources]]"),
        ("[ingest]\nbatch_size = -5\n", "[ingest] batch_size = -5: must be 1 or more"),
        ("[follow_ups]\nbisect_boots = 2\n", "[follow_ups] bisect_boots"),
    ],
)
def test_a_value_lorelab_cannot_use_is_named(tmp_path: Path, text: str, name: str) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    cfg = tmp_path / "lorelab.toml"
    cfg.write_text(text)
    err = _one_line_error(lorelab.run("-c", str(cfg), "series", "list", check=False))
    assert name in err and str(cfg) in err


def test_serve_names_a_port_out_of_range_before_binding(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    cfg = tmp_path / "lorelab.toml"
    cfg.write_text("[web]\nport = 99999\n")
    err = _one_line_error(lorelab.run("-c", str(cfg), "serve", check=False))
    assert "[web] port = 99999: not a port number (1-65535)" in err


def test_a_negative_limit_is_refused_not_read_as_everything(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    for command in (("series", "list"), ("outbox", "list")):
        proc = lorelab.run(*command, "--limit", "-1", check=False)
        assert proc.returncode == 2 and "--limit" in proc.stderr.decode()
