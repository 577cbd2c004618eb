"""The database schema as SQLAlchemy 2.x models.

Schema changes only through `migrations/` (Alembic); these models must match the latest revision.
Raw mail is kept, compressed, so that any later stage can re-read a message exactly as received.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import zstandard
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# Stable constraint names, so that migrations can refer to them on SQLite and PostgreSQL alike.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso_utc(value: dt.datetime) -> str:
    """A stored time as every JSON output writes it (CLI and API alike): ISO 8601 in UTC with
    `T` and `+00:00` (README.md, "JSON shapes"); a naive value is taken as UTC."""
    utc = value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return utc.isoformat()


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite would hand back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value

    def process_result_value(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value


class PackedMail(bytes):
    """Mail already compressed (by an ingest worker): stored as it is."""


_ZSTD_LEVEL = 1  # three times faster than zlib's fastest level, same size on list mail


class CompressedMail(TypeDecorator[bytes]):
    """Raw mail kept exactly as received, zstd-compressed on disk; reads give the bytes back."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: bytes | None, dialect: Any) -> bytes | None:
        if value is None or isinstance(value, PackedMail):
            return value
        return pack_mail(value)

    def process_result_value(self, value: bytes | None, dialect: Any) -> bytes | None:
        return None if value is None else unpack_mail(value)


class _Codecs(threading.local):
    """One zstd compressor and decompressor per thread (they are not thread-safe): making a
    compressor per message cost 52 µs of the 84 µs that compressing it took."""

    def __init__(self) -> None:
        self.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_CODECS = _Codecs()


def compress_mail(raw: bytes) -> bytes:
    """Raw mail compressed as `CompressedMail` stores it, as plain bytes (a message row's)."""
    return _CODECS.compressor.compress(raw)


def pack_mail(raw: bytes) -> PackedMail:
    return PackedMail(compress_mail(raw))


def unpack_mail(packed: bytes) -> bytes:
    """Raw mail back from what `CompressedMail` stores."""
    return _CODECS.decompressor.decompress(packed)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dt.datetime: UTCDateTime(), dict[str, Any]: JSON}


class MailingList(Base):
    __tablename__ = "lists"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    address: Mapped[str] = mapped_column(String(320), default="")


class MessageList(Base):
    """A message seen on a list; the same message cross-posted to two lists is stored once."""

    __tablename__ = "message_lists"

    message_id: Mapped[int] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True
    )
    list_id: Mapped[int] = mapped_column(ForeignKey("lists.id"), primary_key=True)


