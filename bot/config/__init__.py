"""Settings: one TOML file plus `LORELAB_*` environment variables, and nothing else.

Where the file is: `--config PATH`, else `$LORELAB_CONFIG`, else `config.toml` in the user's config
directory. The embedded default needs no file at all: SQLite in the user's data directory, Celery
eager, replies to an outbox directory.

Environment overrides name a key by its section and name: `LORELAB_DATABASE_URL` sets
`[database] url`, `LORELAB_INGEST_BATCH_SIZE` sets `[ingest] batch_size`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from bot.commands.policy import CommandSettings
from bot.config.build import BuildSettings, CelerySettings
from bot.config.lab_hosts import LabHostSettings
from bot.ingest.settings import SourceSettings
from bot.report.settings import ReportSettings
from bot.runs.base import TreeSettings
from bot.runs.suites import PlanSettings, SuiteSettings

APP_NAME = "lorelab"


class ConfigError(ValueError):
    """A configuration file or variable that cannot be used; the text says what to fix."""


def data_dir() -> Path:
    return Path(os.environ.get("LORELAB_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


@dataclass
class DatabaseSettings:
    url: str = ""  # empty: SQLite file lorelab.db in the data directory

    def resolved_url(self) -> str:
        return self.url or f"sqlite:///{data_dir() / 'lorelab.db'}"


@dataclass
class IngestSettings:
    batch_size: int = 1000  # messages per database transaction
    max_message_bytes: int = 10 * 1024 * 1024  # larger mail is quarantined, headers kept
    # Processes that parse mail while the main one writes; 0 parses in the main process.
    parse_workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    # Where `lorelab review MSGID` fetches a thread given by its message-id alone.
    lore_url: str = "https://lore.kernel.org/all"


@dataclass
class WebSettings:
    """`[web]`: where `lorelab serve` listens and who may act. Pages and the JSON API are
    read-only for everyone; admin actions (approve a reply, retest or cancel a run) need
    `admin_token`, and are disabled while it is empty. Kept here, not in bot/web, because the
    workers read these settings too and must not import the web package."""

    host: str = "127.0.0.1"
    port: int = 8080
    # Where the site is reached from outside, e.g. https://lorelab.example.org (for links).
    base_url: str = ""
    # The secret admin actions need (HTML forms: the token field; API: Authorization: Bearer).
    admin_token: str = ""


@dataclass
class ListSettings:
    name: str
    address: str = ""


@dataclass
class Settings:
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    report: ReportSettings = field(default_factory=ReportSettings)
    lists: list[ListSettings] = field(default_factory=list)
    sources: list[SourceSettings] = field(default_factory=list)  # live archives to follow
    trees: list[TreeSettings] = field(default_factory=list)  # kernel trees to apply to
    build: BuildSettings = field(default_factory=BuildSettings)
    celery: CelerySettings = field(default_factory=CelerySettings)
    lab_hosts: list[LabHostSettings] = field(default_factory=list)  # where benchmarks run
    commands: CommandSettings = field(default_factory=CommandSettings)  # `#lorelab` in replies
    web: WebSettings = field(default_factory=WebSettings)  # `lorelab serve`
    suites: list[SuiteSettings] = field(default_factory=list)  # what to benchmark; empty: reclaim
    plan: PlanSettings = field(default_factory=PlanSettings)
    source: Path | None = None  # the file these settings came from, if any


_SECTIONS = {
    "database": DatabaseSettings,
    "ingest": IngestSettings,
    "report": ReportSettings,
    "build": BuildSettings,
    "celery": CelerySettings,
    "commands": CommandSettings,
    "web": WebSettings,
    "plan": PlanSettings,
}

# Sections written as arrays of tables ([[lists]]), each item one settings object.
_ARRAYS: dict[str, type] = {
    "lists": ListSettings,
    "sources": SourceSettings,
    "trees": TreeSettings,
    "lab_hosts": LabHostSettings,
    "suites": SuiteSettings,
}


def _coerce(value: str, like: Any, key: str) -> Any:  # key: how errors name it
    if isinstance(like, list):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(like, bool):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key} = {value!r}: expected true or false")
    if isinstance(like, int):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{key} = {value!r}: expected a whole number") from None
    return value


def _apply_section(target: Any, values: dict[str, Any], label: Callable[[str], str]) -> None:
    """Set `values` on a settings dataclass; `label(key)` names a key in error messages."""
    known = {f.name: f for f in fields(target)}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{label(key)}: unknown setting; known: {', '.join(sorted(known))}")
        current = getattr(target, key)
        if isinstance(value, str) and not isinstance(current, str):
            value = _coerce(value, current, label(key))
        elif type(current) is not type(value) and not (
            isinstance(current, int) and isinstance(value, int)
        ):
            raise ConfigError(
                f"{label(key)}: expected {type(current).__name__}, got {type(value).__name__}"
            )
        setattr(target, key, value)


def load_settings(path: str | Path | None = None, env: dict[str, str] | None = None) -> Settings:
    """Read the TOML file (if there is one) and apply `LORELAB_*` overrides."""
    env = dict(os.environ if env is None else env)
    explicit = path or env.get("LORELAB_CONFIG")
    config_path = Path(explicit) if explicit else default_config_path()
    settings = Settings()
    if config_path.exists():
        try:
            raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_path}: not valid TOML: {exc}") from None
        settings.source = config_path
        for section, values in raw.items():
            if section in _ARRAYS:
                if not isinstance(values, list):
                    raise ConfigError(f"{config_path}: [[{section}]] must be an array of tables")
                try:
                    items = [_ARRAYS[section](**item) for item in values]
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"{config_path}: [[{section}]]: {exc}") from None
                setattr(settings, section, items)
            elif section in _SECTIONS:
                _apply_section(
                    getattr(settings, section),
                    values,
                    lambda key, section=section: f"{config_path}: [{section}] {key}",
                )
            else:
                raise ConfigError(
                    f"{config_path}: unknown section [{section}]; "
                    f"known: {', '.join(sorted([*_SECTIONS, *_ARRAYS]))}"
                )
    elif explicit:
        raise ConfigError(
            f"config file {config_path} does not exist; "
            f"create one with `lorelab init {config_path}`"
        )
    for section in _SECTIONS:
        prefix = f"LORELAB_{section.upper()}_"
        overrides = {
            name[len(prefix) :].lower(): value
            for name, value in env.items()
            if name.startswith(prefix)
        }
        if overrides:
            _apply_section(
                getattr(settings, section),
                overrides,
                lambda key, prefix=prefix: f"environment variable {prefix}{key.upper()}",
            )
    return settings


STARTER_CONFIG = """\
# lorelab configuration. Every setting here can also be given as an environment variable:
# LORELAB_<SECTION>_<NAME>, e.g. LORELAB_DATABASE_URL=postgresql+psycopg://lorelab@db/lorelab

