"""Following a lore (public-inbox) list over HTTP: the Atom feed, each message's raw, and a
search backfill when the feed has moved on further than the last poll saw.

A poll reads `<URL>/new.atom` (conditionally: ETag / If-Modified-Since), fetches `raw` for each
entry not seen before, and stores them together with the new cursor (`bot.ingest.live`). The
feed shows only the newest 25 or so messages: when none of the messages the last poll saw is in
it any more, the bot was away too long, and `POST <URL>/?q=d:START..&x=m` (a gzip mbox of every
message since START) fills the gap first. Parsing the feed and the mbox are pure functions.
"""

from __future__ import annotations

import datetime as dt
import logging
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import requests

from bot.config import IngestSettings, ListSettings, PlanSettings
from bot.db.session import Database
from bot.ingest.cursor import CursorKey, load_position, record_poll
from bot.ingest.http import FetchError, HttpPolicy, fetch, gunzip, make_session
from bot.ingest.live import LiveSummary, Step, store_steps
from bot.ingest.missing_context import fetch_missing_context
from bot.ingest.sources import RawMail, split_mbox_bytes

log = logging.getLogger(__name__)

ATOM = "{http://www.w3.org/2005/Atom}"
SEEN_KEEP = 500  # message-ids of recent feeds remembered, to tell new entries from old
BACKFILL_MARGIN = dt.timedelta(days=1)  # search from a day before the newest mail seen


@dataclass(frozen=True)
class FeedEntry:
    msgid: str  # without angle brackets
    updated: dt.datetime | None


def _msgid_of_link(href: str) -> str | None:
    path = urlsplit(href).path.rstrip("/")
    last = path.rsplit("/", 1)[-1] if "/" in path else ""
    msgid = unquote(last)
    return msgid if "@" in msgid or (msgid and "." in msgid) else None