class Thread(Base):
    """Messages connected by In-Reply-To/References; `root_msgid` may name a message not seen."""

    __tablename__ = "threads"

    id: Mapped[int] = mapped_column(primary_key=True)
    root_msgid: Mapped[str] = mapped_column(String(998), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class UnseenMessage(Base):
    """A Message-ID that stored mail names (In-Reply-To, References) but no stored message has,
    and the thread that names it: a message arriving later under that id joins that thread,
    and so does any other message that names it, whatever the order of arrival
    (`bot.series.threads`). Gone once the message itself is stored."""

    __tablename__ = "unseen_messages"

    msgid: Mapped[str] = mapped_column(String(998), primary_key=True)
    thread_id: Mapped[int] = mapped_column(ForeignKey("threads.id"), index=True)


class Message(Base):
    __tablename__ = "messages"
    # Assembly reads a thread's cover letters and patches: (thread_id, kind) together. No index
    # on `kind` alone: a few values over millions of rows, and a planner without statistics
    # took it over thread_id. No index that no query uses (in_reply_to, from_email, change_id,
    # patch_fingerprint): each made every stored message dearer, the more so the larger.
    __table_args__ = (Index("ix_messages_thread_id_kind", "thread_id", "kind"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    msgid: Mapped[str] = mapped_column(String(998), unique=True)
    in_reply_to: Mapped[str | None] = mapped_column(String(998))
    references: Mapped[list[str]] = mapped_column(JSON, default=list)
    thread_id: Mapped[int | None] = mapped_column(ForeignKey("threads.id"))
    from_name: Mapped[str] = mapped_column(String(500), default="")
    from_email: Mapped[str] = mapped_column(String(320), default="")
    date: Mapped[dt.datetime | None] = mapped_column(index=True)
    subject: Mapped[str] = mapped_column(Text, default="")
    title: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(20))
    reply: Mapped[bool] = mapped_column(Boolean, default=False)
    version: Mapped[int] = mapped_column(Integer, default=1)
    version_explicit: Mapped[bool] = mapped_column(Boolean, default=False)
    counter: Mapped[int] = mapped_column(Integer, default=1)
    total: Mapped[int] = mapped_column(Integer, default=1)
    rfc: Mapped[bool] = mapped_column(Boolean, default=False)
    resend: Mapped[bool] = mapped_column(Boolean, default=False)
    prefixes: Mapped[list[str]] = mapped_column(JSON, default=list)
    list_id_header: Mapped[str | None] = mapped_column(String(300))
    base_commit: Mapped[str | None] = mapped_column(String(64))
    change_id: Mapped[str | None] = mapped_column(String(200))
    patch_fingerprint: Mapped[str | None] = mapped_column(String(64))
    files: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    insertions: Mapped[int] = mapped_column(Integer, default=0)
    deletions: Mapped[int] = mapped_column(Integer, default=0)
    trailers: Mapped[list[list[str]]] = mapped_column(JSON, default=list)  # [name, value] pairs
    problems: Mapped[list[str]] = mapped_column(JSON, default=list)
    raw: Mapped[bytes] = mapped_column(CompressedMail)  # the RFC 822 bytes as received
    raw_size: Mapped[int] = mapped_column(Integer)
    # Each round of `lorelab run` reads the mail stored since the last (bot.runs.rounds).
    ingested_at: Mapped[dt.datetime] = mapped_column(default=utcnow, index=True)
    # A different mail under a Message-ID already stored (a forgery, or a client reusing ids) is
    # kept too, as public-inbox keeps it: `msgid` is then a stand-in and this the id it claims.
    claimed_msgid: Mapped[str | None] = mapped_column(String(998), index=True)

    lists: Mapped[list[MailingList]] = relationship(secondary="message_lists", lazy="selectin")

    @property
    def sent_msgid(self) -> str:
        """The Message-ID the mail carries, as the list and lore know it: `msgid`, or for a
        copy the id it claims (its `msgid` is lorelab's stand-in, which no one else knows)."""
        return self.claimed_msgid or self.msgid


class Series(Base):
    """One patch series across its versions (v1..vN)."""

    __tablename__ = "series"
    # `series list` and the front page: newest mail first, a page at a time.
    __table_args__ = (Index("ix_series_last_mail_at_id", "last_mail_at", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    title_key: Mapped[str] = mapped_column(String(500), index=True)  # normalised, for matching
    author_name: Mapped[str] = mapped_column(String(500), default="")
    author_email: Mapped[str] = mapped_column(String(320), index=True)
    change_id: Mapped[str | None] = mapped_column(String(200), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)  # when the row last changed
    # The date of the newest cover letter or patch of any version (the ingest time for mail
    # without a date): what `series list` calls "updated" and sorts on.
    last_mail_at: Mapped[dt.datetime | None]

    versions: Mapped[list[SeriesVersion]] = relationship(
        back_populates="series", order_by="SeriesVersion.version, SeriesVersion.id"
    )


class SeriesVersion(Base):
    """One posting of a series: a cover letter (optional) and patches 1..N of one version."""

    __tablename__ = "series_versions"
    # Assembly's links between versions (bot.series.membership): one author's versions of one
    # title, and versions of one change-id, looked up without reading an author's history.
    __table_args__ = (Index("ix_series_versions_author_title", "author_email", "title_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id"), index=True)
    # The message-id the posting hangs from (cover letter, or patch 1 / the first patch's parent):
    # what identifies this posting while its messages arrive in any order.
    anchor_msgid: Mapped[str] = mapped_column(String(998), unique=True)
    thread_id: Mapped[int | None] = mapped_column(ForeignKey("threads.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    title_key: Mapped[str] = mapped_column(String(500), server_default="")  # as Series.title_key
    author_email: Mapped[str] = mapped_column(String(320))
    expected: Mapped[int] = mapped_column(Integer)
    received: Mapped[int] = mapped_column(Integer, default=0)
    complete: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    cover_message_id: Mapped[int | None] = mapped_column(ForeignKey("messages.id"), index=True)
    rfc: Mapped[bool] = mapped_column(Boolean, default=False)
    resend: Mapped[bool] = mapped_column(Boolean, default=False)
    prefixes: Mapped[list[str]] = mapped_column(JSON, default=list)
    base_commit: Mapped[str | None] = mapped_column(String(64))
    change_id: Mapped[str | None] = mapped_column(String(200), index=True)
    notes: Mapped[list[str]] = mapped_column(JSON, default=list)  # e.g. version mismatches
    date: Mapped[dt.datetime | None] = mapped_column(index=True)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    # Different mails share one of its Message-IDs: the notes say which and what was chosen;
    # when nothing tells the copies apart the version also counts as incomplete (not tested).
    ambiguous: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # A partial reroll (bot.series.rerolls): the version whose patches stand for the numbers
    # this one did not send again. Indexed: deleting a version looks up who links to it.
    reroll_of_id: Mapped[int | None] = mapped_column(
        ForeignKey("series_versions.id", ondelete="SET NULL"), index=True
    )
    # Patches an earlier version sent unchanged (a RESEND; a version that changed only its
    # changelogs): the review run that measures them for that version, so that the planner makes
    # none of its own (bot.runs.same_patches). Indexed: deleting a run looks up who links to it.
    measured_by_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL", use_alter=True), index=True
    )
    # mm's fix-ups sent for its patches (`bot.series.fix_ups`), [msgid, number fixed] pairs in
    # the order they would be folded in; runs apply the patches as sent, without them
    fix_ups: Mapped[list[list[Any]]] = mapped_column(JSON, default=list, server_default="[]")

    series: Mapped[Series] = relationship(back_populates="versions")
    cover: Mapped[Message | None] = relationship(foreign_keys=[cover_message_id])
    patches: Mapped[list[Patch]] = relationship(
        back_populates="version", order_by="Patch.index", cascade="all, delete-orphan"
    )
    reroll_of: Mapped[SeriesVersion | None] = relationship(
        remote_side=[id], foreign_keys=[reroll_of_id]
    )

    @property
    def applied_patches(self) -> list[Patch]:
        """The patches a test of this version applies, in order: its own, and for a partial
        reroll the earlier versions' for the numbers it did not send again (b4 reads it so)."""
        by_index = {p.index: p for p in self.patches}
        seen = {self.id}
        base = self.reroll_of
        while base is not None and base.id not in seen:
            seen.add(base.id)
            for patch in base.patches:
                by_index.setdefault(patch.index, patch)
            base = base.reroll_of
        return [by_index[i] for i in sorted(by_index) if i <= self.expected]

    @property
    def first_message(self) -> Message | None:
        """The message that stands for this version on the list: its cover letter, else its
        first patch. Not the anchor, which can be a message the version was only sent in reply
        to (a review, a bug report) or one that never arrived."""
        if self.cover is not None:
            return self.cover
        return self.patches[0].message if self.patches else None

    @property
    def touched_files(self) -> list[str]:
        """Every path the version's patches touch (both names of a rename), in patch order."""
        paths: dict[str, None] = {}
        for patch in self.applied_patches:
            for change in patch.message.files or ():
                for key in ("old_path", "path"):
                    if change.get(key):
                        paths.setdefault(change[key], None)
        return list(paths)


class Patch(Base):
    """Patch N of a series version. Subject, files and diffstat are the message's."""

    __tablename__ = "patches"
    __table_args__ = (UniqueConstraint("series_version_id", "index"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    series_version_id: Mapped[int] = mapped_column(
        ForeignKey("series_versions.id", ondelete="CASCADE"), index=True
    )
    message_id: Mapped[int] = mapped_column(ForeignKey("messages.id"), unique=True)
    index: Mapped[int] = mapped_column(Integer)

    version: Mapped[SeriesVersion] = relationship(back_populates="patches")
    message: Mapped[Message] = relationship(lazy="joined")
    trailers: Mapped[list[Trailer]] = relationship(
        back_populates="patch", order_by="Trailer.id", cascade="all, delete-orphan"
    )


class Trailer(Base):
    """A trailer someone gave a patch: in a reply, or carried from an earlier version.

    The patch's own trailers (Signed-off-by, ...) are in its message's `trailers`."""

    __tablename__ = "trailers"

    id: Mapped[int] = mapped_column(primary_key=True)
    patch_id: Mapped[int] = mapped_column(ForeignKey("patches.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    value: Mapped[str] = mapped_column(Text)
    # reply: in a reply to it; cover: in a reply to the cover letter; carried: given to an
    # earlier version of an unchanged patch (same patch fingerprint).
    origin: Mapped[str] = mapped_column(String(20))
    source_msgid: Mapped[str] = mapped_column(String(998))

    patch: Mapped[Patch] = relationship(back_populates="trailers")


class IngestCursor(Base):
    """Where a source was last read up to; advanced only after its messages are committed."""

    __tablename__ = "ingest_cursors"
    __table_args__ = (UniqueConstraint("kind", "location"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(30))  # mbox, maildir, lore, pi-git
    location: Mapped[str] = mapped_column(Text)
    list_name: Mapped[str | None] = mapped_column(String(200))
    position: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    messages_ingested: Mapped[int] = mapped_column(Integer, default=0)
    last_poll: Mapped[dt.datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class MessageRemoval(Base):
    """A message an archive removed (public-inbox renamed its blob `m` to `d`): recorded, and the
    stored copy kept, so that a removal is never silent and can be reviewed."""

    __tablename__ = "message_removals"
    __table_args__ = (UniqueConstraint("source", "commit"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    msgid: Mapped[str] = mapped_column(String(998), index=True)
    list_name: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(Text)  # the archive, e.g. its URL or path
    commit: Mapped[str] = mapped_column(String(64))  # the commit that removed it
    reason: Mapped[str] = mapped_column(Text, default="")
    detected_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class IngestSkip(Base):
    """An archive commit whose message could not be read (its object missing or corrupt):
    recorded with the reason, and the walk goes on past it, so one bad object does not stop
    every later poll at the same place."""

    __tablename__ = "ingest_skips"
    __table_args__ = (UniqueConstraint("source", "commit"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(Text)  # the archive's URL or path, as its cursor's
    epoch: Mapped[int | None] = mapped_column(Integer)
    commit: Mapped[str] = mapped_column(String(64))
    object: Mapped[str] = mapped_column(String(64))  # the blob that could not be read
    reason: Mapped[str] = mapped_column(Text)
    detected_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class RulesEdition(Base):
    """The edition of lorelab's rules for reading mail that the oldest stored rows were made
    with (`bot.ingest.rules_edition`); one row, none while no mail is stored."""

    __tablename__ = "rules_edition"

    id: Mapped[int] = mapped_column(primary_key=True)  # always 1
    edition: Mapped[int] = mapped_column(Integer)


class QuarantinedMail(Base):
    """Input that could not be stored as a message, kept with the reason."""

    __tablename__ = "quarantine"

    id: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    source: Mapped[str] = mapped_column(Text)  # e.g. "mbox:/path/to/file#17"
    reason: Mapped[str] = mapped_column(Text)
    raw: Mapped[bytes] = mapped_column(CompressedMail)  # the input, or only its head
    raw_size: Mapped[int] = mapped_column(Integer)  # size of the input, not of what is kept
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    received_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class OutboxReply(Base):
    """A reply the bot wrote, from composition to delivery (bot.report.deliver.outbox).

    The row, with its Message-ID and the exact bytes, is committed before any delivery is tried:
    a retry sends these bytes again or nothing, never a second, different reply.
    """

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[str] = mapped_column(String(998), unique=True)  # without brackets
    kind: Mapped[str] = mapped_column(String(30), index=True)  # benchmark, build-failure, ...
    series_version_id: Mapped[int | None] = mapped_column(Integer, index=True)
    in_reply_to: Mapped[str] = mapped_column(String(998))
    subject: Mapped[str] = mapped_column(Text)
    author: Mapped[str] = mapped_column(String(320), index=True)  # the To address
    list_address: Mapped[str | None] = mapped_column(String(320), index=True)  # the first list
    lists: Mapped[list[str]] = mapped_column(JSON, default=list)  # every list among recipients
    recipients: Mapped[list[str]] = mapped_column(JSON, default=list)  # envelope, To first
    raw: Mapped[bytes] = mapped_column(LargeBinary)  # the message as it is sent
    # pending-approval, queued, sending, committing, sent, in-doubt, failed, rejected, suppressed
    state: Mapped[str] = mapped_column(String(20), index=True)
    reason: Mapped[str | None] = mapped_column(Text)  # why suppressed/rejected; sent: server's OK
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    transport: Mapped[str | None] = mapped_column(String(20))  # smtp or maildir, once tried
    claimed_by: Mapped[str | None] = mapped_column(String(300))  # host:pid:nonce of the sender
    lease_until: Mapped[dt.datetime | None]
    next_attempt_at: Mapped[dt.datetime | None]
    decided_by: Mapped[str | None] = mapped_column(String(200))  # who approved or rejected
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    send_started_at: Mapped[dt.datetime | None] = mapped_column(index=True)
    sent_at: Mapped[dt.datetime | None]


class Run(Base):
    """A request to apply, build or fully review one series version on one tree.

    Its steps are the units the workers run; the run's own state is derived from theirs."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    series_version_id: Mapped[int] = mapped_column(
        ForeignKey("series_versions.id", ondelete="CASCADE"), index=True
    )
    # apply, build, review; or a follow-up of a review (bot.runs.lifecycle.FOLLOW_UPS)
    kind: Mapped[str] = mapped_column(String(20))
    tree: Mapped[str] = mapped_column(String(200))  # a [[trees]] name
    requested_base: Mapped[str | None] = mapped_column(String(200))  # --base REV
    base_commit: Mapped[str | None] = mapped_column(String(64))  # chosen by the apply step
    base_reason: Mapped[str | None] = mapped_column(Text)  # "base-commit: ...", "head of ..."
    patched_commit: Mapped[str | None] = mapped_column(String(64))
    # queued running done failed cancelled superseded
    state: Mapped[str] = mapped_column(String(20), index=True)
    # Who asked: "cli", "auto" (the planner), "email:<address>" (a #lorelab command), "retest".
    trigger: Mapped[str] = mapped_column(String(400), default="cli", server_default="cli")
    # review runs: what to run
    benchmarks: Mapped[list[str]] = mapped_column(JSON, default=list, server_default="[]")
    runner: Mapped[str | None] = mapped_column(String(200))  # review runs: a lab host's name
    # A follow-up: the review run it follows, and what it was asked for (its kind's options).
    parent_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE", name="fk_runs_parent_run_id"), index=True)
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow)

    steps: Mapped[list[RunStep]] = relationship(
        back_populates="run", order_by="RunStep.id", cascade="all, delete-orphan"
    )


class RunStep(Base):
    """One step of a run (apply, build-base, build-patched): recorded before and after it runs,
    so that a worker killed mid-step leaves a `running` row that `lorelab runs resume` redoes."""

    __tablename__ = "run_steps"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    state: Mapped[str] = mapped_column(String(20), index=True)  # queued running done failed
    host: Mapped[str | None] = mapped_column(String(300))  # host:pid of the worker
    task_id: Mapped[str | None] = mapped_column(String(200))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    queued_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    # When last sent to the workers; None: never sent (`lorelab run` sends it; bot/runs/reaper.py).
    sent_at: Mapped[dt.datetime | None]
    started_at: Mapped[dt.datetime | None]
    finished_at: Mapped[dt.datetime | None]
    log_excerpt: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    run: Mapped[Run] = relationship(back_populates="steps")


class LabCampaign(Base):
    """One benchmark compared between two kernels on one lab host, in interleaved pairs.

    Part of a review run (`run_id`) or asked for directly (`lorelab bench`, no run). `result`
    holds the verdicts computed from the raw samples when the campaign ended (what the status
    page shows); the report step computes them again from the samples for the reply."""

    __tablename__ = "lab_campaigns"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), index=True
    )
    benchmark: Mapped[str] = mapped_column(String(100))  # "hackbench"
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    kernel_a: Mapped[str] = mapped_column(Text)  # the base kernel: a path, or "commit@tree"
    kernel_b: Mapped[str] = mapped_column(Text)  # the patched kernel
    # A follow-up's third kernel (the reviewer's alternative), its boots stored as kernel "C".
    kernel_c: Mapped[str | None] = mapped_column(Text)
    # What kernel B is within the run, when not simply "the series": "prefix 2/4", "aligned".
    arm: Mapped[str | None] = mapped_column(String(100))
    host: Mapped[str] = mapped_column(String(200))  # a [[lab.hosts]] name
    runner: Mapped[str] = mapped_column(String(20))  # local, qemu, ssh
    seed: Mapped[int] = mapped_column(Integer)  # draws each pair's order (AB or BA)
    warmup_pairs: Mapped[int] = mapped_column(Integer, default=1)
    k_min: Mapped[int] = mapped_column(Integer)
    k_max: Mapped[int] = mapped_column(Integer)
    orders: Mapped[list[str]] = mapped_column(JSON, default=list)  # "AB"/"BA" per measured pair
    state: Mapped[str] = mapped_column(String(20), index=True)  # queued running done failed
    error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # per-metric verdicts
    # Per kernel ("A", "B"): the machine its boots ran on, as the job there read it
    # (workers/lab/machine.py); None for campaigns stored before it was recorded.
    machine: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    started_at: Mapped[dt.datetime | None]
    finished_at: Mapped[dt.datetime | None]

    samples: Mapped[list[LabSample]] = relationship(
        back_populates="campaign", order_by="LabSample.id", cascade="all, delete-orphan"
    )


class LabSample(Base):
    """One raw value from one boot: everything needed to judge it again (workers.lab.pairs)."""

    __tablename__ = "lab_samples"

    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("lab_campaigns.id", ondelete="CASCADE"), index=True
    )
    metric: Mapped[str] = mapped_column(String(200))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(40), default="")
    kernel: Mapped[str] = mapped_column(String(1))  # "A" (base) or "B" (patched)
    pair_index: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)  # 0 first in its pair, 1 second
    host: Mapped[str] = mapped_column(String(200))
    boot_id: Mapped[str] = mapped_column(String(64))
    accel: Mapped[str] = mapped_column(String(10))  # kvm, tcg, bare, none
    time: Mapped[dt.datetime]
    warmup: Mapped[bool] = mapped_column(Boolean, default=False)

    campaign: Mapped[LabCampaign] = relationship(back_populates="samples")


class CommandRequest(Base):
    """A `#lorelab` command found in a reply: handled once (unique per mail and line), and
    counted for the per-sender rate limit."""

    __tablename__ = "command_requests"
    __table_args__ = (UniqueConstraint("message_id", "line"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[str] = mapped_column(String(998))  # the mail that held the command
    line: Mapped[int] = mapped_column(Integer)  # its line number in the body
    sender: Mapped[str] = mapped_column(String(320), index=True)
    command: Mapped[str] = mapped_column(String(40))  # test, retest, stop, help, or unknown
    arguments: Mapped[list[str]] = mapped_column(JSON, default=list)
    series_version_id: Mapped[int | None] = mapped_column(Integer, index=True)
    # accepted, refused, limited, answered, unverified, collapsed, failed
    state: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(Text)  # why refused; what was done
    run_id: Mapped[int | None] = mapped_column(Integer)  # the run it started, if any
    outbox_id: Mapped[int | None] = mapped_column(Integer)  # the answer, if any
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow, index=True)
    # The thread of the mail (answers are limited per thread), and who vouched for its From
    # ("DKIM signature of example.org"; None: nobody, the command was not acted on).
    thread_id: Mapped[int | None] = mapped_column(Integer, index=True)
    authenticated_by: Mapped[str | None] = mapped_column(String(300))