[database]
# SQLAlchemy URL. Empty: a SQLite file in the user's data directory (the embedded default).
# url = "postgresql+psycopg://lorelab@127.0.0.1:5432/lorelab"
url = ""

[ingest]
# Messages stored per database transaction.
batch_size = 1000
# Mail larger than this is quarantined (headers kept) instead of stored.
max_message_bytes = 10485760
# Processes that parse mail during a large import (default: one per CPU; 0: none).
# parse_workers = 2

[report]
# Where replies go: "outbox" writes them into a maildir under the data directory (nothing
# leaves the machine; open it with `mutt -f DIR`); "smtp" sends them through smtp_host.
mode = "outbox"
# Replies wait for `lorelab outbox approve ID` before they are sent.
moderation = false
from_address = "lorelab <lorelab@localhost>"
# How to reach a human; printed in every reply's signature (required for smtp).
contact = ""
# Lists a reply may go to. In smtp mode an empty list allows none.
allowed_lists = []
# Addresses never written to; "@example.org" covers a domain.
opt_out = []
list_daily_limit = 20
author_daily_limit = 5
# smtp_host = "smtp.example.org"
# smtp_security = "starttls"   # or "ssl", or "plain" (loopback only)
# smtp_user = "lorelab"
# The password: $LORELAB_SMTP_PASSWORD, or a file readable only by lorelab:
# smtp_password_file = "/etc/lorelab/smtp-password"

