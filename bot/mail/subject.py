"""Patch subjects read by b4's rules: `Re: [PATCH v3 mm-unstable 1/3] mm: foo` -> its parts.

This re-implements `b4.LoreSubject` instead of calling it: measured here, `import b4` costs
about 0.2 s (too much for the one-message-per-process MDA path) and each `LoreSubject()` about
28 us, a third of what the bare `email.message_from_bytes` costs on a patch mail; with
precompiled patterns this costs about 8 us, and nothing for a subject seen before (every reply
in a thread repeats it).
The rules are b4's:
- a reply starts with `Re:`/`Aw:`/`Fwd:`, or any 2-3 letter word and a colon before `[`
  (`SV: [PATCH]`); beyond b4, also a one-letter word before `[` (Italian Outlook's `R:`), the
  reply and forward words of mail clients in other languages whatever follows (`Antw:`,
  `回复:`, `答复：` with a full-width colon: Outlook's answer to a stable tree's `FAILED:`
  notice, which carries the patch, was read as a posting of it), and a count after the word
  (`Re[2]:`); unlike b4 we strip repeated ones (`Re: Re: [PATCH]`, `回复: 回复: [PATCH]`) so
  the tags still count, and tags without PATCH, RFC or RESEND before them (`[EXTERNAL] Re:
  [PATCH]`, a gateway's; `[-next conflict imminent] Re: [PATCH v2 0/7]`, a reply with a diff
  that b4 takes for a patch), and the header's name typed into the subject (`Subject: [PATCH
  0/8] ...`);
- brackets inside brackets are flattened (`[PATCH [v2] 1/3]` -> `[PATCH v2 1/3]`);
- every leading `[...]` group is split into words (on whitespace and, beyond b4, on commas, so
  `[PATCH net-next,v2]` is version 2), trailing semicolons trimmed:
  `N/M` counters, `vN` version, `RFC*`, `RESEND*`, `PATCH*`; `[PATCHv3]` reads as `PATCH v3`
  (and, beyond b4, `[RFCv2]` as `RFC v2`); beyond b4, Mercurial's `N of M` counters
  (`hg email`: `[PATCH 1 of 2 V2]`), a version in a group of its own after the counter
  (`[PATCH 1/3][V2]`, which the loop over groups reads anyway) and a version written as an
  option (`[PATCH -v3]`, as the ext4 maintainer writes it); where b4 takes the last counters
  and version, the first group's stand and a later group's are a prefix (Lee Jones's `[PATCH
  00/20] [Set 1/2] Rid W=1 issues from Input` is the cover letter of 20 patches, the first of
  two sets; Thomas Gleixner's `[patch v3 01/36] [patch V2 01/38] x86/smpboot: ...`, quilt
  keeping v2's subject in the mail, is patch 1 of v3's 36);
- anything else in the brackets is an extra prefix: a tree (`mm-unstable`, `net-next`), `GIT`.
- beyond b4, a point version (`[PATCH v4.1 9/9]`, Darrick Wong's respin of one patch of v4, or
  `[PATCHSET v2.2 0/4]`) is version 4, its tag kept among the prefixes (`point_of`), where b4
  reads no version at all (1); so is a lettered variant (`[PATCH v3a 0/2]`, `v4b`: v3.1,
  v4.2, named as written), but not a tree's release (`[PATCH for v5.9]`, `[PATCH v10 rebased
  on v6.4 00/25]`: after `for`, `on`, `onto`, `against` or `to`), and a version read before
  in the group stands;
- beyond b4, a version is ASCII digits up to `MAX_VERSION` (counters have four digits at most):
  `[PATCH v3000000000]` is a prefix with a note, not a number no database column holds; and
  only the first `MAX_SUBJECT` characters are parsed.
"""

from __future__ import annotations

import functools
import re

from bot.mail.record import Subject

# Reply and forward words: English, German (Aw, Antwort), Dutch (Antw), Polish (Odp), Turkish
# (YNT), Italian (RIF), Chinese, Japanese, Korean; ASCII's two- and three-letter others (SV,
# VS, WG, TR ...) only before `[`, as b4 reads them: `rv:` and `pd:` are kernel subsystems.
_REPLY_WORD = ("re|aw|fwd?|antw(?:ort)?|odp|ynt|rif"
               "|回复|答复|回覆|答覆|转发|轉寄|轉發|返信|転送|회신|답장|전달")
