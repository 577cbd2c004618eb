"""The unified diff in a message body: where it is, which files it touches, and its fingerprint.

A small parser of its own rather than `unidiff`: unidiff needs the diff already cut out of the
mail, raises on the first hunk whose line counts do not match (mail clients routinely re-wrap
long lines and strip trailing blanks, as in a Gmail reply), and builds an object per line, which
alone costs more than parsing the whole message. This one moves a cursor over the body text:
file headers are read line by line (they are few), while a hunk is checked in one go by
counting its `+`, `-` and ` ` lines against the counts in its `@@` header: all hunks of a file
together, from one regex pass taking the first character of each line (`_read_hunks`), or,
when one of them fails, each with str.count over its text (`_read_hunk`). Only hunks that fail
that check (wrapped lines, a diff cut off, text right after it) are walked line by line. The
hunk counts are also what tells a removed line `--- x` from the next file header.

Only lines at column 0 count: a diff quoted in a reply (`> diff --git ...`) is not this
message's diff.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass, field

from bot.mail.record import FileChange

_STARTS = ("diff --git ", "Index: ", "--- ")
# Where a diff may start: a line beginning with one of _STARTS. A regex anchored with re.M
# tries every character (~7 us per KB); one starting with a literal "\n" jumps between newlines.
_NEXT_START = re.compile(r"\n(?:diff --git |Index: |--- )")
# Lines that cannot be inside a hunk (unless it is mangled): where a fast hunk check stops.
_HUNK_BOUNDARY = re.compile(r"\n(?:@@ |diff --git |-- \n|Index: |base-commit: |\n)")
_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# For `_read_hunks`: where a file's run of hunks ends (_HUNK_BOUNDARY but `@@ `), the first
# character of each line ("" after the newline that ends the run), and the hunk header lines.
_HUNKS_END = re.compile(r"\n(?:diff --git |-- \n|Index: |base-commit: |\n)")
_LINE_MARK = re.compile(r"\n(.?)")
_HUNK_SPLIT = re.compile(r"\n@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@[^\n]*")
# `git diff --stat` summary line, as b4 recognises a diffstat
DIFFSTAT = re.compile(r"^\s*\d+ file.*\d+ (?:insertion|deletion)", re.M | re.I)
_MAX_JUNK = 3  # consecutive non-diff lines tolerated inside a hunk (mail-wrapped lines)


@dataclass
class DiffScan:
    """A body split into the diff and the prose around it."""

    prose: str  # the body without the diff lines
    lead: str  # the prose before the first diff line: a patch's commit message and diffstat
    diff: str | None  # the diff lines, joined; None when the body carries no diff
    files: list[FileChange] = field(default_factory=list)
    fingerprint: str | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class _File:
    old: str | None = None  # paths without a/ b/ prefixes; None for /dev/null
    new: str | None = None
    change: str = "modify"
    mode_changed: bool = False
    new_mode: str = ""
    binary: bool = False
    added: int = 0
    removed: int = 0
    hashed: list[str] = field(default_factory=list)  # content text for the fingerprint


def scan_diff(body: str) -> DiffScan:
    """Find the diff in a message body (CRLF or LF) and describe it."""
    pos = _next_candidate(body, 0)
    if pos < 0:
        return DiffScan(prose=body, lead=body, diff=None)
    if "\r" in body:
        body = body.replace("\r\n", "\n")
        pos = _next_candidate(body, 0)
    size = len(body)
    prose = [body[:pos]]
    diff: list[str] = []
    files: list[_File] = []
    problems: list[str] = []
    lead_end = -1
    while pos < size:
        if _starts_file(body, pos):
            if lead_end < 0:
                lead_end = pos
            start = pos
            pos = _read_file(body, pos, files, problems)
            while pos < size and _starts_file(body, pos):
                pos = _read_file(body, pos, files, problems)
            diff.append(body[start:pos])
        else:
            match = _NEXT_START.search(body, pos)  # the line at pos is not a start
            following = match.start() + 1 if match else size
            prose.append(body[pos:following])
            pos = following
    if not files:
        return DiffScan(prose=body, lead=body, diff=None)
    diff_text = "".join(diff)
    return DiffScan(
        prose="".join(prose),
        lead=body[:lead_end],
        diff=diff_text if diff_text.endswith("\n") else diff_text + "\n",
        files=[_finish(f) for f in files],
        fingerprint=_fingerprint(files),
        problems=problems,
    )


def patch_fingerprint(diff: str) -> str | None:
    """An id of the change a diff makes, like `git patch-id --stable`: same change, same id.

    Whitespace, hunk line numbers, `index` lines and the order of files do not matter, so a
    patch rebased or reposted unchanged in a new version keeps its id. None when no diff.
    """
    return scan_diff(diff).fingerprint


def _next_candidate(text: str, pos: int) -> int:
    """Offset of the first line at or after `pos` (a line start) that may start a diff, or -1."""
    if text.startswith(_STARTS, pos):
        return pos
    match = _NEXT_START.search(text, pos)
    return match.start() + 1 if match else -1


def _line(text: str, pos: int) -> tuple[str, int]:
    """The line starting at `pos`, without its newline, and the offset of the next line."""
    end = text.find("\n", pos)
    if end < 0:
        return text[pos:], len(text)
    return text[pos:end], end + 1


def _starts_file(text: str, pos: int) -> bool:
    if text.startswith("diff --git ", pos):
        return True
    if text.startswith("--- ", pos):
        return text.startswith("+++ ", _line(text, pos)[1])
    if text.startswith("Index: ", pos):
        # quilt/CVS style: "Index: path", maybe a ==== rule, then the ---/+++ pair
        pos = _line(text, pos)[1]
        for _ in range(3):
            if text.startswith("--- ", pos):
                return text.startswith("+++ ", _line(text, pos)[1])
            line, pos = _line(text, pos)
            if line and not line.startswith("="):
                return False
    return False


def _read_file(text: str, pos: int, files: list[_File], problems: list[str]) -> int:
    """Read one file's section starting at `pos`; return the offset after it."""
    size = len(text)
    current = _File()
    files.append(current)
    if text.startswith("Index: ", pos):
        while pos < size and not text.startswith("--- ", pos):
            pos = _line(text, pos)[1]
    elif text.startswith("diff --git ", pos):
        line, pos = _line(text, pos)
        current.old, current.new = _git_header_paths(line[11:])
        while pos < size:
            if text.startswith(("--- ", "@@ ", "diff --git "), pos):
                break
            line, following = _line(text, pos)
            if line.startswith(("index ", "similarity", "dissimilarity")):
                pass
            elif line.startswith("new file mode"):
                current.change, current.old = "add", None
                current.new_mode = line[14:].strip()
            elif line.startswith("deleted file mode"):
                current.change, current.new = "delete", None
            elif line.startswith("old mode"):
                current.mode_changed = True
            elif line.startswith("new mode"):
                current.mode_changed, current.new_mode = True, line[9:].strip()
            elif line.startswith(("rename from ", "copy from ", "rename old ")):
                current.old = _unquote(line.split(" ", 2)[2])
                current.change = "copy" if line.startswith("copy") else "rename"
            elif line.startswith(("rename to ", "copy to ", "rename new ")):
                current.new = _unquote(line.split(" ", 2)[2])
            elif line.startswith("Binary files "):
                current.binary = True
                current.hashed.append(line)
                if " /dev/null and " in line:
                    current.change, current.old = "add", None
                elif line.endswith(" and /dev/null differ"):
                    current.change, current.new = "delete", None
                return following
            elif line == "GIT binary patch":
                current.binary = True
                return _read_binary(text, following, current)
            else:
                return pos  # the section ends: a rename or mode change without content
            pos = following
    if text.startswith("--- ", pos):
        old_line, after_old = _line(text, pos)
        new_line, after_new = _line(text, after_old)
        if new_line.startswith("+++ ") and (current.old is None or current.new is None):
            old, new = _plain_paths(old_line[4:], new_line[4:])
            if old is None:
                current.change, current.old = "add", None
            elif new is None:
                current.change, current.new = "delete", None
            if current.old is None and current.change != "add":
                current.old = old
            if current.new is None and current.change != "delete":
                current.new = new
            pos = after_new
        elif new_line.startswith("+++ "):
            pos = after_new  # a git section already named both paths
    if text.startswith("@@ ", pos):
        pos = _read_hunks(text, pos, current)
    while text.startswith("@@ ", pos):  # what _read_hunks left: hunks that need a closer look
        pos = _read_hunk(text, pos, current, problems)
    return pos


