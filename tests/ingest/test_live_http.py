"""Fetching from archives that misbehave: a small HTTP server of our own on 127.0.0.1 serving
HTML error pages, truncated gzip, a gzip bomb, 503/429 answers and a hang."""

from __future__ import annotations

import contextlib
import gzip
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sqlalchemy as sa

from bot import __version__
from bot.config import IngestSettings
from bot.db.models import IngestCursor, Message, QuarantinedMail
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, as_mbox, make_series, make_tree
from bot.ingest.epoch_slice import msgid_of
from bot.ingest.http import FetchError, HttpPolicy, fetch, make_session
from bot.ingest.lore import LoreSource

FAST = HttpPolicy(attempts=3, backoff=0.01, max_wait=0.05, timeout=(2.0, 0.5))


def atom(entries: list[str]) -> bytes:
    body = "".join(
        f'<entry><title>x</title><updated>2026-11-30T10:0{i}:00Z</updated>'
        f'<link href="{href}"/><id>urn:uuid:{i}</id></entry>'
        for i, href in enumerate(entries)
    )
    return (f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">'
            f"<title>t</title>{body}</feed>").encode()


class Archive:
    """What the fake server answers: path -> (status, headers, body) or a callable."""

    def __init__(self) -> None:
        self.routes: dict[str, object] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []


def _handler(archive: Archive) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            path = self.path.split("?", 1)[0]
            archive.requests.append((self.command, path, dict(self.headers)))
            route = archive.routes.get(path)
            if callable(route):
                route = route(self)
            if route is None:
                route = (404, {}, b"not found")
            status, headers, body = route
            self.send_response(status)
            for name, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        do_GET = do_POST = _answer

    return Handler


@pytest.fixture
def archive() -> Iterator[tuple[Archive, str]]:
    state = Archive()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")
    return make_series(tree, SeriesSpec(title="mm/vmscan: from a flaky server", patches=2))


def serve_list(state: Archive, base: str, series: list[bytes]) -> None:
    hrefs = []
    for raw in series:
        msgid = msgid_of(raw)
        hrefs.append(f"{base}/linux-mm/{msgid}/")
        state.routes[f"/linux-mm/{msgid}/raw"] = (200, {"Content-Type": "text/plain"},
                                                  as_mbox([raw]))
    state.routes["/linux-mm/new.atom"] = (200, {"Content-Type": "application/atom+xml",
                                                "ETag": '"v1"'}, atom(hrefs[::-1]))


def position(db: Database, url: str) -> tuple[dict, str | None]:
    with db.session() as session:
        row = session.scalar(sa.select(IngestCursor).where(IngestCursor.location == url))
        return (dict(row.position), row.last_error) if row else ({}, None)


def count(db: Database, model: type) -> int:
    with db.session() as session:
        return session.scalar(sa.select(sa.func.count()).select_from(model)) or 0


def test_a_poll_names_lorelab_and_asks_conditionally(archive, series, db: Database) -> None:
    state, base = archive
    serve_list(state, base, series)
    source = LoreSource(f"{base}/linux-mm", "linux-mm", policy=FAST)
    assert source.poll(db, IngestSettings(parse_workers=0)).ingest.stored == len(series)
    agents = {headers["User-Agent"] for _, _, headers in state.requests}
    assert agents == {f"lorelab/{__version__} (patch review bot; "
                      "+https://github.com/lorelab/lorelab)"}
    state.routes["/linux-mm/new.atom"] = lambda h: (
        (304, {}, b"") if h.headers.get("If-None-Match") == '"v1"' else (500, {}, b"")
    )
    assert source.poll(db, IngestSettings(parse_workers=0)).ingest.read == 0
    assert count(db, Message) == len(series)


def test_an_html_error_page_is_a_clear_error_and_moves_nothing(archive, series, db) -> None:
    state, base = archive
    serve_list(state, base, series)
    state.routes["/linux-mm/new.atom"] = (200, {"Content-Type": "text/html"},
                                          b"<html><body><h1>Maintenance</h1><p>soon</body>")
    source = LoreSource(f"{base}/linux-mm", "linux-mm", policy=FAST)
    with pytest.raises(FetchError, match="not an Atom feed.*text/html"):
        source.poll(db, IngestSettings(parse_workers=0))
    pos, error = position(db, f"{base}/linux-mm")
    assert pos == {} and "not an Atom feed" in error
    assert count(db, Message) == 0


