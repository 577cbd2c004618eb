"""The agent a delivery leaves behind: `lorelab ingest stdin` run by a mail server, once per
mail, as `| lorelab ingest stdin` in a pipe transport. The first delivery stores its mail and
starts `lorelab deliver`; the next ones hand their mail to it (importing nothing of storing);
it exits after `[ingest] delivery_agent_idle` seconds without mail, and is used only from a
directory that is this user's alone. SQLite: what the agent stores goes through `ingest`,
tested on both databases in test_lmtp_agent.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.demo.threads import SeriesSpec, make_series, make_tree
from tests.cli import SHOW_MODULES, Lorelab
from tests.support.waiting import wait_for


@pytest.fixture
def runtime() -> Iterator[Path]:
    """$XDG_RUNTIME_DIR for the deliveries (short: a socket path has 108 bytes), and no agent
    left running after the test."""
    with tempfile.TemporaryDirectory(prefix="ll", dir="/tmp") as tmp:
        yield Path(tmp)
        for pid in _agents_in(Path(tmp)):  # listening, or still starting
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda pid=pid: not _alive(pid), what="the agent to stop")


def _agents_in(runtime: Path) -> list[int]:
    """The agents started with a socket in `runtime`, found by their command lines."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"deliver" in args and any(a.startswith(os.fsencode(runtime)) for a in args):
            found.append(int(cmdline.parent.name))
    return [pid for pid in found if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def lorelab(tmp_path: Path, runtime: Path) -> Lorelab:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    lorelab.env["XDG_RUNTIME_DIR"] = str(runtime)
    lorelab.run("db", "upgrade")
    return lorelab


@pytest.fixture(scope="module")
def mails(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")
    return make_series(tree, SeriesSpec(title="mm: delivered through a pipe", patches=4))


def deliver(lorelab: Lorelab, mail: bytes, idle: str) -> tuple[str, list[str]]:
    """One delivery as a mail server runs it: its stderr and the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", SHOW_MODULES, "ingest", "stdin", "--list", "linux-mm"],
        input=mail, capture_output=True, timeout=120,
        env={**lorelab.env, "LORELAB_INGEST_DELIVERY_AGENT_IDLE": idle},
    )
    said = proc.stderr.decode()
    code, modules = json.loads(said.strip().splitlines()[-1])
    assert code == 0, said
    return said, modules


def agent_pid(runtime: Path) -> int | None:
    """The process id of the agent listening in `runtime`, if one does."""
    for sock in (runtime / "lorelab").glob("*.sock"):
        pid = sock.with_name(sock.name + ".lock").read_text().strip()
        if pid.isdigit() and _alive(int(pid)):
            return int(pid)
    return None


def stored(lorelab: Lorelab) -> int:
    """How many messages the database of `lorelab` holds."""
    path = lorelab.env["LORELAB_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM messages").fetchone()[0]


def stores_itself(modules: list[str]) -> bool:
    return "bot.ingest.store" in modules


def test_the_first_delivery_starts_an_agent_that_takes_the_next_ones(
    lorelab: Lorelab, runtime: Path, mails: list[bytes]
) -> None:
    said, modules = deliver(lorelab, mails[0], idle="600")
    assert stores_itself(modules) and "stored 1" in said
    wait_for(lambda: agent_pid(runtime) is not None, what="the agent to listen")
    directory = runtime / "lorelab"
    assert directory.stat().st_mode & 0o777 == 0o700
    for mail in mails[1:]:
        said, modules = deliver(lorelab, mail, idle="600")
        assert not [m for m in modules if m.startswith(("sqlalchemy", "bot.db"))], said
    deliver(lorelab, mails[1], idle="600")  # delivered twice: stored once
    [series] = lorelab.json("series", "list")
    assert series["title"] == "mm: delivered through a pipe"
    assert series["complete"] and series["received"] == 4
    assert stored(lorelab) == 5
    assert list(directory.glob("*.sock")) and len(list(directory.glob("*.sock"))) == 1


def test_the_agent_exits_when_idle_and_the_next_delivery_starts_another(
    lorelab: Lorelab, runtime: Path, mails: list[bytes]
) -> None:
    deliver(lorelab, mails[0], idle="1")
    wait_for(lambda: agent_pid(runtime) is not None, what="the agent to listen")
    first = agent_pid(runtime)
    assert first is not None
    wait_for(lambda: not _alive(first), what="the idle agent to exit")
    assert not list((runtime / "lorelab").glob("*.sock"))  # it removed its socket
    _, modules = deliver(lorelab, mails[1], idle="600")
    assert stores_itself(modules)  # nobody answered: stored here, and a new agent started
    wait_for(lambda: agent_pid(runtime) not in (None, first), what="a new agent")
    _, modules = deliver(lorelab, mails[2], idle="600")
    assert not stores_itself(modules)
    assert stored(lorelab) == 3


def test_no_agent_with_idle_zero_or_a_directory_others_can_enter(
    lorelab: Lorelab, runtime: Path, mails: list[bytes]
) -> None:
    deliver(lorelab, mails[0], idle="0")
    assert not (runtime / "lorelab").exists()
    (runtime / "lorelab").mkdir(mode=0o755)
    os.chmod(runtime / "lorelab", 0o755)  # whoever else can enter could answer 250 and drop it
    for mail in mails[1:3]:
        _, modules = deliver(lorelab, mail, idle="600")
        assert stores_itself(modules)
    assert not list((runtime / "lorelab").iterdir())
    assert stored(lorelab) == 3


def test_other_settings_get_another_agent(lorelab: Lorelab, runtime: Path, tmp_path: Path,
                                          mails: list[bytes]) -> None:
    """An agent stores with the settings it started with: a delivery with other settings
    (another database here) must not hand its mail to it."""
    deliver(lorelab, mails[0], idle="600")
    wait_for(lambda: agent_pid(runtime) is not None, what="the agent to listen")
    other = Lorelab(tmp_path / "other", f"sqlite:///{tmp_path / 'other.db'}")
    other.env["XDG_RUNTIME_DIR"] = str(runtime)
    other.run("db", "upgrade")
    _, modules = deliver(other, mails[1], idle="600")
    assert stores_itself(modules)
    wait_for(lambda: len(_agents_in(runtime)) == 2, what="an agent for the other settings")
    assert stored(other) == 1
    assert stored(lorelab) == 1
