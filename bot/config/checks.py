"""Checks of loaded settings that a value's type cannot express: a database URL lorelab can
open, an archive URL, ports in range, directories that must exist. `bot.config.load_settings`
runs them, so a bad value stops every command at once with one line naming it, not with a
library's traceback when the value is first used.

Each check yields (setting, problem): `setting` as the file writes it ("[web] port",
"[[lab_hosts]] lab: port"), `problem` worded to follow it ("= 99999: not a port number");
the loader says where the value came from (the file, or the `LORELAB_*` variable that set it).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config.sections import archive_url_problem
from bot.paths import data_dir

if TYPE_CHECKING:
    from bot.config import Settings

# Database dialect -> driver (after "+"; "" for none) -> the module it needs.
DRIVERS = {
    "sqlite": {"": "sqlite3", "pysqlite": "sqlite3"},
    "postgresql": {"": "psycopg2", "psycopg": "psycopg", "psycopg2": "psycopg2"},
}
URL_EXAMPLES = "sqlite:////var/lib/lorelab/lorelab.db or postgresql+psycopg://USER@HOST/DB"


def database_url_problem(url: str) -> str | None:
    """What keeps lorelab from opening `url`, or None (an empty URL is the default SQLite)."""
    if not url:
        return None
    problem = _url_problem(url)
    return f"= {url!r}: {problem}" if problem else None


def _url_problem(url: str) -> str | None:
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.replace("+", "").isalnum():
        return f"not a database URL; expected {URL_EXAMPLES}"
    dialect, _, driver = scheme.partition("+")
    if dialect not in DRIVERS:
        return f"lorelab supports sqlite and postgresql, not {dialect}; e.g. {URL_EXAMPLES}"
    module = DRIVERS[dialect].get(driver)
    usable = "postgresql+psycopg://" if dialect == "postgresql" else "sqlite:///"
    if module is None:
        return f"driver {driver} is not one lorelab uses; use {usable}..."
    if importlib.util.find_spec(module) is None:
        return f"driver {driver or module} is not installed; use {usable}..."
    if dialect == "sqlite":
        return _sqlite_problem(rest)
    return None


def _sqlite_problem(rest: str) -> str | None:
    path = rest.split("?", 1)[0]
    if path in ("", "/:memory:"):
        return None
    parent = Path(path[1:] if path.startswith("/") else path).parent
    # Only the default data directory is made on first use; a typo must not make a tree.
    if not parent.is_dir() and parent.resolve() != data_dir().resolve():
        return f"directory {parent} does not exist; create it, or correct the path"
    return None


def _port_problem(port: int, *, zero_ok: bool = False) -> str | None:
    low = 0 if zero_ok else 1
    if not low <= port <= 65535:
        return f"= {port}: not a port number ({low}-65535)"
    return None


def _counts(settings: Settings) -> tuple[tuple[str, int, int], ...]:
    """(setting, value, the least it may be) for the counts a negative value would break."""
    return (("[ingest] batch_size", settings.ingest.batch_size, 1),
            ("[ingest] max_message_bytes", settings.ingest.max_message_bytes, 1),
            ("[ingest] parse_workers", settings.ingest.parse_workers, 0),
            ("[ingest] delivery_agent_idle", settings.ingest.delivery_agent_idle, 0),
            ("[follow_ups] bisect_boots", settings.follow_ups.bisect_boots, 4))


def problems(settings: Settings) -> Iterator[tuple[str, str]]:
    """Every (setting, problem) in `settings`, in file order.

    Paths that only some machines have (a tree's checkout and a lab key on the workers, the
    SMTP password file only where replies are sent) are checked where they are used: the same
    file configures every service."""
    if problem := database_url_problem(settings.database.url):
        yield "[database] url", problem
    lore_url = settings.ingest.lore_url
    if lore_url and (problem := archive_url_problem(lore_url)):
        yield "[ingest] lore_url", f"= {problem}"
    for key, problem in settings.report.problems():
        yield f"[report] {key}", problem
    if problem := _port_problem(settings.report.smtp_port, zero_ok=True):
        yield "[report] smtp_port", problem
    if problem := _port_problem(settings.web.port):
        yield "[web] port", problem
    for setting, value, least in _counts(settings):
        if value < least:
            yield setting, f"= {value}: must be {least} or more"
    for host in settings.lab_hosts:
        if problem := _port_problem(host.port):
            yield f"[[lab_hosts]] {host.name}: port", problem
