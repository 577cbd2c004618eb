"""A compare run's `apply-alternative` step: the reviewer's alternative as a tree of its own.

A reviewer who answers patch k of a series with a diff ("how about this", a message of kind
inline-diff) proposes it in place of that patch: the alternative tree is the series' first k-1
patches, the reviewer's diff on them, then the rest of the series with `git am -3`. A diff
that does not apply there was written against the patched tree: it goes on top of the whole
series instead (as does a diff answering the cover letter). Whichever applies is recorded
(bot.runs.records.AlternativeRecord) with its commit, kept as `refs/lorelab/run-<id>-
alternative`; when none does, the files and lines git could not apply it at.

The reviewer's diff is untrusted input like any patch: it goes through the same worktree, path
and size checks and memory-limited `git am` as the series (workers.kernel.apply). Its `index`
lines are dropped, so that git applies it to the text it names or not at all: with them, `am -3`
could merge a diff written against the patched tree into the tree without patch k, which is
neither of the two trees the reviewer could have meant.
"""

from __future__ import annotations

import email.utils
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import sqlalchemy as sa

from bot.config import Settings
from bot.db.models import Message, SeriesVersion
from bot.db.session import Database
from bot.git import git_output, run_git
from bot.mail.parse import parse_message
from bot.mail.record import MessageKind
from bot.runs.lifecycle import PlanError, find_tree
from bot.runs.records import AlternativeRecord
from bot.runs.states import StepState
from bot.runs.steps import StepEnd, StepFailed, run_step, stored_step
from workers.kernel.apply import ApplyResult, UnsafePatch, apply_mbox
from workers.kernel.steps import work_dir

IN_PLACE, ON_TOP = "in place", "on top"
_INDEX_LINE = re.compile(r"^index [0-9a-fA-F]+\.\.[0-9a-fA-F]+(?: [0-7]+)?\n", re.M)
_FAILED_HUNK = re.compile(r"^error: patch failed: (\S+:\d+)$", re.M)
_MISSING = re.compile(r"^error: (\S+): does not exist in index$", re.M)


@dataclass(frozen=True)
class Alternative:
    """The reviewer's message as the step needs it."""

    message_id: str
    author: tuple[str, str]  # name, address
    date: str  # RFC 2822
    diff: str
    answers: int | None  # the patch it answers; None: the cover letter


def without_index_lines(diff: str) -> str:
    return _INDEX_LINE.sub("", diff)


def answered_patch(in_reply_to: str | None, references: Sequence[str],
                   patches: Mapping[str, int]) -> int | None:
    """The patch (its index) a reply answers: the nearest of its ancestors (In-Reply-To, then
    References from the newest) that is a patch of the version `patches` maps by Message-ID;
    None when none is (a reply to the cover letter, or to a discussion under it)."""
    for msgid in (in_reply_to, *reversed(references)):
        if msgid and msgid.strip("<>") in patches:
            return patches[msgid.strip("<>")]
    return None


def alternative_mbox(alternative: Alternative, patches: int) -> bytes:
    """The reviewer's diff as a mail `git am` takes: authored by the reviewer, its subject
    naming the message it came from, without `index` lines."""
    name, address = alternative.author
    what = (f"in place of {alternative.answers}/{patches}" if alternative.answers is not None
            else "on the series")
    diff = without_index_lines(alternative.diff)
    return (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: {email.utils.formataddr((name, address), 'utf-8')}\n"
            f"Date: {alternative.date}\n"
            f"Subject: [PATCH] the reviewer's alternative {what}\n\n"
            f"From <{alternative.message_id}>.\n---\n{diff}").encode()


def run_apply_alternative_step(db: Database, settings: Settings, step_id: int,
                               task_id: str | None = None) -> None:
    """Make the alternative tree of a compare run and record where the diff went."""
    run_step(db, step_id, task_id, lambda: _apply_alternative(db, settings, step_id))


