"""What a message is (cover letter, patch, review, inline diff, pull request, other).

A pure function of the parsed subject and what the body carries; the series stage relies on it
to put patches in their slots and to keep a reviewer's suggested diff out of the series.
"""

from __future__ import annotations

import re

from bot.mail.diff import DIFFSTAT
from bot.mail.record import MessageKind, Subject

# A `git request-pull` body; unquoted lines only (a reply quoting one is not a pull request).
# Regexes anchored with re.M cost ~7 us per KB of text, so a substring test goes first.
_PULL_PHRASES = ("The following changes since commit ", "are available in the ")
_PULL_BODY = re.compile(
    r"^(?:The following changes since commit |\s*are available in the [Gg]it repository at)",
    re.M,
)
_PULL_TAG = re.compile(r"\[[^]]*\bGIT\s+PULL\b", re.I)
_PATCHSET_TAG = re.compile(r"\[[^]]*\bPATCHSET\b", re.I)


def classify(subject: Subject, *, has_diff: bool, prose: str, replying: bool,
             gives_trailers: bool, never_posted: bool) -> MessageKind:
    """The kind of a message.

    `prose` is the body without its diff; `replying` says the message has In-Reply-To or
    References headers, even if its subject lacks `Re:`; `gives_trailers` that its prose gives
    follow-up trailers (Reviewed-by, Acked-by, Tested-by, Reported-by, Closes:, ...; not
    Signed-off-by); `never_posted` that it is no patch posting whatever it carries
    (`bot.mail.automated`).
    """
    kind = _kind(subject, has_diff=has_diff, prose=prose, replying=replying,
                 gives_trailers=gives_trailers)
    if never_posted and kind in (MessageKind.PATCH, MessageKind.COVER):
        return MessageKind.OTHER
    return kind


def _kind(subject: Subject, *, has_diff: bool, prose: str, replying: bool,
          gives_trailers: bool) -> MessageKind:
    if subject.reply:
        return MessageKind.INLINE_DIFF if has_diff else MessageKind.REVIEW
    if ("PULL" in subject.raw.upper() and _PULL_TAG.search(subject.raw)) or _is_pull_body(prose):
        return MessageKind.PULL_REQUEST
    if replying and gives_trailers and not has_diff and not _has_diffstat(prose):
        # b4's rule: a reply whose client dropped the "Re:", under the patch's or the cover
        # letter's own subject, not a patch that lost its diff. b4 counts a Signed-off-by
        # too, which hand-written cover letters in reply to the last version carry; and a
        # diffstat is a cover letter's (a fix's Reported-by, Closes:) or a patch's.
        return MessageKind.REVIEW
    if not has_diff and "PATCHSET" in subject.raw.upper() and _PATCHSET_TAG.search(subject.raw):
        # a patch set's cover letter, numbered or not: Darrick Wong sends a patch bomb as an
        # overview with `[PATCHSET v5 2/9] title` replies, each over its own `[PATCH 01/21]`...
        return MessageKind.COVER
    if subject.counters_explicit and subject.counter == 0:
        # b4's rule: the counter makes the cover letter, with or without PATCH (linux-block's
        # `[RFC 0/9]`, `[v4 00/11]`, `[resend v1 0/5]`)
        return MessageKind.COVER
    if has_diff:
        return MessageKind.PATCH  # with or without a PATCH tag: "[RFC] foo" with a diff is one
    if subject.patch:
        if subject.counters_explicit:
            if replying and _answers(prose):
                # a client that keeps the subject as it was (Outlook, some webmail): a reply
                # quoting the patch or its review, not a patch (a commit message is not quoted)
                return MessageKind.REVIEW
            return MessageKind.PATCH  # "[PATCH 2/5]" whose diff got lost: it still has a slot
        if _has_diffstat(prose):
            return MessageKind.COVER
    if replying:
        return MessageKind.REVIEW  # a reply whose client dropped the "Re:"
    return MessageKind.OTHER


_QUOTED = re.compile(r"^>", re.M)
_SIGNED_OFF = re.compile(r"^Signed-off-by:", re.M | re.I)


def _answers(prose: str) -> bool:
    """Whether a body without a diff is an answer: it quotes, and no line of its own signs a
    commit off."""
    return ">" in prose and bool(_QUOTED.search(prose)) and not _SIGNED_OFF.search(prose)


def _has_diffstat(prose: str) -> bool:
    return " changed" in prose and bool(DIFFSTAT.search(prose))  # the regex only when it may


def _is_pull_body(prose: str) -> bool:
    return any(phrase in prose for phrase in _PULL_PHRASES) and bool(_PULL_BODY.search(prose))
