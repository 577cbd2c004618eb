"""Where the public keys of DKIM signatures come from: DNS TXT records, kept for a while, or a
local table of the same records (offline: tests, or a host without DNS).

A key table is a text file of `NAME TXT-RECORD` lines, e.g.

    test._domainkey.example.org v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQ...

blank lines and `#` comments allowed. `[commands] dkim_keys` names it; when it is set, DNS is
never asked. A `CachedTxt` is what dkimpy calls `dnsfunc`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import dkim.dnsplug

from bot.config.sections import CommandSettings

TxtLookup = Callable[[str], bytes | None]  # a DNS name (no final dot) -> its TXT, or None
DNS_TIMEOUT = 5.0  # seconds per lookup: one slow name server must not hold a round for long


def dns_txt(name: str) -> bytes | None:
    """The TXT record at `name`, from DNS; None when there is none."""
    # dkimpy wants bytes; the final dot keeps the resolver's search domains off the name.
    return dkim.dnsplug.get_txt(name.encode("ascii", "replace") + b".", timeout=DNS_TIMEOUT)


def table_txt(path: str | Path) -> TxtLookup:
    """Look names up in the key table at `path` (read once)."""
    records: dict[str, bytes] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"[commands] dkim_keys = {str(path)!r} cannot be read ({exc}); "
                         "name a key table, or leave it empty to ask DNS") from None
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, record = line.partition(" ")
            records[_normal(name)] = record.strip().encode()
    return lambda name: records.get(_normal(name))


def _normal(name: str | bytes) -> str:
    if isinstance(name, bytes):
        name = name.decode("ascii", errors="replace")
    return name.strip().rstrip(".").lower()


class CachedTxt:
    """TXT lookups that ask `lookup` once per name per `ttl_seconds` (answers and "none"
    alike; a failed lookup is not kept). `lookups` counts what went to `lookup`."""

    def __init__(self, lookup: TxtLookup, ttl_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.lookup = lookup
        self.ttl = ttl_seconds
        self.clock = clock
        self.lookups = 0
        self._kept: dict[str, tuple[float, bytes | None]] = {}

    def __call__(self, name: str | bytes, timeout: float = DNS_TIMEOUT) -> bytes | None:
        """dkimpy's `dnsfunc(name, timeout=...)`."""
        key = _normal(name)
        now = self.clock()
        kept = self._kept.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]
        self.lookups += 1
        record = self.lookup(key)
        self._kept[key] = (now + self.ttl, record)
        return record


_SHARED: dict[tuple[str, int], CachedTxt] = {}  # one cache per key source, for the process


def key_records(settings: CommandSettings) -> CachedTxt:
    """The process's cached key lookups for these settings: the key table, else DNS."""
    source = (settings.dkim_keys, settings.dns_cache_minutes)
    if source not in _SHARED:
        lookup = table_txt(settings.dkim_keys) if settings.dkim_keys else dns_txt
        _SHARED[source] = CachedTxt(lookup, ttl_seconds=60 * settings.dns_cache_minutes)
    return _SHARED[source]
