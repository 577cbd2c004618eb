"""am-ready mboxes of stored series versions, made by b4 from the raw mail.

b4 decides what `git am` gets: patches in order, the cover letter's and replies' trailers
applied, carried over from earlier versions where the patch did not change. We hand it exactly
the messages of one posting and of the threads of its series, with networking off.

b4's pitfalls handled here (docs/testing.md, "b4 as a library"): its configuration is
module-global, it may call sys.exit() on odd input, and `get_series` must run once per mailbox.
"""

from __future__ import annotations

import argparse
import email
import io
import logging
import tempfile

import b4
import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import Message, SeriesVersion


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
    thread_ids = {
        v.thread_id for v in version.series.versions if v.version <= version.version and v.thread_id
    } | {p.message.thread_id for p in version.applied_patches}  # unthreaded postings span threads
    rows = session.scalars(
        sa.select(Message.raw).where(Message.thread_id.in_(thread_ids)).order_by(Message.id)
    )
    return list(rows)


def am_ready_mbox(session: Session, version: SeriesVersion) -> bytes:
    """The mbox `git am` applies for this version, trailers included (b4's rules)."""
    _b4_setup()
    mailbox = b4.LoreMailbox()
    wanted = {p.message.msgid for p in version.patches}
    if version.cover is not None:
        wanted.add(version.cover.msgid)
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
        _same_patches(version, [p.msgid if p else None for p in series.patches[1:]])
        messages = series.get_am_ready(allowbadchars=True, addlink=False)
    except SystemExit as exc:
        raise MboxError(f"b4 gave up on this series (exit {exc.code})") from None
    out = io.BytesIO()
    b4.save_git_am_mbox(messages, out)
    return out.getvalue()


def _same_patches(version: SeriesVersion, b4_msgids: list[str | None]) -> None:
    """Refuse an mbox of other patches than lorelab lists for the version: its replies say
    which patches were tested. A partial reroll is where the two could part (b4 reconstitutes
    it from the stored threads, lorelab from its link, `bot.series.rerolls`)."""
    ours = [p.message.msgid for p in version.applied_patches]
    if b4_msgids != ours:
        theirs = ", ".join(f"{i}: <{m}>" for i, m in enumerate(b4_msgids, 1)) or "none"
        raise MboxError(f"b4 reads v{version.version} as other patches than lorelab lists "
                        f"({theirs}); not applied, as a reply would name the wrong patches")


def _b4_revision(mailbox: b4.LoreMailbox, wanted: set[str]) -> int:
    """b4's revision number for our posting: b4 numbers by the patches' subjects."""
    for revision, lser in mailbox.series.items():
        if any(p is not None and p.msgid in wanted for p in lser.patches[1:]):
            return revision
    raise MboxError("b4 does not see the stored patches as a series")
