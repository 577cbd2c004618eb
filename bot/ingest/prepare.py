"""Turning raw mail into rows ready to store: parsing, compressing, passing the storable gate
(`bot.ingest.storable`), or a quarantine record.

Pure CPU work with no database, so it runs in worker processes while the main process writes:
a backfill of a whole archive is bound by parsing, and this machine has more than one core.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import gc
import hashlib
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any, NamedTuple

import orjson
from sqlalchemy import JSON

from bot.config import IngestSettings
from bot.db.models import Message, compress_mail, pack_mail
from bot.db.session import json_text
from bot.ingest.collector import no_collection
from bot.ingest.epoch_slice import EpochSlice, Removal, Skip
from bot.ingest.sources import MboxFile, MboxSlice, RawMail, renumbered
from bot.ingest.spool import Spool, hand_over, take_back
from bot.ingest.storable import EncodedRowGate, clean_quarantine, make_storable
from bot.mail import ParsedMessage, UnparseableMessage, parse_message
from bot.mail.record import REPLY_KINDS
from bot.mail.trailers import REVIEW_TRAILERS

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
QUARANTINE_KEEP_BYTES = 256 * 1024  # of an oversized mail, keep the head: enough to see what it was
WORKER_GC_THRESHOLD = 100_000  # a parse worker's first-generation threshold (the default: 700)
# Raw mail a worker parses before it builds those mails' rows: what it holds parsed at once is
# about as much again (text capped per mail at `bot.mail.mime.TEXT_CAP`).
PARSED_CHUNK_BYTES = 16 * 2**20


@dataclass
class PreparedBatch:
    """One batch of mail, parsed: message rows to insert and quarantine rows; from an epoch
    slice also its removals and skips, and the cursor position that holds once it is stored."""

    read: int = 0
    bytes_read: int = 0
    messages: list[MessageRow] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)  # QuarantinedMail columns
    removals: list[Removal] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    position: dict[str, str] = field(default_factory=dict)


def quarantine_row(mail: RawMail, reason: str, keep: int | None = None) -> dict[str, Any]:
    kept = mail.data if keep is None else mail.data[:keep]
    row = {
        "sha256": hashlib.sha256(mail.data).hexdigest(),
        "source": mail.origin,
        "reason": reason,
        "raw": pack_mail(kept),
        "raw_size": len(mail.data),
        "truncated": len(kept) < len(mail.data),
    }
    clean_quarantine(row)
    return row


class MessageRow(NamedTuple):
    """A `messages` row as a parse worker hands it to the store: every column but those the
    store fills in (`id`, `thread_id`, `ingested_at`), each value as the database takes it:
    the JSON columns as the text stored (`json_text`), `raw` compressed. `date` comes last: the
    one value the store still converts for its database.

    A tuple, not a dict of the columns: the storing process unpickles every row, and a dict of
    them, its JSON values as Python lists, took twice as long to unpickle and was then turned
    into a tuple for the driver. `key in row` asks whether the row has that column, as for a
    quarantine row, the dict that `prepare_batch` tells it apart from."""

    msgid: str
    in_reply_to: str | None
    references: str  # JSON: the Message-IDs of References, in order
    from_name: str
    from_email: str
    subject: str
    title: str
    kind: str
    reply: bool
    version: int
    version_explicit: bool
    counter: int
    total: int
    rfc: bool
    resend: bool
    prefixes: str  # JSON
    list_id_header: str | None
    base_commit: str | None
    change_id: str | None
    patch_fingerprint: str | None
    files: str  # JSON
    insertions: int
    deletions: int
    trailers: str  # JSON: [name, value] pairs
    problems: str  # JSON
    raw: bytes  # zstd-compressed, as `CompressedMail` stores it
    raw_size: int
    claimed_msgid: str | None  # set by the store for a copy (`bot.ingest.copies`)
    date: dt.datetime | None

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as `tuple.__new__(MessageRow, values)`, made in C when unpickled: a named
        # tuple's own way calls Python functions for every row, a quarter of pickling a batch.
        return (tuple.__new__, (MessageRow, tuple(self)))


_JSON_COLUMNS = tuple(c.key for c in Message.__table__.c if isinstance(c.type, JSON))
_JSON_AT = tuple(MessageRow._fields.index(key) for key in _JSON_COLUMNS)
_AS_IS = EncodedRowGate(MessageRow._fields)


def message_row(
    parsed: ParsedMessage, raw: bytes, compressed: bytes | None = None
) -> MessageRow:
    """The `messages` columns for a parsed message, as both databases can store them; `raw`
    compressed here unless `compressed` (as stored) is given.

    Built as a list in the row's order and checked there (`EncodedRowGate`): a dict of the
    columns, walked by `make_storable` and then turned into the tuple, is made only for the
    rare row the gate does not pass, and cost a sixth of preparing a mail."""
    s = parsed.subject
    plain = [  # the JSON columns as values; in MessageRow order
        parsed.msgid, parsed.in_reply_to, parsed.references,
        parsed.sender.name[:500], parsed.sender.email[:320],
        s.raw, s.title, parsed.kind.value, s.reply, s.version, s.version_explicit, s.counter,
        s.total, s.rfc, s.resend, list(s.prefixes),
        parsed.list_id, parsed.base_commit, parsed.change_id, parsed.patch_fingerprint,
        # vars, not asdict: a FileChange holds plain values, and asdict's deep copy was 40% of
        # building the row
        [{k: v for k, v in vars(f).items() if v not in (None, False)} for f in parsed.files],
        parsed.insertions, parsed.deletions,
        [[t.name, t.value] for t in parsed.trailers],
        parsed.problems,
        compress_mail(raw) if compressed is None else compressed, len(raw), None, parsed.date,
    ]  # fmt: skip
    row = plain.copy()
    try:
        for at in _JSON_AT:
            row[at] = json_text(row[at])
        as_is = _AS_IS(row, parsed.references)
    except TypeError:  # orjson refuses a lone surrogate
        as_is = False
    if not as_is:
        columns = dict(zip(MessageRow._fields, plain, strict=True))
        make_storable(columns)  # here, in the parse workers: storing is the one process that waits
        for key in _JSON_COLUMNS:
            columns[key] = json_text(columns[key])
        row = list(columns.values())
    return MessageRow._make(row)


def has_review_trailers(row: MessageRow) -> bool:
    """Whether the message is a reply that gives trailers (a review, with or without "Re:")."""
    return row.kind in REPLY_KINDS and row.trailers != "[]" and any(
        name in REVIEW_TRAILERS for name, _ in orjson.loads(row.trailers)
    )  # "[]": as orjson writes an empty list (`json_text`)


def prepare_mail(mail: RawMail, settings: IngestSettings) -> MessageRow | dict[str, Any]:
    """A message row, or a quarantine row (it has a "reason") saying why there is none."""
    read = read_mail(mail, settings)
    return read if isinstance(read, dict) else row_of(mail, read)


def read_mail(mail: RawMail, settings: IngestSettings) -> ParsedMessage | dict[str, Any]:
    """The mail parsed, or a quarantine row (it has a "reason") saying why it cannot be."""
    size = len(mail.data)
    if size > settings.max_message_bytes:
        return quarantine_row(
            mail,
            f"message is {size / 2**20:.1f} MiB, over the {settings.max_message_bytes / 2**20:.1f}"
            " MiB limit; raise [ingest] max_message_bytes and ingest it again to keep it",
            keep=QUARANTINE_KEEP_BYTES,
        )
    if not mail.data or mail.data.isspace():  # as `not strip()`, without copying the mail
        return quarantine_row(mail, "empty input: no headers and no body")
    try:
        return parse_message(mail.data, recipients=False)
    except UnparseableMessage as exc:
        return quarantine_row(mail, str(exc))
    except Exception as exc:  # noqa: BLE001 - one bad mail must not stop the batch
        return _failed(mail, exc)


def row_of(mail: RawMail, parsed: ParsedMessage) -> MessageRow | dict[str, Any]:
    """The message row of a parsed mail, or a quarantine row if building it fails."""
    try:
        return message_row(parsed, mail.data)
    except Exception as exc:  # noqa: BLE001 - one bad mail must not stop the batch
        return _failed(mail, exc)


def _failed(mail: RawMail, exc: Exception) -> dict[str, Any]:
    return quarantine_row(
        mail, f"{parser_failure(exc)}; once fixed, `lorelab quarantine retry` stores it"
    )


def parser_failure(exc: Exception) -> str:
    """What to say of a mail the parser failed on with `exc` (not one it refused as no mail)."""
    return f"lorelab failed to parse this mail ({type(exc).__name__}: {exc}); a bug"


Batch = list[RawMail] | MboxSlice | EpochSlice


def prepare_batch(batch: Batch, settings: IngestSettings) -> PreparedBatch:
    """Parse a batch: mail read by the caller, or a slice of an mbox or of an archive's epoch
    that this process reads."""
    out = PreparedBatch()
    if isinstance(batch, MboxSlice):
        mails = batch.mails()
    elif isinstance(batch, EpochSlice):
        mails = []
        for item in batch.read():
            if isinstance(item, RawMail):
                mails.append(item)
            else:
                (out.removals if isinstance(item, Removal) else out.skips).append(item)
        out.position = batch.position()
    else:
        mails = batch
    out.read, out.bytes_read = len(mails), sum(len(m.data) for m in mails)
    with no_collection():  # parsing makes no cycles worth a collection mid-batch
        for chunk in _chunks(mails, PARSED_CHUNK_BYTES):
            # All of a chunk parsed, then its rows built (and mail compressed): one mail at a
            # time, the two took 8-12% more CPU (alternating runs on the benchmark's mail).
            for mail, read in zip(chunk, [read_mail(mail, settings) for mail in chunk],
                                  strict=True):
                row = read if isinstance(read, dict) else row_of(mail, read)
                (out.quarantine if "reason" in row else out.messages).append(row)
    return out


def _chunks(mails: list[RawMail], most_bytes: int) -> Iterator[list[RawMail]]:
    """`mails` in runs of consecutive mails of at most `most_bytes` (or one larger mail)."""
    chunk: list[RawMail] = []
    size = 0
    for mail in mails:
        if chunk and size + len(mail.data) > most_bytes:
            yield chunk
            chunk, size = [], 0
        chunk.append(mail)
        size += len(mail.data)
    if chunk:
        yield chunk


def batched(items: Iterable[RawMail], size: int) -> Iterator[list[RawMail]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def die_with_parent(parent: int) -> None:
    """A parse worker ends when the process that started it (`parent`) does, even by SIGKILL:
    otherwise it would wait on its task queue forever (Linux: PR_SET_PDEATHSIG). What the
    worker holds once started lives as long as it does: frozen, out of every collection.
    Parsing makes no reference cycles (none in 20,000 list mails, nor in the 11,000 mails the
    tests parse), yet with the collector's default threshold it walked the rows of each batch
    twice as it ran again after it: 3% of a worker's CPU. It runs once `WORKER_GC_THRESHOLD`
    more container objects exist than were freed, over what a batch's rows are (about 15 per
    message), and so still bounds what a cycle could hold."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)
    gc.freeze()  # what the worker started with lives as long as it does
    gc.set_threshold(WORKER_GC_THRESHOLD)


