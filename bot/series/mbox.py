"""am-ready mboxes of stored series versions, made by b4 from the raw mail; and a dry run of
the `b4 am` line a reply gives readers (`b4_am_revision`).

b4 decides what `git am` gets: patches in order, the cover letter's and replies' trailers
applied, carried over from earlier versions where the patch did not change. We hand it exactly
the messages of one posting and of the threads of its series, with networking off.

b4's pitfalls handled here (docs/testing.md, "b4 as a library"): its configuration is
module-global, it may call sys.exit() on odd input, `get_series` must run once per mailbox, and
its strict-thread walk may never end (`_strict_thread`).
"""

from __future__ import annotations

import argparse
import contextlib
import email
import email.message
import email.utils
import functools
import inspect
import io
import logging
import sys
import tempfile
from collections.abc import Iterable
from types import FrameType
from typing import Any

import b4
import liblore.utils
import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, SeriesVersion
from bot.mail.wrapped import unwrapped


class MboxError(RuntimeError):
    """b4 could not make an am-ready mbox; the text says why."""


def _b4_setup() -> None:
    # b4 reads the git config of the current directory unless told otherwise: give it an empty
    # directory so that a maintainer's own ~/.gitconfig b4 settings cannot change our output.
    with tempfile.TemporaryDirectory() as empty:
        b4.setup_config(argparse.Namespace(config={"b4.attestation-policy": "off"}), topdir=empty)
    b4.can_network = False
    logging.getLogger("b4").setLevel(logging.ERROR)


def _posting_messages(session: Session, version: SeriesVersion) -> list[bytes]:
    """The raw mails of the version's thread and its earlier versions', in arrival order, one
    per Message-ID: where several mails carry an id (`Message.claimed_msgid`), the one the
    version takes, else the first stored. b4 keys mails by the id in their headers and would
    take whichever came last: a forged copy, or none of the version's own."""
    thread_ids = {
        v.thread_id for v in version.series.versions if v.version <= version.version and v.thread_id
    } | {p.message.thread_id for p in version.applied_patches}  # unthreaded postings span threads
    if version.cover is not None:  # a copy of a cover letter is kept in a thread of its own
        thread_ids.add(version.cover.thread_id)
    rows = session.execute(
        sa.select(Message.id, Message.msgid, Message.claimed_msgid, Message.raw)
        .where(Message.thread_id.in_(thread_ids)).order_by(Message.id)
    ).all()
    taken = {p.message.sent_msgid: p.message.id for p in version.applied_patches}
    if version.cover is not None:
        taken[version.cover.sent_msgid] = version.cover.id
    carried: dict[str, int] = {}
    for row in rows:
        carried.setdefault(row.claimed_msgid or row.msgid, row.id)  # the first stored
    carried.update((msgid, taken[msgid]) for msgid in carried.keys() & taken.keys())
    # a mail a list sent wrapped in one of its own: b4 reads the author's inside
    return [unwrapped(row.raw) for row in rows
            if carried[row.claimed_msgid or row.msgid] == row.id]


def am_ready_mbox(session: Session, version: SeriesVersion) -> bytes:
    """The mbox `git am` applies for this version, trailers included (b4's rules)."""
    _b4_setup()
    mailbox = b4.LoreMailbox()
    wanted = {p.message.sent_msgid for p in version.patches}
    if version.cover is not None:
        wanted.add(version.cover.sent_msgid)
    for raw in _posting_messages(session, version):
        msg = email.message_from_bytes(raw, policy=b4.emlpolicy)  # type: ignore[arg-type]
        msgid = b4.LoreMessage.get_clean_msgid(msg)
        if msgid is None:
            continue
        try:
            mailbox.add_message(msg)
        except (ValueError, SystemExit):
            continue  # b4 refuses some messages outright; they were never part of the posting
    revision = _b4_revision(mailbox, wanted)
    try:
        series = mailbox.get_series(revision=revision, codereview_trailers=False)
        if series is None:
            raise MboxError(f"b4 found no series v{revision} in the stored messages")
        _align(series, mailbox, version)
        messages = series.get_am_ready(allowbadchars=True, addlink=False)
    except SystemExit as exc:
        raise MboxError(f"b4 gave up on this series (exit {exc.code})") from None
    out = io.BytesIO()
    b4.save_git_am_mbox(messages, out)
    return out.getvalue()


def _align(series: b4.LoreSeries, mailbox: b4.LoreMailbox, version: SeriesVersion) -> None:
    """Make b4's series the patches lorelab lists for the version, which its replies name as
    tested: where b4 reads the thread otherwise (of two patches numbered alike, a `(fix)` to
    fold in and the patch, b4 may take the fix), lorelab's choice stands, with b4's trailers
    and am-ready rules. A partial reroll is read alike by both (`bot.series.rerolls`)."""
    ours = [p.message.sent_msgid for p in version.applied_patches]
    if [p.msgid if p is not None else None for p in series.patches[1:]] == ours:
        return
    unknown = [m for m in ours if m not in mailbox.msgid_map]
    if unknown:
        raise MboxError(f"b4 does not have patches <{unknown[0]}> of v{version.version} among "
                        "the stored messages; not applied")
    series.patches = [series.patches[0], *(mailbox.msgid_map[m] for m in ours)]
    series.expected = len(ours)
    series.complete = True


