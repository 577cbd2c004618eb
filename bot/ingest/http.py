"""Fetching from a list archive over HTTP: one polite requests session, retries, size caps.

Every fetch names lorelab and its version in User-Agent, has connect and read timeouts, backs
off on 429, 5xx and network errors (honouring Retry-After, within a cap), but not on a malformed
URL or a host name that does not resolve (no network: retrying cannot help), and never holds more
than a set number of bytes: a body is streamed raw and a gzip body (or Content-Encoding) is
inflated here with a cap, so that a gzip bomb is an error, not an out-of-memory kill.
"""

from __future__ import annotations

import logging
import socket
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

from bot import __version__

log = logging.getLogger(__name__)

USER_AGENT = f"lorelab/{__version__} (patch review bot; +https://github.com/lorelab/lorelab)"
TIMEOUT = (10.0, 60.0)  # connect, read (between bytes): a hung server is an error, not a hang
MAX_BODY_BYTES = 64 * 2**20  # compressed or not, as sent
MAX_INFLATED_BYTES = 512 * 2**20  # a search result mbox after gunzip
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class FetchError(RuntimeError):
    """A fetch that failed for now; the text is the log line. `status` is the HTTP status;
    `unreachable`: the URL is malformed or its host name does not resolve, so the text is all
    a user needs (no request was made)."""

    def __init__(self, message: str, status: int | None = None, *,
                 unreachable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.unreachable = unreachable


@dataclass
class Fetched:
    status: int
    body: bytes  # decoded from any Content-Encoding, capped
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


@dataclass
class HttpPolicy:
    """How hard to try. Tests shrink the waits; production keeps the defaults."""

    attempts: int = 4
    backoff: float = 2.0  # seconds before the second attempt, doubled after each
    max_wait: float = 120.0  # a Retry-After longer than this is cut to it
    timeout: tuple[float, float] = TIMEOUT
    max_body: int = MAX_BODY_BYTES
    max_inflated: int = MAX_INFLATED_BYTES
    sleep: Callable[[float], None] = time.sleep


def make_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = USER_AGENT
    session.headers["Accept-Encoding"] = "gzip"
    return session


def gunzip(data: bytes, limit: int, what: str) -> bytes:
    """Inflate a gzip (or zlib) body, refusing more than `limit` bytes out or a truncated input."""
    inflater = zlib.decompressobj(wbits=47)  # 32+15: gzip or zlib header, detected
    out = bytearray()
    pending = data
    while pending:
        out += inflater.decompress(pending, limit + 1 - len(out))
        if len(out) > limit:
            raise FetchError(f"{what}: more than {limit} bytes once decompressed (a gzip bomb?)")
        pending = inflater.unconsumed_tail
        if inflater.eof and inflater.unused_data:
            # Concatenated gzip members are legal (public-inbox writes one per message batch).
            pending = inflater.unused_data
            inflater = zlib.decompressobj(wbits=47)
    if not inflater.eof:
        raise FetchError(f"{what}: truncated gzip data ({len(data)} bytes received)")
    return bytes(out)


class _ReadFailed(Exception):
    """The connection broke or stalled mid-body: worth another attempt."""


def _read_capped(response: requests.Response, limit: int, what: str) -> bytes:
    out = bytearray()
    try:
        for chunk in response.raw.stream(65536, decode_content=False):
            out += chunk
            if len(out) > limit:
                raise FetchError(f"{what}: response over {limit} bytes; refused")
    except FetchError:
        raise
    except Exception as exc:  # noqa: BLE001 - urllib3's read and timeout errors have no common base
        raise _ReadFailed(f"{what}: reading the body failed: {type(exc).__name__}: {exc}") from None
    return bytes(out)


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost error under requests' and urllib3's wrappers (a socket error, mostly)."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__ or getattr(exc, "reason", None)
        if not isinstance(inner, BaseException) or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def _no_name(url: str) -> str:
    return f"cannot reach {urlsplit(url).hostname or url}: name does not resolve (no network?)"


def unreachable(url: str) -> str | None:
    """Why nothing at `url` can be fetched: its host name does not resolve (asked of the
    resolver, not the server); None when it resolves."""
    parts = urlsplit(url)
    if not parts.hostname:
        return f"{url!r} has no host name"
    try:
        socket.getaddrinfo(parts.hostname, parts.port or parts.scheme or None)
    except (socket.gaierror, UnicodeError, ValueError):
        return _no_name(url)
    return None


def _request_failed(exc: requests.RequestException, method: str, url: str) -> str:
    """A one-line log line for a failed request; FetchError when retrying cannot help."""
    if isinstance(exc, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                        requests.exceptions.InvalidSchema, requests.exceptions.URLRequired)):
        raise FetchError(f"{url!r} is not a URL lorelab can fetch (expected https://HOST/...)",
                         unreachable=True) from None
    cause = _root_cause(exc)
    if isinstance(cause, socket.gaierror):
        # No retry: without a network (or with a typo in the host) it fails the same way.
        raise FetchError(_no_name(url), unreachable=True) from None
    # urllib3's own text repeats the pool, the URL and the object's repr: 400 characters.
    return f"{method} {url}: {type(exc).__name__}: {cause if cause is not exc else exc}"


def _retry_after(value: str | None, default: float, cap: float) -> float:
    if value and value.strip().isdigit():
        return min(float(value.strip()), cap)
    return min(default, cap)


def fetch(
    session: requests.Session,
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    policy: HttpPolicy | None = None,
    ok: tuple[int, ...] = (200,),
) -> Fetched:
    """The response to `url` with a status in `ok` (and 304, 404, 410 as they are).

    Retries 429, 5xx and network errors with exponential backoff; raises FetchError when the
    attempts are used up or the body breaks a cap or a promise (truncated gzip).
    """
    policy = policy or HttpPolicy()
    wait = policy.backoff
    last = ""
    for attempt in range(1, policy.attempts + 1):
        try:
            response = session.request(
                method, url, headers=headers, timeout=policy.timeout, stream=True,
                allow_redirects=True,
            )
        except requests.RequestException as exc:
            last = _request_failed(exc, method, url)
            status = None
        else:
            with response:
                status = response.status_code
                if status in RETRY_STATUSES:
                    last = f"{method} {url}: HTTP {status}"
                    wait = _retry_after(response.headers.get("Retry-After"), wait, policy.max_wait)
                elif status in (*ok, 304, 404, 410):
                    try:
                        body = _read_capped(response, policy.max_body, f"{method} {url}")
                    except _ReadFailed as exc:
                        last = str(exc)
                    else:
                        hdrs = {k.lower(): v for k, v in response.headers.items()}
                        if hdrs.get("content-encoding", "").lower() in ("gzip", "x-gzip"):
                            body = gunzip(body, policy.max_inflated, f"{method} {url}")
                        return Fetched(status, body, hdrs)
                else:
                    raise FetchError(f"{method} {url}: HTTP {status}", status)
        if attempt < policy.attempts:
            log.warning("%s; retrying in %.0f s (attempt %d of %d)", last, wait, attempt,
                        policy.attempts)
            policy.sleep(wait)
            wait = min(wait * 2, policy.max_wait)
    raise FetchError(f"{last}; gave up after {policy.attempts} attempts", status)
