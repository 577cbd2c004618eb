"""Whether a trailer in a reply was given by the one who sent the reply.

Anyone can write `Reviewed-by: Linus Torvalds <torvalds@linux-foundation.org>` in a reply; b4
applies a person trailer from a follow-up only when it names the sender (`LoreMessage.
get_trailers` without `--sloppy-trailers`), and so does lorelab. A trailer names the sender when:
- its address is the sender's, ignoring case, a `+detail` in the local part, or one domain
  being a subdomain of the other by one label (`jane@intel.com` and `jane@linux.intel.com`);
- or its name is the sender's, ignoring case and runs of blanks;
- or the sender's name is written `Last, First` and the words of each of its comma-separated
  parts are in the trailer's name (`Doe, Jane` sends `Reviewed-by: Jane Doe <jane@work.example>`).
Trailers that name no person (`Fixes:`, `Closes:`, a URL, a value without an address) always
count.
"""

from __future__ import annotations

import email.utils
import functools
import re

from bot.mail.trailers import is_person_trailer

_DETAIL = re.compile(r"\+[^@]*@")


@functools.lru_cache(maxsize=4096)  # a reviewer's trailer and address recur across a list
def given_by_sender(name: str, value: str, sender_name: str, sender_email: str) -> bool:
    """True when the trailer `name: value`, found in a reply from `sender_name`
    <`sender_email`>, may be counted as that sender's (see the module's rules)."""
    if not is_person_trailer(name, value):
        return True
    person, address = _person(value)
    if not (person or address):
        return True  # b4 cannot read a person from it either, and keeps it
    return _same_address(address, sender_email) or _same_name(person, sender_name)


def _person(value: str) -> tuple[str, str]:
    """(name, address) of `Name <address>`, read as plain text (an address parser's RFC 5322
    rules mangle names with quotes, commas or parentheses); else what parseaddr makes of it.
    Found by string search: a regex with a lazy name before the `<` took time quadratic in a
    hostile line's length (3.7 s for a line of 40 KB)."""
    text = value.rstrip()
    if text.endswith(">"):
        end = len(text) - 1
        opening = text.find("<", text.rfind(">", 0, end) + 1, end)
        if 0 <= opening < end - 1:
            return text[:opening].strip(), text[opening + 1 : end]
    return email.utils.parseaddr(value)


def _same_address(ours: str, theirs: str) -> bool:
    ours, theirs = ours.strip().lower(), theirs.strip().lower()
    if not ours or not theirs:
        return False
    if ours == theirs:
        return True
    if "@" not in ours or "@" not in theirs:
        return False
    ours, theirs = _DETAIL.sub("@", ours), _DETAIL.sub("@", theirs)
    if ours == theirs:
        return True
    our_local, our_domain = ours.split("@", 1)
    their_local, their_domain = theirs.split("@", 1)
    if our_local != their_local or abs(our_domain.count(".") - their_domain.count(".")) != 1:
        return False
    return our_domain.endswith(f".{their_domain}") or their_domain.endswith(f".{our_domain}")


def _same_name(ours: str, theirs: str) -> bool:
    ours, theirs = " ".join(ours.lower().split()), " ".join(theirs.lower().split())
    if not ours or not theirs:
        return False
    if ours == theirs:
        return True
    words = set(ours.replace(",", " ").split())
    parts = [set(part.split()) for part in theirs.split(",")]
    return len(parts) > 1 and all(part and part <= words for part in parts)
