"""The sections of the settings file, each a dataclass: `[database]`, `[ingest]`, `[web]`,
`[plan]`, `[commands]`, and the arrays `[[lists]]`, `[[sources]]`, `[[trees]]`, `[[suites]]`.

The larger sections have modules of their own beside this one: `[report]` (report.py),
`[build]` and `[celery]` (build.py), `[[lab_hosts]]` (lab_hosts.py). Every key is named in the
starter file, starter.toml, with what it does.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bot.paths import data_dir

SOURCE_KINDS = ("lore", "pi-git")


def archive_url_problem(url: str) -> str | None:
    """Why `url` cannot be a public-inbox archive's HTTP address, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (f"{url!r} is not an archive URL; expected https://HOST/LIST, "
                "e.g. https://lore.kernel.org/linux-mm")
    return None


@dataclass
class DatabaseSettings:
    url: str = ""  # empty: SQLite file lorelab.db in the data directory

    def resolved_url(self) -> str:
        return self.url or f"sqlite:///{data_dir() / 'lorelab.db'}"


@dataclass
class IngestSettings:
    # Messages per database transaction (changes of an archive, for `ingest pi-git`). Each
    # batch costs the storing process its lookups and a commit: 2,000 took a tenth off its CPU
    # on a 20,000-message import, against 1,000; 4,000 saved little more.
    batch_size: int = 2000
    max_message_bytes: int = 10 * 1024 * 1024  # larger mail is quarantined, headers kept
    # Processes that parse mail while the main one writes; 0 parses in the main process.
    parse_workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    # Where `lorelab review MSGID` fetches the thread of a message not stored here (empty: none).
    lore_url: str = "https://lore.kernel.org/all"
    # Seconds the agent `ingest stdin` starts for the deliveries after it waits for the next
    # mail before it exits (bot/cli/agent_start.py); 0: every delivery stores its own mail.
    delivery_agent_idle: int = 600


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
class PlanSettings:
    """`[plan]`: whether new versions are planned automatically, and how far back."""

    auto: bool = True  # plan review runs for new versions (false: only by command or CLI)
    max_age_days: int = 14  # versions posted longer ago are not planned (a backfill is not)


@dataclass
class FollowUpSettings:
    """`[follow_ups]`: the campaigns lorelab starts by itself after a review's reply
    (docs/replies.md, "Follow-ups"); each can also be asked for by `#lorelab` command."""

    bisect: bool = True  # a change in a series of several patches: find the patch
    align: bool = True  # a change: does it survive forced function alignment?
    compare: bool = True  # a reviewer's inline diff in the thread: a third arm
    experiment: bool = True  # the author's own benchmark command lines, as they ran them
    bisect_boots: int = 24  # most boots per bisection step (one prefix against the base)


@dataclass
class SuiteSettings:
    name: str
    watched: list[str] = field(default_factory=list)  # path patterns
    benchmarks: list[str] = field(default_factory=list)  # bot.benchmarks.registry names
    lab_host: str = ""  # empty: the first configured lab host



@dataclass
class CommandSettings:
    """The [commands] section: email commands (`LORELAB_COMMANDS_<KEY>` also set each key)."""

    enabled: bool = True
    # Addresses ("a@example.org") or domains ("@example.org") that may ask for a test of any
    # series, besides its author and its maintainers.
    allow_list: list[str] = field(default_factory=list)
    rate_limit: int = 5  # commands done per sender in any window; 0: no limit
    window_minutes: int = 60
    # Commands in mail dated longer ago are ignored: a backfill of an archive must not act on,
    # or answer, commands from the past.
    max_age_hours: int = 72
    # Answers to commands on one thread, and on one series, in any window_minutes (whoever
    # asks); past that, commands are still done but not answered. 0: no limit.
    thread_answers: int = 5
    series_answers: int = 10
    # Who vouches for a command's From (bot.commands.authenticity): a DKIM signature of the
    # From domain, its key from DNS (answers kept dns_cache_minutes), or from this file of
    # "NAME TXT-RECORD" lines instead of DNS (offline; tests); or, for mail of one of the
    # trusted_lists, an Authentication-Results field of one of the trusted_authserv_ids.
    dkim_keys: str = ""
    dns_cache_minutes: int = 60
    trusted_authserv_ids: list[str] = field(default_factory=list)
    trusted_lists: list[str] = field(default_factory=list)



@dataclass
class SourceSettings:
    kind: str  # "lore" (HTTP feed) or "pi-git" (public-inbox git mirror)
    url: str  # the list's URL (lore, or pi-git over HTTP) or a local archive's path
    list: str = ""  # the list name messages are filed under; empty: from List-Id
    interval: int = 300  # seconds between polls

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"kind = {self.kind!r}: expected one of {', '.join(SOURCE_KINDS)}")
        if not self.url:
            raise ValueError("url is required")
        if self.kind == "lore" and (problem := archive_url_problem(self.url)):
            raise ValueError(f"url {problem}")
        if not isinstance(self.interval, int) or self.interval < 1:
            raise ValueError(f"interval = {self.interval!r}: expected whole seconds, at least 1")



@dataclass
class TreeSettings:
    """One `[[trees]]` table: a kernel tree the workers apply series to."""

    name: str
    path: str  # a git checkout on the worker (never modified: runs use worktrees)
    remote: str = ""  # where it is fetched from, for the record
    branches: list[str] = field(default_factory=lambda: ["master"])
    default_branch: str = ""  # empty: the first of `branches`
    subject_tags: dict[str, str] = field(default_factory=dict)  # "mm-unstable" -> branch
    list_branches: dict[str, str] = field(default_factory=dict)  # list name -> default branch

    def __post_init__(self) -> None:
        if not self.name or not self.path:
            raise ValueError("a tree needs a name and a path")
        if not self.branches:
            raise ValueError(f"tree {self.name}: branches must not be empty")

    @property
    def fallback_branch(self) -> str:
        return self.default_branch or self.branches[0]

    @property
    def key(self) -> str:
        """A directory name for the tree's worktrees and builds (a tree named by its path gets
        its directory's name and a hash of the path)."""
        if "/" not in self.name:
            return self.name
        digest = hashlib.sha1(self.name.encode()).hexdigest()[:8]
        return f"{Path(self.name).name}-{digest}"

