"""Mail that is never a patch posting, whatever it carries: its sender asked tools to ignore it,
or a machine sent it.

Such mail carries diffs that are not submissions: Greg's "Patch ... has been added to the
6.1-stable tree", Sasha's `[PATCH AUTOSEL 6.1 12/40]` backport candidates and the kernel test
robot's suggested fixes (all marked `X-Patchwork-Hint: ignore`, patchwork's convention),
bugzilla's comments (`Auto-Submitted: auto-generated`, RFC 3834) and tip-bot2's notice of each
commit merged (`Robot-ID`). As patches they became series, which the planner tests and the
bot answers when they are complete and touch a watched file: Greg's notice that a fix to
mm/vmscan.c went into 6.1-stable, tested on the mm tree. They stay what else they are (a
review, a reply), so a robot's reply keeps its trailers.
"""

from __future__ import annotations

from bot.mail.mime import Headers, first

AUTOMATED_FIELDS = frozenset({"x-patchwork-hint", "auto-submitted", "robot-id"})


def never_posted(headers: Headers) -> bool:
    """Whether the mail asks tools to ignore it, or says a machine sent it."""
    hint = first(headers, "x-patchwork-hint")
    if hint is not None and hint.strip().lower() == "ignore":
        return True
    return auto_submitted(first(headers, "auto-submitted")) or "robot-id" in headers


def auto_submitted(value: str | None) -> bool:
    """Whether an Auto-Submitted field's value (None: no such field) says a machine sent the
    mail: anything but `no`, its parameters aside (RFC 3834)."""
    return value is not None and value.split(";")[0].strip().lower() != "no"