# A count after the word: `Re[2]:` (eM Client, Mail.ru), `Re^2:`.
_REPLY_PREFIX = rf"(?:{_REPLY_WORD})(?:\[\d+\]|\^\d+)?\s*[:：]"
_ONE_REPLY = rf"{_REPLY_PREFIX}\s*|\w{{1,3}}\s*[:：]\s*(?=\[)"
_REPLY = re.compile(_ONE_REPLY, re.I)
_REPLIES = re.compile(rf"(?:{_ONE_REPLY})+", re.I)  # a run of them, in one pass
_TAGS_BEFORE_REPLY = re.compile(rf"(?:\[[^\[\]]*]\s*)+(?={_REPLY_PREFIX})", re.I)
_POSTING_TAG = re.compile(r"patch|rfc|resend", re.I)
# The header's own name typed into the subject (`Subject: [PATCH 0/8] dax/kmem: ...`, pasted
# at `git send-email`'s prompt): no part of the subject.
_PASTED_NAME = re.compile(r"subject\s*:\s*(?=\[)", re.I)
_INNER_OPEN = re.compile(r"\[([^]]*)\[([^\[\]]*)]")
_INNER_CLOSE = re.compile(r"\[([^]]*)]([^\[\]]*)]")
_GROUP = re.compile(r"\[([^]]*)]\s*")
_GLUED_VERSION = re.compile(r"(patch|rfc)(v\d+)", re.I)  # [PATCHv3]
_COUNTERS = re.compile(r"(\d{1,4})/(\d{1,4})")
_HG_COUNTERS = re.compile(r"(?<!\S)(\d{1,4}) of (\d{1,4})(?!\S)", re.I)  # [PATCH 1 of 2]
# v4.1, a point release of v4; v3a, a variant of v3 (read as v3.1; letters a-f, so `v4l` is no
# variant of v4)
_POINT_VERSION = re.compile(r"[vV](\d{1,4})(?:\.(\d{1,3})|([a-fA-F]))", re.A)
# Words that make the release after them a tree's: `[PATCH for v5.9]`, `[PATCH v10 rebased on
# v6.4 00/25]`.
_TREE_RELEASE_AFTER = frozenset({"for", "on", "onto", "against", "to"})
_FIX_UP = re.compile(r"-?fix(?:up)?\d*", re.I | re.A)  # [PATCH v6 10/13 -fix], `fix2`, `fixup`
# [PATCH v2 07/23 replacement], [PATCH v5 3/6 REPLACE], [PATCH v2 3/6 update]
_REPLACEMENT = re.compile(r"replace(?:ment)?|updated?", re.I | re.A)
MAX_VERSION = 9999  # no series reaches it; far inside every integer column
MAX_SUBJECT = 2000  # characters parsed: 0.05 s at worst (16,384 "[" took 3.4 s)