def _parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def parse_feed(xml: bytes) -> tuple[list[FeedEntry], list[tuple[bytes, str]]]:
    """Entries of an Atom feed in feed order (newest first), and the entries that make no sense
    (as bytes, with why). Raises ValueError when the document is not an Atom feed at all."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"not an Atom feed: {exc}") from None
    if root.tag != f"{ATOM}feed":
        raise ValueError(f"not an Atom feed: the root element is {root.tag!r}")
    entries: list[FeedEntry] = []
    bad: list[tuple[bytes, str]] = []
    for entry in root.iter(f"{ATOM}entry"):
        link = entry.find(f"{ATOM}link")
        href = link.get("href") if link is not None else None
        msgid = _msgid_of_link(href) if href else None
        if msgid is None:
            bad.append((ET.tostring(entry), f"feed entry without a message link (href={href!r})"))
            continue
        entries.append(FeedEntry(msgid, _parse_time(entry.findtext(f"{ATOM}updated"))))
    return entries, bad


class LoreSource:
    """One list on a public-inbox HTTP server, e.g. http://127.0.0.1:8080/linux-mm."""

    kind = "lore"

    def __init__(
        self,
        url: str,
        list_name: str | None,
        *,
        session: requests.Session | None = None,
        policy: HttpPolicy | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.key = CursorKey(self.kind, self.url, list_name)
        self.session = session or make_session()
        self.policy = policy or HttpPolicy()

    # ---- reading

    def raw(self, msgid: str) -> bytes | None:
        """A message as the archive keeps it; None when the archive does not have it (404)."""
        got = fetch(self.session, f"{self.url}/{quote(msgid, safe='@')}/raw", policy=self.policy)
        if got.status in (404, 410):
            return None
        if got.content_type == "text/html":
            raise FetchError(f"{self.url}: raw of <{msgid}> answered an HTML page, not a message")
        messages = list(split_mbox_bytes(got.body))
        return messages[0] if messages else b""

    def thread(self, msgid: str) -> list[bytes]:
        """Every message of the thread holding `msgid`; [] when the archive does not have it."""
        return self._gzip_mbox("GET", f"{self.url}/{quote(msgid, safe='@')}/t.mbox.gz")

    def search_mbox(self, query: str) -> list[bytes]:
        """Every message matching a public-inbox search query."""
        return self._gzip_mbox("POST", f"{self.url}/?q={quote(query, safe=':.')}&x=m")

    def _gzip_mbox(self, method: str, url: str) -> list[bytes]:
        got = fetch(self.session, url, method=method, policy=self.policy)
        if got.status in (404, 410):
            return []  # public-inbox answers 404 when nothing matches
        if not got.body.startswith(b"\x1f\x8b"):
            raise FetchError(
                f"{method} {url}: answered {got.content_type or 'untyped data'}, not a gzip mbox"
            )
        return list(split_mbox_bytes(gunzip(got.body, self.policy.max_inflated, f"{method} {url}")))

    # ---- one poll

    def steps(self, position: dict[str, Any]) -> tuple[list[Step], bool]:
        """What this poll stores, ending in the new cursor; and whether it backfilled."""
        headers = {}
        if position.get("etag"):
            headers["If-None-Match"] = position["etag"]
        if position.get("last_modified"):
            headers["If-Modified-Since"] = position["last_modified"]
        got = fetch(self.session, f"{self.url}/new.atom", headers=headers, policy=self.policy)
        if got.status == 304:
            return [], False
        if got.status != 200:
            raise FetchError(f"{self.url}/new.atom: HTTP {got.status}", got.status)
        try:
            entries, bad = parse_feed(got.body)
        except ValueError as exc:
            raise FetchError(
                f"{self.url}/new.atom: {exc} (answered {got.content_type or 'untyped data'})"
            ) from None
        seen = list(position.get("seen", []))
        seen_set = set(seen)
        new = [e for e in entries if e.msgid not in seen_set]
        steps: list[Step] = []
        backfilled = bool(seen) and bool(entries) and len(new) == len(entries)
        if backfilled:
            start = _parse_time(position.get("newest")) or dt.datetime.now(dt.UTC)
            query = f"d:{(start - BACKFILL_MARGIN).strftime('%Y%m%d')}.."
            log.warning("%s: the feed moved past the last poll; backfilling with %s", self.url,
                        query)
            for index, raw in enumerate(self.search_mbox(query), start=1):
                steps.append(Step(mail=RawMail(raw, f"lore-search:{self.url}#{index}")))
        for entry in reversed(new):  # oldest first, as they arrived
            raw = self.raw(entry.msgid)
            origin = f"lore:{self.url}/{entry.msgid}"
            if raw is None:
                missing = RawMail(entry.msgid.encode(), origin)
                steps.append(Step(bad=(missing, "listed in the feed, but its raw is not found")))
            else:
                steps.append(Step(mail=RawMail(raw, origin)))
        for data, reason in bad:
            steps.append(Step(bad=(RawMail(data, f"lore:{self.url}/new.atom"), reason)))
        times = [e.updated for e in entries if e.updated] + [
            t for t in [_parse_time(position.get("newest"))] if t
        ]
        fresh = [e.msgid for e in entries]
        steps.append(
            Step(
                position={
                    "etag": got.headers.get("etag"),
                    "last_modified": got.headers.get("last-modified"),
                    "seen": (fresh + [m for m in seen if m not in set(fresh)])[:SEEN_KEEP],
                    "newest": max(times).isoformat() if times else None,
                }
            )
        )
        return steps, backfilled

    def poll(
        self, db: Database, settings: IngestSettings, known_lists: list[ListSettings] | None = None,
        max_age_days: int = PlanSettings.max_age_days,
    ) -> LiveSummary:
        """Read what is new and store it with the cursor; errors are recorded, then raised."""
        started = dt.datetime.now(dt.UTC)
        try:
            steps, _ = self.steps(load_position(db, self.key))
            summary = store_steps(db, steps, key=self.key, settings=settings,
                                  known_lists=known_lists)
            context = fetch_missing_context(db, self, started, settings, known_lists,
                                            max_age_days)
            summary.ingest.add(context.ingest)
        except Exception as exc:
            record_poll(db, self.key, f"{type(exc).__name__}: {exc}")
            raise
        record_poll(db, self.key, None)
        return summary
