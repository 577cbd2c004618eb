"""How big the files a patch's `GIT binary patch` hunks make are, read before git sees them.

A binary hunk is zlib-compressed and base85-encoded: 1.3 MB of mail can say `literal 1073741824`
and git apply inflates it whole in memory (2.1 GB RSS, outside the sandbox). Its header gives
the inflated size (`literal N`); a `delta N` hunk inflates to N bytes of delta whose own header
says how big the file it makes is, and a few bytes of copy instructions can make a huge file
from a small one: so that header is read too (the first bytes only, inflated with a cap).
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

_HUNK = re.compile(rb"^(literal|delta) (\d+)\r?\n((?:[A-Za-z]\S*\r?\n)*)", re.M)
_HEADER_BYTES = 32  # two varints of at most 10 bytes each, with room


@dataclass(frozen=True)
class BinaryHunk:
    kind: str  # "literal" or "delta"
    data_bytes: int  # what the hunk inflates to (its header's N)
    result_bytes: int  # the size of the file it makes


def binary_hunks(mbox: bytes) -> Iterator[BinaryHunk]:
    """Every binary hunk of every patch in `mbox` (both directions of each file)."""
    for match in _HUNK.finditer(mbox):
        kind, size = match[1].decode(), int(match[2])
        result = size if kind == "literal" else _delta_result_size(match[3])
        yield BinaryHunk(kind, size, result)


def _delta_result_size(lines: bytes) -> int:
    """The target size in a git delta's header; what cannot be read counts as 0 (git then
    refuses the hunk itself)."""
    inflater = zlib.decompressobj()
    data = b""
    for line in lines.splitlines()[:4]:
        line = line.rstrip(b"\r")
        length = line[0] - (ord("A") - 1) if line[:1].isupper() else line[0] - (ord("a") - 27)
        try:
            decoded = base64.b85decode(line[1:])[:length]
            data += inflater.decompress(decoded, _HEADER_BYTES - len(data))
        except (ValueError, zlib.error):
            return 0
        if len(data) >= _HEADER_BYTES:
            break
    sizes = []
    position = 0
    for _ in range(2):  # source size, then target size
        value = shift = 0
        while position < len(data):
            byte = data[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(value)
    return sizes[1]
