"""What a delivery transport is (maildir, SMTP), and the three ways a send can fail.

The failures differ in what they say about the message: `TransientFailure` and
`PermanentFailure` mean it was certainly not accepted (the end of data was never sent, or the
server refused it); `DeliveryInDoubt` means the end of data was sent and no answer came back, so
the server may hold it. Only the first may be retried automatically.

Every transport calls `commit_point()` just before the step that hands the message over for good
(the SMTP end-of-data line, the maildir rename). The caller records that moment; a crash before
it leaves nothing delivered, a crash after it leaves the outcome to be checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class TransientFailure(Exception):
    """Not accepted; trying again later may work (4xx, connection refused, timeout)."""


class PermanentFailure(Exception):
    """Not accepted, and trying again will not help (5xx, bad credentials, no STARTTLS)."""


class DeliveryInDoubt(Exception):
    """The end of data was sent but no answer came: the message may have been accepted."""


@dataclass(frozen=True)
class Envelope:
    sender: str  # MAIL FROM
    recipients: tuple[str, ...]  # RCPT TO
    message_id: str  # without brackets
    raw: bytes  # the stored message, "\n" line ends


class Transport(Protocol):
    name: str

    def send(self, envelope: Envelope, commit_point: Callable[[], None]) -> str:
        """Deliver once; returns a note for the record (e.g. recipients the server refused)."""
        ...

    def delivered(self, message_id: str) -> bool | None:
        """Whether the message was delivered; None when the transport cannot tell (SMTP)."""
        ...
