"""The patch titles a cover letter lists: the shortlog `git format-patch --cover-letter` and
`b4 send` write into it, one block per author, each in the order of the patches.

    Mike Rapoport (2):
      secretmem/gup: don't check if page is secretmem without reference
      secretmem: optimize page_is_secretmem()

format-patch wraps a long title at 72 columns (entries indented 2 spaces, their continuation
lines 4); plain `git shortlog`, which b4 uses, indents each entry 6 and never wraps. A block
counts only when it lists as many titles as its header says, so prose that happens to end in
"(2):" is no shortlog.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\S.* \((\d+)\):[ \t]*$")


def read_shortlog(body: str) -> tuple[tuple[str, ...], ...]:
    """The titles of each author block of the shortlog in `body`, in the order written."""
    lines = body.splitlines()
    blocks: list[tuple[str, ...]] = []
    for at, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is None:
            continue
        titles = _entries(lines, at + 1)
        if titles and len(titles) == int(header.group(1)):
            blocks.append(tuple(titles))
    return tuple(blocks)


def _entries(lines: list[str], start: int) -> list[str]:
    """The titles of the indented lines from `start`: a line indented as the first starts a
    title, one indented more continues it, and any other line ends the block."""
    titles: list[str] = []
    indent = 0
    for line in lines[start:]:
        text = line.lstrip(" \t")
        depth = len(line) - len(text)
        if not text or depth == 0 or (indent and depth < indent):
            break
        if not indent or depth == indent:
            indent = indent or depth
            titles.append(text.rstrip())
        else:
            titles[-1] += " " + text.rstrip()
    return titles


def same_title(a: str, b: str) -> bool:
    """Whether two titles are one, whatever the wrapping or folding of either."""
    return a.split() == b.split()