def test_busy_answers_are_retried_with_backoff(archive, series, db) -> None:
    state, base = archive
    serve_list(state, base, series)
    good = state.routes["/linux-mm/new.atom"]
    answers = iter([(503, {}, b"busy"), (429, {"Retry-After": "1"}, b"slow down")])
    state.routes["/linux-mm/new.atom"] = lambda h: next(answers, good)
    waits: list[float] = []
    policy = HttpPolicy(attempts=3, backoff=0.01, max_wait=0.05, sleep=waits.append)
    LoreSource(f"{base}/linux-mm", "linux-mm", policy=policy).poll(db, IngestSettings())
    assert count(db, Message) == len(series)
    assert waits == [0.01, 0.05]  # doubled, and Retry-After: 1 cut to the cap


def test_a_malformed_feed_entry_is_quarantined_and_the_rest_stored(archive, series, db) -> None:
    state, base = archive
    serve_list(state, base, series)
    feed = state.routes["/linux-mm/new.atom"][2].replace(
        b"<entry>", b"<entry><title>no link</title></entry><entry>", 1
    )
    state.routes["/linux-mm/new.atom"] = (200, {"Content-Type": "application/atom+xml"}, feed)
    LoreSource(f"{base}/linux-mm", "linux-mm", policy=FAST).poll(db, IngestSettings())
    assert count(db, Message) == len(series)
    with db.session() as session:
        reasons = session.scalars(sa.select(QuarantinedMail.reason)).all()
    assert len(reasons) == 1 and "without a message link" in reasons[0]


def _outage_feed(state: Archive, base: str, series: list[bytes]) -> LoreSource:
    """A source whose feed shows only the first message (a later poll sees it moved on)."""
    serve_list(state, base, series[:1])
    return LoreSource(f"{base}/linux-mm", "linux-mm", policy=FAST)


def test_truncated_gzip_and_gzip_bomb_from_the_search_are_refused(archive, series, db) -> None:
    state, base = archive
    source = _outage_feed(state, base, series)
    source.poll(db, IngestSettings())  # saw the first message
    serve_list(state, base, series[1:])  # the feed moved on: none of what was seen is in it
    whole = gzip.compress(as_mbox(series))
    state.routes["/linux-mm/"] = (200, {"Content-Type": "application/gzip"}, whole[:-20])
    with pytest.raises(FetchError, match="truncated gzip"):
        source.poll(db, IngestSettings())
    before, error = position(db, f"{base}/linux-mm")
    assert "truncated gzip" in error and count(db, Message) == 1

    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = bomb.compress(b"\0" * (64 * 2**20)) + bomb.flush()  # 64 MiB in about 64 KiB
    state.routes["/linux-mm/"] = (200, {"Content-Type": "application/gzip"}, body)
    small = LoreSource(source.url, "linux-mm",
                       policy=HttpPolicy(attempts=1, max_inflated=8 * 2**20))
    with pytest.raises(FetchError, match="gzip bomb"):
        small.poll(db, IngestSettings())
    assert position(db, f"{base}/linux-mm")[0] == before  # the cursor did not move

    state.routes["/linux-mm/"] = (200, {"Content-Type": "application/gzip"}, whole)
    got = source.poll(db, IngestSettings())
    assert count(db, Message) == len(series) and got.ingest.stored == len(series) - 1
    searches = [p for method, p, _ in state.requests if method == "POST"]
    assert searches == ["/linux-mm/"] * 3


def test_a_hanging_server_times_out(archive) -> None:
    state, base = archive

    release = threading.Event()

    def hang(handler):
        release.wait(60)  # answers only after the client gave up, or never
        return (200, {}, b"")

    state.routes["/hang"] = hang
    try:
        with pytest.raises(FetchError, match="gave up after 3 attempts"):
            fetch(make_session(), f"{base}/hang", policy=FAST)
    finally:
        release.set()
    assert len(state.requests) == 3


def test_an_html_page_instead_of_the_search_mbox_is_an_error(archive, series, db) -> None:
    state, base = archive
    source = _outage_feed(state, base, series)
    source.poll(db, IngestSettings())
    serve_list(state, base, series[1:])
    state.routes["/linux-mm/"] = (200, {"Content-Type": "text/html"}, b"<html>oops</html>")
    with pytest.raises(FetchError, match="text/html, not a gzip mbox"):
        source.poll(db, IngestSettings())