def _read_hunks(text: str, pos: int, current: _File) -> int:
    """All hunks of a file at once, from `pos` (an `@@ ` line), when every one passes
    `_read_hunk`'s fast check; then the offset after them, else `pos` with nothing read.

    The same result as `_read_hunk` per hunk in three regex passes over the file's hunks
    instead of six per hunk: the end of the run of hunks (a line that stops a hunk, other than
    `@@ `); the first character of each line, split at the `@@ ` lines into each hunk's marks,
    which are counted in a string of a few dozen characters; and a split at the `@@ ` lines
    giving their counts and the text between them (scan_diff a fifth cheaper on patch mail)."""
    if text[pos - 1 : pos] != "\n":
        return pos
    found = _HUNKS_END.search(text, pos - 1)
    end = found.start() + 1 if found else len(text)
    region = text[pos - 1 : end]  # from the newline before the first `@@ `
    marks = "".join(_LINE_MARK.findall(region)).split("@")
    # ["", old count, new count, text, old count, new count, text, ...]; each text after the
    # first is "\n" + the hunk without its last newline (the last hunk's keeps it)
    pieces = _HUNK_SPLIT.split(region)
    if len(pieces) != 3 * len(marks) - 2:  # an `@` line that is not a hunk header
        return pos
    added = removed = 0
    for index in range(1, len(marks)):
        lines = marks[index]
        old, new = pieces[3 * index - 2], pieces[3 * index - 1]
        minus, plus, context = lines.count("-"), lines.count("+"), lines.count(" ")
        if (
            not lines  # an empty hunk: _read_hunk counts it one line
            or context + minus != (int(old) if old else 1)
            or context + plus != (int(new) if new else 1)
            or context + minus + plus != len(lines) - lines.count("\\")
        ):
            return pos
        added += plus
        removed += minus
    current.added += added
    current.removed += removed
    current.hashed.append("".join(pieces[3::3])[1:])
    return end


