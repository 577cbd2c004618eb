"""A real SMTP server for the tests (aiosmtpd): it keeps every message it is given, and can
hold a conversation still at RCPT or DATA to let a test kill a sender mid-send."""

from __future__ import annotations

import asyncio
import email
import email.policy
import socket
import threading
from dataclasses import dataclass


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes  # as on the wire (CRLF), dots unstuffed

    def message(self) -> email.message.EmailMessage:
        return email.message_from_bytes(self.content, policy=email.policy.default)  # type: ignore[return-value]


class Recorder:
    """An aiosmtpd handler that keeps every message, and can hold a conversation still."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.stall_at: str | None = None  # "RCPT" or "DATA"
        self.reached = threading.Event()
        self.release = threading.Event()

    async def _stall(self, step: str) -> None:
        if self.stall_at != step:
            return
        self.reached.set()
        while not self.release.is_set():
            await asyncio.sleep(0.02)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: ANN001
        await self._stall("RCPT")
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: ANN001
        # The server has the whole message here: keep it, then (maybe) never answer.
        self.received.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content)
        )
        await self._stall("DATA")
        return "250 2.0.0 queued"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
