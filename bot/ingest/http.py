"""Fetching from a list archive over HTTP: one polite requests session, retries, size caps.

Every fetch names lorelab and its version in User-Agent, has connect and read timeouts, backs
off on 429, 5xx and network errors (honouring Retry-After, within a cap), and never holds more
than a set number of bytes: a body is streamed raw and a gzip body (or Content-Encoding) is
inflated here with a cap, so that a gzip bomb is an error, not an out-of-memory kill.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from bot import __version__

log = logging.getLogger(__name__)

USER_AGENT = f"lorelab/{__version__} (patch review bot; +https://github.com/lorelab/lorelab)"
TIMEOUT = (10.0, 60.0)  # connect, read (between bytes): a hung server is an error, not a hang
MAX_BODY_BYTES = 64 * 2**20  # compressed or not, as sent
MAX_INFLATED_BYTES = 512 * 2**20  # a search result mbox after gunzip
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class FetchError(RuntimeError):
    """A fetch that failed for now; the text is the log line. `status` is the HTTP status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


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
            last = f"{method} {url}: {type(exc).__name__}: {exc}"
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