def _read_hunk(text: str, pos: int, current: _File, problems: list[str]) -> int:
    header, start = _line(text, pos)
    match = _HUNK.match(header)
    if match is None:
        return start
    old_count = int(match[1]) if match[1] is not None else 1
    new_count = int(match[2]) if match[2] is not None else 1
    boundary = _HUNK_BOUNDARY.search(text, start - 1)
    end = boundary.start() + 1 if boundary else len(text)
    hunk = text[start:end]
    marked = "\n" + hunk  # every line start is now after a "\n"
    removed, added, context = marked.count("\n-"), marked.count("\n+"), marked.count("\n ")
    lines = hunk.count("\n") + (0 if hunk.endswith("\n") else 1)
    if "\n\\" in marked:  # "\ No newline at end of file" lines are not counted
        lines -= marked.count("\n\\")
    if (
        context + removed != old_count
        or context + added != new_count
        or context + removed + added != lines
    ):
        # Text right after the hunk, or a mangled hunk (a wrapped line, an empty context line
        # without its space): find its end line by line.
        end = _hunk_end(text, start, old_count, new_count, problems)
        hunk = text[start:end]
        marked = "\n" + hunk
        removed, added = marked.count("\n-"), marked.count("\n+")
    current.added += added
    current.removed += removed
    current.hashed.append(hunk)
    return end


