"""Trailers a message writes (Reviewed-by:, Fixes:, ...) and its `base-commit:`/`change-id:` lines.

The rules are b4's (`LoreMessage.find_trailers` with `followup=True`, and the list of names it
drops from replies), so what we record is what b4 will later apply:
- a trailer is a line `Name: value` whose name is ASCII letters, digits and dashes (leading
  blanks allowed); quoted lines (`> Reviewed-by: ...`) never match, so only what this message
  writes counts;
- a person trailer needs an email address in its value; `Fixes`, `Link`, `Closes`, ... do not,
  and only link trailers may carry a URL; `Fixes:` must start with a commit hash;
- header-like names (From:, Subject:, Date:, ...) are not trailers, nor, in replies, Cc:;
- everything after the signature marker `-- ` is ignored, and two common wrappings are undone
  (a `Fixes:` title wrapped onto the next line; a name and its `<address>` split over two lines).
Names are written in the kernel's capitalisation: `Reviewed-By` becomes `Reviewed-by`.
"""

from __future__ import annotations

import functools
import re

from bot.mail.record import Trailer

_COLON_BLANK = re.compile(r":[ \t]")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]+")  # ASCII, like b4 for follow-ups
_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]")  # b4's \S+@\S+\.\S+, without backtracking
_HASH = re.compile(r"[0-9a-f]{6,}")
_BASE_COMMIT = re.compile(r"^base-commit:[ \t]*([0-9a-f]{7,64})[ \t]*$", re.M)
_CHANGE_ID = re.compile(r"^change-id:[ \t]*(\S+)[ \t]*$", re.M)

_LINKS = frozenset({"link", "buglink", "closes"})

# Trailers a reviewer gives in a reply; Signed-off-by, Cc or Link in a reply are not given to the
# patch (b4's default trailer handling does the same).
REVIEW_TRAILERS = frozenset(
    {"Acked-by", "Reviewed-by", "Tested-by", "Reported-by", "Suggested-by", "Nacked-by",
     "Fixes", "Closes"}
)  # fmt: skip

_NONPERSON = _LINKS | {"fixes", "obsoleted-by"}
# b4's ignore list, its "badtrailers" for replies (minus cc, handled below), and the two
# b4 metadata lines, which have their own fields.
_NOT_TRAILERS = frozenset({
    "phone", "mail", "email", "e-mail", "prerequisite-message-id", "prerequisite-patch-id",
    "from", "author", "to", "date", "subject", "subscribe", "unsubscribe", "message-id",
    "base-commit", "change-id", "in-reply-to", "references",
})  # fmt: skip
_CANONICAL = {"buglink": "BugLink"}


def canonical_name(name: str) -> str:
    """`REVIEWED-BY` -> `Reviewed-by`, `cc` -> `Cc`: the capitalisation the kernel uses."""
    lname = name.lower()
    return _CANONICAL.get(lname) or lname[:1].upper() + lname[1:]


def is_person_trailer(name: str, value: str) -> bool:
    """Whether the trailer names a person (b4's "person" type): not a link or a fix, no URL,
    an email address in its value."""
    return (name.lower() not in _NONPERSON and "://" not in value
            and "@" in value and _EMAIL.search(value) is not None)  # fmt: skip


def find_b4_metadata(text: str) -> tuple[str | None, str | None]:
    """(base-commit, change-id) from the unquoted `base-commit: <sha>`/`change-id: <id>` lines.

    git format-patch --base and b4 write them at the end of cover letters and single patches.
    """
    base = change = None
    if "base-commit:" in text:
        match = _BASE_COMMIT.search(text)
        base = match[1] if match else None
    if "change-id:" in text:
        match = _CHANGE_ID.search(text)
        change = match[1] if match else None
    return base, change


def find_trailers(text: str, *, reply: bool) -> list[Trailer]:
    """Trailers written (not quoted) in `text`, in order.

    `text` is the message without its diff; for a patch, pass the commit message (the part
    above `---`), where its trailers live. `reply` drops Cc:, as b4 does for follow-ups.
    """
    trailers: list[Trailer] = []
    text = text.split("\n-- \n", 1)[0]
    # Visit each "name:" followed by a blank instead of matching every line: a regex anchored
    # at line starts costs ~10 us on a 1 KB commit message, this a fraction of it.
    for colon in _COLON_BLANK.finditer(text):
        at = colon.start()
        line_start = text.rfind("\n", 0, at) + 1
        name = text[line_start:at].strip(" \t")
        if not name or not name[0].isalnum():  # fast exit for quoted (">") and other lines
            continue
        line_end = text.find("\n", at)
        if line_end < 0:
            line_end = len(text)
        value = _unwrap(text, line_end, name, text[at + 1 : line_end].strip())
        trailer = _trailer(name, value, reply)
        if trailer is not None:
            trailers.append(trailer)
    return trailers


# The same Signed-off-by/Reviewed-by lines recur across a series; Trailer is immutable.
@functools.lru_cache(maxsize=4096)
def _trailer(name: str, value: str, reply: bool) -> Trailer | None:
    """The trailer a `name: value` line is by b4's follow-up rules, or None."""
    if not value or not _NAME.fullmatch(name):
        return None
    lname = name.lower()
    if lname in _NOT_TRAILERS or (reply and lname == "cc"):
        return None
    if lname not in _NONPERSON and not ("@" in value and _EMAIL.search(value)):
        return None
    if lname not in _LINKS and "://" in value:
        return None
    if lname == "fixes" and not _HASH.match(value):
        return None
    if "<mailto:" in value:  # left behind by mail clients converting from HTML
        value = re.sub(r"<mailto:[^>]+>", "", value).strip()
    return Trailer(name=canonical_name(name), value=value)


def _unwrap(text: str, line_end: int, name: str, value: str) -> str:
    """Undo the two wrappings b4 undoes, by joining the next line to `value`."""
    if line_end >= len(text) or ("<" in value and "(" not in value):
        return value
    next_end = text.find("\n", line_end + 1)
    following = text[line_end + 1 : next_end if next_end >= 0 else len(text)].rstrip()
    if not following:
        return value
    if "(" in value and ")" not in value and following.endswith(")") and name.lower() == "fixes":
        return f"{value} {following.lstrip()}"  # Fixes: abcd0123 ("foo bar\n  baz quux")
    if "<" not in value and following.startswith("<") and following.endswith(">"):
        return f"{value} {following}"  # Signed-off-by: Long Name\n<address>
    return value