# The lists lorelab follows. One [[lists]] table each.
# [[lists]]
# name = "linux-mm"
# address = "linux-mm@kvack.org"

# The archives `lorelab run` polls. kind "lore": a list's URL on a public-inbox web server
# (its new.atom feed); kind "pi-git": a public-inbox v2 archive, a local path or a URL to
# mirror with git. interval: seconds between polls.
# [[sources]]
# kind = "lore"
# url = "https://lore.kernel.org/linux-mm"
# list = "linux-mm"
# interval = 300

# Kernel trees series are applied to (in git worktrees: the checkout itself is never touched).
# [[trees]]
# name = "mm"
# path = "/srv/linux-mm"
# remote = "https://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm.git"
# branches = ["mm-unstable", "mm-stable"]
# subject_tags = { "mm-unstable" = "mm-unstable", "mm-hotfixes" = "mm-hotfixes-unstable" }
# list_branches = { "linux-mm" = "mm-unstable" }

[build]
# Worktrees, O= directories, ccache and the artifact cache (empty: <data dir>/build).
work_dir = ""
# A make target (tinyconfig, defconfig) or a .config file, then fragments merged in order.
base_config = "tinyconfig"
fragments = []
# Limits of the sandbox every build runs in (no network, no secrets in its environment).
cpu_seconds = 14400
memory_mb = 4096
wall_seconds = 10800

[celery]
# Empty: tasks run in the lorelab process (the embedded default). Deployed: Redis.
# broker_url = "redis://127.0.0.1:6379/0"
broker_url = ""

[plan]
# Plan a review run for each new complete series version that touches a watched path.
auto = true
# Versions posted longer ago than this are not planned (a backfill of old mail is not).
max_age_days = 14

# Suites: a complete series touching a watched path gets a review run with these benchmarks.
# With none, the reclaim suite: mm/vmscan.c, mm/swap.c, mm/workingset.c, mm/memcontrol.c,
# mm/page_alloc.c, include/linux/mmzone.h, include/linux/swap.h, ... with hackbench, readtwice.
# [[suites]]
# name = "reclaim"
# watched = ["mm/vmscan.c", "mm/workingset.c", "include/linux/mmzone.h"]
# benchmarks = ["hackbench", "readtwice", "readtwice-memcg", "anon-swap"]

[web]
# `lorelab serve`: the status pages and the JSON API (read-only for everyone).
host = "127.0.0.1"
port = 8080
# Where the site is reached from outside (used for links in the JSON API).
base_url = ""
# Admin actions (approve a reply, retest, cancel) need this token; empty: they are disabled.
# Better as $LORELAB_WEB_ADMIN_TOKEN than in this file.
admin_token = ""

[commands]
# "#lorelab test|retest|stop|help" lines in replies to a series. Anyone may ask for help; the
# series author, the maintainers of the files it touches (the tree's MAINTAINERS, M: and R:)
# who are on the thread, and the addresses below may ask for a test; the author and those
# maintainers may stop one.
enabled = true
# Addresses ("a@example.org") or domains ("@example.org") that may ask for a test of any series.
allow_list = []
# Commands done per sender in any window_minutes; past that they are recorded, not done, and
# answered once per window. 0: no limit.
rate_limit = 5
window_minutes = 60
# Commands in mail dated longer ago than this are ignored (a backfill does not answer them).
max_age_hours = 72

# Lab hosts: where benchmarks run, each served by one Celery worker on queue lab.<name>.
# With none, the built-in "local" host runs benchmarks on this machine's own kernel.
# [[lab_hosts]]
# name = "vm1"
# runner = "qemu"          # local, qemu (boots each kernel in a VM here) or ssh
# cpus = 2
# memory_mb = 256
# accel = "auto"           # KVM when a probe boot works, else TCG
# guest_usr = "/usr"       # the one host directory the guest may read (never /)
# pairs_max = 30           # the sequential rule's most pairs (pairs_min = 5 before a look)
#
# [[lab_hosts]]
# name = "lab-epyc"
# runner = "ssh"
# address = "lab-epyc.example.org"
# key = "/etc/lorelab/lab_ed25519"
# boot_command = "kexec -l {kernel} --reuse-cmdline && systemctl kexec"
"""