def _hunk_end(text: str, pos: int, old_left: int, new_left: int, problems: list[str]) -> int:
    """Where a hunk starting at `pos` ends, tolerating what mail clients do to diffs: wrapped
    long lines (skipped), stripped blank context lines, and a text cut off inside the hunk."""
    size = len(text)
    junk = 0
    junk_start = pos
    while (old_left > 0 or new_left > 0) and pos < size:
        line, following = _line(text, pos)
        mark = line[:1]
        if mark == " " or not line:  # mailers strip the space of an empty context line
            old_left -= 1
            new_left -= 1
        elif mark == "-":
            old_left -= 1
        elif mark == "+":
            new_left -= 1
        elif mark != "\\":  # "\ No newline at end of file" belongs to the hunk
            if junk == 0:
                junk_start = pos
            junk += 1
            if junk > _MAX_JUNK:
                problems.append("a hunk ends early: its line counts do not match the text")
                return junk_start
            pos = following
            continue
        junk = 0
        pos = following
    if old_left > 0 or new_left > 0:
        problems.append("the diff ends inside a hunk (truncated or mangled)")
    while text.startswith("\\", pos):
        pos = _line(text, pos)[1]
    return pos


def _read_binary(text: str, pos: int, current: _File) -> int:
    """Skip a `GIT binary patch` payload: one or two `literal|delta N` blocks, each blank-ended."""
    size = len(text)
    for _ in range(2):
        if not text.startswith(("literal ", "delta "), pos):
            break
        block_end = text.find("\n\n", pos)
        block_end = size if block_end < 0 else block_end + 2
        current.hashed.append(text[pos:block_end])
        pos = block_end
    return pos


def _finish(f: _File) -> FileChange:
    change = f.change
    if change == "modify" and f.mode_changed and not f.added and not f.removed and not f.binary:
        change = "mode"
    path = (f.old or f.new or "") if change == "delete" else (f.new or f.old or "")
    old_path = f.old if change in ("rename", "copy") else None
    return FileChange(
        path=path, change=change, old_path=old_path, binary=f.binary, added=f.added,
        removed=f.removed,
    )


_WHITESPACE = b" \t\n\r\x0b\x0c"


def _fingerprint(files: list[_File]) -> str:
    """sha1 of each file's change (kind, paths, new mode, hunk text without whitespace and
    without the `@@` lines), then of the sorted per-file digests, so file order does not count."""
    digests = []
    for f in files:
        head = f"{f.change}\0{f.old or ''}\0{f.new or ''}\0{f.new_mode}\0"
        content = "".join(f.hashed).encode("utf-8", "replace").translate(None, _WHITESPACE)
        digests.append(hashlib.sha1(head.encode("utf-8", "replace") + content).hexdigest())
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha1("".join(sorted(digests)).encode()).hexdigest()


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    """Paths from `diff --git a/X b/Y` (the part after `diff --git `)."""
    if rest.startswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        if len(parts) == 2:
            return _strip_prefix(_unquote(parts[0])), _strip_prefix(_unquote(parts[1]))
    # Unchanged paths, even with spaces: "a/P b/P" has P at both halves
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
    old, sep, new = rest.partition(" b/")
    if sep:
        return _strip_prefix(old), new
    old, _, new = rest.partition(" ")
    return _strip_prefix(old), _strip_prefix(new)


def _plain_paths(old_field: str, new_field: str) -> tuple[str | None, str | None]:
    """Paths from `--- X` / `+++ Y` lines, prefix removed as `git apply -p1` would."""
    old = _unquote(old_field.split("\t", 1)[0].rstrip())
    new = _unquote(new_field.split("\t", 1)[0].rstrip())
    old_p = None if old == "/dev/null" else old
    new_p = None if new == "/dev/null" else new
    if old_p is not None and new_p is not None:
        old_top, _, old_rest = old_p.partition("/")
        new_top, _, new_rest = new_p.partition("/")
        # a/ b/, or quilt's linux.orig/ linux/: strip one component; bare paths stay as written
        if old_rest and new_rest and ((old_top, new_top) == ("a", "b") or old_top != new_top):
            return old_rest, new_rest
        return old_p, new_p
    return _strip_prefix(old_p), _strip_prefix(new_p)


def _strip_prefix(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
    if len(path) > 2 and path[1] == "/" and path[0] in "abciow":  # git's (mnemonic) prefixes
        return path[2:]
    return path


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths ("a/t\\303\\251st")."""
    path = path.strip()
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        raw = codecs.escape_decode(path[1:-1].encode("utf-8"))[0]
        return raw.decode("utf-8", errors="replace")
    return path