def _apply_alternative(db: Database, settings: Settings, step_id: int) -> StepEnd:
    with db.session() as session:
        step = stored_step(session, step_id)
        run = step.run
        applied = any(s.name == "apply" and s.state == StepState.DONE for s in run.steps)
        if not applied or run.base_commit is None or run.patched_commit is None:
            raise StepFailed("no alternative: the series did not apply")
        version = session.get(SeriesVersion, run.series_version_id)
        assert version is not None
        alternative = _read_alternative(session, version, (run.options or {}).get("alternative"))
        patches = len(version.applied_patches)
        base, patched, run_id, tree_name = run.base_commit, run.patched_commit, run.id, run.tree
    try:
        tree = find_tree(settings, tree_name)
    except PlanError as exc:
        raise StepFailed(str(exc)) from None
    repo = Path(tree.path)
    commits = git_output(repo, "rev-list", "--reverse", f"{base}..{patched}").split()
    if len(commits) != patches:
        raise StepFailed(f"the applied series has {len(commits)} commits for {patches} patches: "
                         "cannot tell which one the alternative replaces")
    mbox = alternative_mbox(alternative, patches)
    diff = without_index_lines(alternative.diff)
    record = AlternativeRecord(message_id=alternative.message_id, answers=alternative.answers,
                               patches=patches)

    def apply(start: str, extra: bytes = b"") -> ApplyResult:
        try:
            return apply_mbox(repo, work_dir(settings), tree.key, f"run-{run_id}-alternative",
                              start, mbox + extra, max_binary_mb=settings.build.max_binary_mb,
                              memory_mb=settings.build.apply_memory_mb,
                              max_file_mb=settings.build.max_file_mb)
        except UnsafePatch as exc:
            raise StepFailed(f"the alternative is not applied: {exc}",
                             result=record.as_result()) from None

    logs = []
    if alternative.answers is not None:
        k = alternative.answers
        rest = git_output(repo, "format-patch", "--stdout", f"{commits[k - 1]}..{patched}") \
            if k < patches else ""
        start = commits[k - 2] if k > 1 else base
        result = apply(start, rest.encode())
        record = _tried(record, f"in place of {k}/{patches}", result,
                        () if result.ok or result.applied else failed_hunks(repo, start, diff))
        logs.append(result.output)
        if result.ok:
            return _applied(record, IN_PLACE, result, logs)
        if result.applied:  # the diff applied in place; a later patch of the series did not
            raise StepFailed(f"patch {result.failed_patch or '?'} of the series does not apply "
                             f"on the alternative: conflicts in {_files(record)}",
                             result=record.as_result(), log="\n".join(logs))
    result = apply(patched)
    record = _tried(record, "on top of the series", result,
                    () if result.ok else failed_hunks(repo, patched, diff))
    logs.append(result.output)
    if result.ok:
        return _applied(record, ON_TOP, result, logs)
    raise StepFailed(f"the alternative does not apply {' nor '.join(record.tried)}: "
                     f"conflicts in {_files(record)}", result=record.as_result(),
                     log="\n".join(logs))


def _read_alternative(session: sa.orm.Session, version: SeriesVersion,
                      msgid: object) -> Alternative:
    if not isinstance(msgid, str) or not msgid.strip("<> "):
        raise StepFailed("no alternative: the run names no message (options.alternative)")
    msgid = msgid.strip("<> ")
    message = session.scalar(sa.select(Message).where(Message.msgid == msgid))
    if message is None:
        raise StepFailed(f"no alternative: no message <{msgid}> is stored")
    if message.kind != MessageKind.INLINE_DIFF:
        raise StepFailed(f"no alternative: <{msgid}> carries no diff (a {message.kind} message)")
    diff = parse_message(bytes(message.raw)).diff
    if not diff:
        raise StepFailed(f"no alternative: no diff found in <{msgid}>")
    patches = {p.message.msgid: p.index for p in version.applied_patches}
    thread = {*patches, version.anchor_msgid.strip("<>")}
    if version.cover is not None:
        thread.add(version.cover.msgid)
    ancestors = [message.in_reply_to, *(message.references or ())]
    if not thread & {m.strip("<>") for m in ancestors if m}:
        raise StepFailed(f"no alternative: <{msgid}> does not answer this series")
    date = email.utils.format_datetime(message.date) if message.date else \
        "Thu, 1 Jan 1970 00:00:00 +0000"
    return Alternative(message_id=msgid, author=(message.from_name, message.from_email),
                       date=date, diff=diff,
                       answers=answered_patch(message.in_reply_to, ancestors[1:], patches))


def failed_hunks(repo: Path, start: str, diff: str) -> tuple[str, ...]:
    """Where `diff` does not apply on commit `start` ("mm/vmscan.c:15", or a file it names
    that is not there), as `git apply --check` says it in an index of its own: `git am -3` of
    a diff without index lines says only that it cannot merge. Called for a diff `apply_mbox`
    checked already (paths, sizes); nothing is written but the temporary index."""
    with tempfile.TemporaryDirectory(prefix="lorelab-alternative-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(repo, "read-tree", start, env=index)
        check = run_git(repo, "apply", "--cached", "--check", "-", input=diff.encode(),
                        env=index, check=False)
    said = check.stderr.decode(errors="replace")
    return tuple(dict.fromkeys([*_FAILED_HUNK.findall(said), *_MISSING.findall(said)]))


def _tried(record: AlternativeRecord, where: str, result: ApplyResult,
           hunks: tuple[str, ...]) -> AlternativeRecord:
    conflicts = [c.path for c in result.conflicts if c.path] if result.applied else []
    return replace(record, tried=(*record.tried, where),
                   conflicts=tuple(dict.fromkeys(
                       conflicts or [hunk.rpartition(":")[0] or hunk for hunk in hunks])),
                   failed_at=() if result.applied else hunks,
                   failed_patch=result.failed_patch if result.applied else None)


def _applied(record: AlternativeRecord, mode: str, result: ApplyResult,
             logs: list[str]) -> StepEnd:
    done = replace(record, mode=mode, commit=result.patched, conflicts=(), failed_at=(),
                   failed_patch=None)
    return StepEnd(result=done.as_result(), log="\n".join(logs))


def _files(record: AlternativeRecord) -> str:
    return ", ".join(record.failed_at or record.conflicts) or "unknown files"