def prepared_batches(
    mails: Iterable[RawMail] | MboxFile, settings: IngestSettings
) -> Iterator[PreparedBatch]:
    """Batches of `mails` in input order (see `prepare_all`). A plain mbox file is handed to the
    workers as slices: they find, read and split the mail themselves."""
    if isinstance(mails, MboxFile) and mails.plain():
        return _numbered_in_file(prepare_all(mails.slices(settings.batch_size), settings))
    return prepare_all(batched(mails, settings.batch_size), settings)


def _numbered_in_file(batches: Iterator[PreparedBatch]) -> Iterator[PreparedBatch]:
    """The batches of an mbox's slices, in file order, each quarantine row's source numbering
    its entry in the file, not in the slice as the worker had to (`MboxSlice`); a slice that
    held no entry is left out. Every entry of a slice is read as one mail."""
    before = 0
    for batch in batches:
        for row in batch.quarantine:
            row["source"] = renumbered(row["source"], before)
        before += batch.read
        if batch.read:
            yield batch


def prepare_all(batches: Iterable[Batch], settings: IngestSettings) -> Iterator[PreparedBatch]:
    """Each batch prepared, in input order; in worker processes when there is more than one."""
    batches = iter(batches)
    head = list(islice(batches, 2))
    if len(head) < 2 or settings.parse_workers <= 0:
        # One batch (a delivery, a small file): starting processes would cost more than it saves.
        for batch in chain(head, batches):
            yield prepare_batch(batch, settings)
        return
    workers = settings.parse_workers
    with Spool() as spool, ProcessPoolExecutor(
        max_workers=workers, initializer=die_with_parent, initargs=(os.getpid(),)
    ) as pool:
        # The batch stays beside its future (the pool holds it until the result comes anyway):
        # should its prepared file be lost, it is prepared again here.
        pending: deque[tuple[Batch, Future[str | PreparedBatch]]] = deque()

        def received() -> PreparedBatch:
            batch, future = pending.popleft()
            return take_back(future.result(), lambda: prepare_batch(batch, settings))

        for batch in chain(head, batches):
            pending.append((batch, pool.submit(_prepare_into, batch, settings, spool.path)))
            if len(pending) > 2 * workers:  # bounded read-ahead keeps memory flat
                yield received()
        while pending:
            yield received()


def _prepare_into(batch: Batch, settings: IngestSettings, spool: str) -> str | PreparedBatch:
    """In a parse worker: the batch prepared and handed over through the spool."""
    return hand_over(prepare_batch(batch, settings), spool)
