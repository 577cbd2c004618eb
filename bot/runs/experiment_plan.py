"""What an experiment follow-up is asked to run: the author's own commands in a series' thread,
mapped (bot/benchmarks/author_commands.py) for the lab host that will run them.

The edge of the pure mapping: the author's messages read from the database (every message of
the version's thread the author sent: cover letter, patches, replies; a message's quoted text is
judged by its attribution there), and which programs the lab host has.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.analysis.claims.input import read_message_text
from bot.benchmarks.author_commands import (
    AuthorCommand,
    AuthorExperiment,
    AuthorMessage,
    Installed,
    author_experiment,
)
from bot.benchmarks.spec import from_spec
from bot.config.lab_hosts import LabHostSettings
from bot.db.models import Message, SeriesVersion
from bot.report.compose.from_db import answered_message


def author_messages(session: Session, version: SeriesVersion) -> list[AuthorMessage]:
    """The messages of the version's thread its author sent, oldest first (the cover letter,
    or patch 1, when the version has no thread)."""
    author = version.author_email.strip().lower()
    if version.thread_id is None:
        stored = [answered_message(version)]
    else:
        stored = list(session.scalars(
            sa.select(Message).where(Message.thread_id == version.thread_id,
                                     sa.func.lower(Message.from_email) == author)
            .order_by(Message.date, Message.id)))
    found = []
    for message in stored:
        text = read_message_text(bytes(message.raw))
        if not text.unreadable:
            found.append(AuthorMessage(text.body, text.sender))
    return found


def lab_programs(host: LabHostSettings) -> Installed:
    """Whether the lab host's benchmarks can run a program: on this host's PATH for a local
    host; in its guest_usr, the only host files a qemu guest sees; an ssh host's machine is
    only known when the benchmark runs there (a missing program fails its campaign then, and
    no reply says it ran)."""
    if host.runner == "qemu":
        usr = Path(host.guest_usr)
        return lambda program: any(os.access(usr / d / program, os.X_OK)
                                   for d in ("bin", "sbin", "local/bin"))
    if host.runner == "ssh":
        return lambda program: True
    return lambda program: shutil.which(program) is not None


def planned_experiment(session: Session, version: SeriesVersion,
                       host: LabHostSettings) -> AuthorExperiment:
    """The author's experiment for this version, as `host` can run it: on a local host, which
    boots neither kernel, only what runs the kernel under test itself (the stand-in tree's
    program; bot.benchmarks.definition.Benchmark.runs_the_kernel)."""
    found = author_experiment(author_messages(session, version), version.author_email,
                              lab_programs(host), version.series.author_name)
    if host.runner != "local":
        return found
    return dataclasses.replace(found, commands=tuple(_on_local_host(c) for c in found.commands))


def _on_local_host(command: AuthorCommand) -> AuthorCommand:
    if command.spec is None or from_spec(command.spec).runs_the_kernel:
        return command
    return AuthorCommand(command.text, command.program,
                         why_not=f"{command.program}: the lab host boots no kernel (a local "
                                 "runner), so it cannot compare two kernels with it")