@functools.lru_cache(maxsize=4096)  # every reply in a thread repeats its subject
def parse_subject(raw: str) -> Subject:
    """Parse a decoded subject; never raises."""
    subject = " ".join(raw.split())
    full = subject
    notes: list[str] = []
    if len(subject) > MAX_SUBJECT:  # flattening brackets costs the square of the length
        notes.append(f"Subject: {len(subject)} characters; tags and title read from the first "
                     f"{MAX_SUBJECT}")
        subject = subject[:MAX_SUBJECT]
    reply = False
    while True:
        match = _REPLY.match(subject)
        if match is None:
            pasted = _PASTED_NAME.match(subject)
            if pasted is not None:
                subject = subject[pasted.end() :]
                continue
            tags = _TAGS_BEFORE_REPLY.match(subject)
            if tags is None or _POSTING_TAG.search(tags[0]):
                break
            subject = subject[tags.end() :]  # another's tags, not the patch's: dropped
            continue
        reply = True
        subject = subject[match.end() :]

    if subject.count("[") > 1:
        while True:
            flattened = _INNER_CLOSE.sub(r"[\1\2]", _INNER_OPEN.sub(r"[\1\2]", subject))
            if flattened == subject:
                break
            subject = flattened

    patch = rfc = resend = False
    version, version_explicit = 1, False
    counter, total, counters_explicit = 1, 1, False
    prefixes: list[str] = []
    previous = ""  # the word before, lower-cased
    groups = 0  # the bracketed groups read so far
    counters_from: int | None = None  # the group the counters came from
    version_from: int | None = None  # the group the version came from
    while subject.startswith("["):
        match = _GROUP.match(subject)
        if match is None:
            break
        groups += 1
        subject = subject[match.end() :]
        bracketed = match[1]
        lowered = bracketed.lower()
        if "patchv" in lowered or "rfcv" in lowered:
            bracketed = _GLUED_VERSION.sub(r"\1 \2", bracketed)
        if " of " in lowered:
            bracketed = _HG_COUNTERS.sub(r"\1/\2", bracketed)
        for word in bracketed.replace(",", " ").split():
            chunk = word.strip(";")
            after, previous = previous, chunk.lower()
            head = chunk[:1]
            if head.isdigit() and "/" in chunk and _COUNTERS.fullmatch(chunk):
                if counters_from in (None, groups):
                    numerator, _, denominator = chunk.partition("/")
                    counter, total = int(numerator), int(denominator)
                    counters_explicit, counters_from = True, groups
                    continue
                # a later group's counters number something else: `[PATCH 00/20] [Set 1/2]`
                prefixes.append(chunk)
                continue
            option = chunk[1:] if head == "-" else chunk  # [PATCH -v3]
            if option[:1] in ("v", "V") and option[1:].isdigit():
                digits = option[1:]
                if digits.isascii() and int(digits) <= MAX_VERSION:
                    if version_from in (None, groups):
                        version, version_explicit, version_from = int(digits), True, groups
                        continue
                    prefixes.append(chunk)  # a later group's: `[patch v3 01/36] [patch V2 ...]`
                    continue
                notes.append(f"Subject: {chunk[:40]!r} is not a version (1 to {MAX_VERSION}); "
                             "kept as a prefix")
            elif ((point := _POINT_VERSION.fullmatch(option)) and version_from is None
                  and after not in _TREE_RELEASE_AFTER):
                # and the tag stays a prefix; a version read before stands (`[PATCH v10
                # rebased on v6.4]`), and a release named as a tree's is none
                version, version_explicit, version_from = int(point[1]), True, groups
            lower = chunk.lower()
            if lower.startswith("patch"):
                patch = True
            elif lower.startswith("rfc"):
                rfc = True
            elif lower.startswith("resend"):
                resend = True
            elif chunk:
                prefixes.append(chunk)
    return Subject(
        raw=full,
        title=subject.strip(),
        reply=reply,
        patch=patch,
        version=version,
        version_explicit=version_explicit,
        counter=counter,
        total=total,
        counters_explicit=counters_explicit,
        rfc=rfc,
        resend=resend,
        prefixes=tuple(prefixes),
        notes=tuple(notes),
    )


def _point_tag(version: int, prefixes: tuple[str, ...] | list[str]) -> re.Match[str] | None:
    """The tag among a subject's prefixes that names a point release of `version`, if any."""
    after = ""
    for prefix in prefixes:
        point = _POINT_VERSION.fullmatch(prefix.lstrip("-"))
        if point and int(point[1]) == version and after not in _TREE_RELEASE_AFTER:
            return point
        after = prefix.lower()
    return None


def point_of(version: int, prefixes: tuple[str, ...] | list[str]) -> int:
    """The point release of `version` its subject prefixes name: 1 for `v4.1` and for `v4a`,
    2 for `v4b`, 0 for none."""
    point = _point_tag(version, prefixes)
    if point is None:
        return 0
    return int(point[2]) if point[2] else ord(point[3].lower()) - ord("a") + 1


def without_reply_words(subject: str) -> str:
    """`subject` less the reply and forward words it starts with, as `parse_subject` reads
    them (`Re: Aw: re[2]:`, `回复：`, `SV:` before a bracket); the rest as written. What a
    reply's subject puts after its one `Re: `."""
    rest = subject.lstrip()
    run = _REPLIES.match(rest)
    return rest[run.end() :] if run else rest


def says_fix_up(prefixes: tuple[str, ...] | list[str]) -> bool:
    """Whether a subject's tags mark its patch a fix-up to fold into the patch of its number
    (mm's `[PATCH v6 10/13 -fix]`, `[PATCH v3 10/13 fix2]`), not that patch sent again."""
    return any(_FIX_UP.fullmatch(prefix) for prefix in prefixes)


def says_replacement(prefixes: tuple[str, ...] | list[str]) -> bool:
    """Whether a subject's tags mark its patch the replacement of the patch of its number, under
    its title or another (`[PATCH v5 3/6 REPLACE]`, Hugh Dickins' `[PATCH v2 07/23
    replacement]`, Qi Zheng's `[PATCH v2 3/6 update]`)."""
    return any(_REPLACEMENT.fullmatch(prefix) for prefix in prefixes)


def version_label(version: int, prefixes: tuple[str, ...] | list[str]) -> str:
    """How the author wrote the version: `v4.1` or `v4a` for a point release, else `v4`."""
    point = _point_tag(version, prefixes)
    if point is None:
        return f"v{version}"
    return f"v{version}.{int(point[2])}" if point[2] else f"v{version}{point[3].lower()}"
