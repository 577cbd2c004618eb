"""What every reply is composed from: the message it answers, the series, the tree, the bot.

Plain frozen dataclasses, filled by the stage that asks for a reply (from ORM rows or from a
recorded-results file); the composers read nothing else. Message-ids are kept without angle
brackets, addresses as `Person`.
"""

from __future__ import annotations

import datetime as dt
import email.utils
from dataclasses import dataclass

from bot.report.compose.text import glue


@dataclass(frozen=True)
class Person:
    name: str
    email: str

    @classmethod
    def parse(cls, text: str) -> Person:
        """From "Name <addr>" or "addr"."""
        name, address = email.utils.parseaddr(text)
        return cls(name, address)

    @property
    def key(self) -> str:
        """The address as compared for de-duplication and opt-out."""
        return self.email.strip().lower()

    def formatted(self) -> str:
        return email.utils.formataddr((self.name, self.email)) if self.name else self.email


@dataclass(frozen=True)
class ParentMessage:
    """The message a reply answers: the cover letter, patch 1, or a command's message."""

    msgid: str
    subject: str
    sender: Person
    to: tuple[Person, ...] = ()
    cc: tuple[Person, ...] = ()
    references: tuple[str, ...] = ()  # oldest first, as in its References header
    lists: tuple[str, ...] = ()  # addresses of the lists it was posted to
    date: dt.datetime | None = None


@dataclass(frozen=True)
class ResentPatch:
    """A patch of the version that is another mail than the one an earlier run of it applied
    (a correction sent since; bot.runs.corrections): the run replied about tests this one."""

    index: int
    msgid: str
    date: dt.datetime | None
    earlier_run: int  # the run that tested the mail this one stands in place of


@dataclass(frozen=True)
class SeriesInfo:
    title: str
    version: int
    patches: int
    lore_url: str = ""
    status_url: str = ""  # the series page on the status site
    series_version_id: int | None = None
    # The message-id that identifies this posting (SeriesVersion.anchor_msgid); the reply's
    # Message-ID is derived from it, so it must not change between retries.
    anchor_msgid: str = ""
    run_id: int | None = None  # the run whose reply this is (part of the reply's Message-ID)
    label: str = ""  # the version as its author wrote it, when not "v{version}": "v4.1"
    resent: tuple[ResentPatch, ...] = ()

    def describe(self) -> str:
        """E.g. '"mm: foo" (v2, 3 patches)'."""
        noun = "patch" if self.patches == 1 else "patches"
        version = self.label or f"v{self.version}"
        return f'"{self.title}" ' + glue(f"({version}, {self.patches} {noun})")

    def resent_sentence(self) -> str:
        """Why a second reply about this version, to follow a sentence (with a space before
        it): which patches are other mails than an earlier run tested; "" when none are. It
        names each mail, not why it changed (a correction, usually)."""
        if not self.resent:
            return ""
        items = [f"patch {p.index}/{self.patches} as sent"
                 + (f" on {p.date:%Y-%m-%d}" if p.date else "") + f" <{p.msgid}>"
                 for p in self.resent]
        runs = " and ".join(f"run {r}" for r in sorted({p.earlier_run for p in self.resent}))
        ones = "the one" if len(items) == 1 else "the ones"
        return f" This run tests {'; '.join(items)}, in place of {ones} {runs} tested."


@dataclass(frozen=True)
class TreeInfo:
    """Where a series was applied: the tree, branch, base commit and the patched head."""

    tree: str  # a name or URL, e.g. "akpm/mm" or "https://git.kernel.org/.../mm.git"
    branch: str
    base: str  # commit hash, any length >= 12
    head: str = ""  # the patched head; empty when the series did not apply
    # How the base was chosen, read after "chosen from": "the base-commit: line",
    # "a guess from the patches' blob hashes".
    base_source: str = ""

    @property
    def short_base(self) -> str:
        return self.base[:12]

    @property
    def short_head(self) -> str:
        return self.head[:12]

    def describe(self) -> str:
        """E.g. "akpm/mm mm-unstable at base 1f2e3d4c5b6a"."""
        return f"{self.tree} {self.branch} at base {self.short_base}"


@dataclass(frozen=True)
class BotIdentity:
    sender: Person
    domain: str  # right-hand side of the Message-IDs the bot makes
    contact: str = ""  # how to reach a human
    # Replaces the default signature lines when given (the text after "-- ").
    signature: tuple[str, ...] = ()

    def signature_lines(self) -> tuple[str, ...]:
        if self.signature:
            return self.signature
        lines = [f"{self.sender.name}, an automated patch-testing bot."]
        if self.contact:
            lines.append(f"To reach a human: {self.contact}")
        lines.append('Reply with "#lorelab help" for commands, "#lorelab stop" to opt out.')
        return tuple(lines)


@dataclass(frozen=True)
class ReplyOptions:
    """How a reply is addressed and stamped, beside its content."""

    identity: BotIdentity
    date: dt.datetime  # the Date header; part of the stored bytes, so fixed at composition
    opt_out: tuple[str, ...] = ()  # addresses ("a@b") and domains ("@b") never written to
    cc_cap: int = 50