def _b4_revision(mailbox: b4.LoreMailbox, wanted: set[str]) -> int:
    """b4's revision number for our posting: b4 numbers by the patches' subjects."""
    for revision in _revisions_holding(mailbox, wanted):
        return revision
    raise MboxError("b4 does not see the stored patches as a series")


def _revisions_holding(mailbox: b4.LoreMailbox, wanted: set[str]) -> list[int]:
    """The revisions under which b4 files any of the patches `wanted` (message-ids)."""
    return [revision for revision, lser in mailbox.series.items()
            if any(p is not None and p.msgid in wanted for p in lser.patches[1:])]


def b4_am_revision(
    thread: Iterable[bytes], msgid: str, applied: list[str], *, noparent: bool
) -> int | None:
    """The revision to name in `b4 am -v REVISION [--no-parent] MSGID` so that b4, reading a
    thread of these raw messages as it reads lore's, writes exactly the patches `applied`
    (message-ids, in order); None when it would write others (two authors' `[PATCH]` in one
    subthread, parts lore keeps in threads of their own) or never end. A dry run of a reply's
    reproduce line, with b4's own thread, revision and series rules (b4 reads `[PATCH -v3]` as
    1).
    Where a thread holds two postings of one revision, what b4 makes of it depends on the
    order it reads them in; lore's order is not known here, so the thread is read in order
    of arrival and of date, and both must give `applied`."""
    _b4_setup()
    raws = list(thread)

    def read() -> list[email.message.EmailMessage]:  # afresh for each run: b4 edits them
        return [email.message_from_bytes(raw, policy=b4.emlpolicy) for raw in raws]

    orders = (read(), sorted(read(), key=_sent_at))
    revisions = {_b4_am_revision(msgs, msgid, applied, noparent) for msgs in orders}
    return revisions.pop() if len(revisions) == 1 else None


def _sent_at(msg: email.message.EmailMessage) -> float:
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return email.utils.parsedate_to_datetime(str(msg.get("Date", ""))).timestamp()
    return 0.0


def _b4_am_revision(
    msgs: list[email.message.EmailMessage], msgid: str, applied: list[str], noparent: bool
) -> int | None:
    try:
        msgs = _strict_thread(msgs, msgid) or []
        if noparent:
            msgs = _strict_thread(msgs, msgid, noparent=True) or []
        mailbox = b4.LoreMailbox()
        for msg in msgs:
            with contextlib.suppress(ValueError, SystemExit):
                mailbox.add_message(msg)
        first = mailbox.msgid_map.get(msgid)
        if first is None:
            return None
        # The named message's revision, else the one b4 files the patches under: b4 reads
        # `[PATCHSET v2]` over `[PATCH 1/2]`... as revision 2 and its patches as revision 1.
        candidates = [first.revision, *_revisions_holding(mailbox, set(applied))]
        for revision in dict.fromkeys(candidates):
            series = mailbox.get_series(revision=revision, codereview_trailers=False)
            if series is not None and [p.msgid if p else None
                                       for p in series.patches[1:]] == applied:
                return revision
    except (SystemExit, Exception):  # noqa: BLE001 - b4 on odd mail: no b4 line, raw mail instead
        return None
    return None


class EndlessWalk(RuntimeError):
    """liblore's strict-thread walk made a pass that took no message, and would make it again
    for ever."""


@functools.cache
def _pass_end() -> int:
    """The line of `liblore.utils.get_strict_thread` that ends each pass of its walk."""
    lines, start = inspect.getsourcelines(liblore.utils.get_strict_thread)
    for offset, line in enumerate(lines):
        if line.strip() == "if not want:":
            return start + offset
    raise RuntimeError("liblore's get_strict_thread has changed: look again at _strict_thread")


def _strict_thread(
    msgs: list[email.message.EmailMessage], msgid: str, noparent: bool = False
) -> list[email.message.EmailMessage] | None:
    """`b4.get_strict_thread`, stopped (EndlessWalk) where liblore's walk never ends.

    With `noparent` (given, or b4's own for a standalone `[PATCH]`), the walk ignores the
    parents of `msgid` from the moment it reads `msgid`. A reply to `msgid` read before it asks
    for those parents, which the walk has already seen: it asks again each pass and never
    takes them (liblore 0.10.1; a `b4 am --no-parent` on lore in that order would not end
    either). A walk that ends takes a message in each pass but its last, so more passes than
    messages is one without end. Counted by tracing that function's frame alone."""
    walk, pass_end, limit = liblore.utils.get_strict_thread.__code__, _pass_end(), len(msgs) + 1
    passes = 0

    def in_walk(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal passes
        if event == "line" and frame.f_lineno == pass_end:
            passes += 1
            if passes > limit:
                raise EndlessWalk(f"no end to b4's thread of <{msgid}>")
        return in_walk

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return in_walk if frame.f_code is walk else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        return b4.get_strict_thread(msgs, msgid, noparent=noparent)
    finally:
        sys.settrace(previous)
