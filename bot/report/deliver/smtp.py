"""Delivery over SMTP: STARTTLS, implicit TLS or plain (loopback tests), optional AUTH.

The DATA phase is driven by hand rather than with `smtplib.SMTP.sendmail`, so that the outbox can
record the moment before the end-of-data line (`commit_point`). A server discards a transaction
whose connection closes before that line (RFC 5321, 4.1.1.4), so until then a failure means
"not delivered" and the reply may be sent again; after it, a lost answer means "in doubt".

The password comes from ReportSettings.password() at connection time; it is never logged, and
error texts carry only the server's answers.
"""

from __future__ import annotations

import re
import smtplib
import ssl
from collections.abc import Callable

from bot.config.report import ReportSettings
from bot.report.deliver.transport import (
    DeliveryInDoubt,
    Envelope,
    PermanentFailure,
    TransientFailure,
)

_LINE_END = re.compile(rb"\r?\n")
_LEADING_DOT = re.compile(rb"^\.", re.MULTILINE)


def wire_data(raw: bytes) -> bytes:
    """The message as the DATA phase carries it: CRLF line ends, leading dots doubled, ending
    in CRLF (the terminating "." line is sent separately)."""
    data = _LEADING_DOT.sub(b"..", _LINE_END.sub(b"\r\n", raw))
    return data if data.endswith(b"\r\n") else data + b"\r\n"


class SmtpTransport:
    name = "smtp"

    def __init__(self, settings: ReportSettings) -> None:
        self.settings = settings

    def delivered(self, message_id: str) -> None:
        return None  # SMTP has no way to ask whether a message was accepted

    def send(self, envelope: Envelope, commit_point: Callable[[], None]) -> str:
        client = self._connect()
        completed = False
        try:
            note = self._transaction(client, envelope, commit_point)
            completed = True
            return note
        finally:
            # QUIT only after a finished transaction: in the middle of DATA it would be read as
            # message text. Closing instead makes the server discard an unfinished message.
            if completed:
                try:
                    client.quit()
                except (smtplib.SMTPException, OSError):
                    client.close()
            else:
                client.close()

    def _connect(self) -> smtplib.SMTP:
        s = self.settings
        try:
            if s.smtp_security == "ssl":
                client: smtplib.SMTP = smtplib.SMTP_SSL(
                    s.smtp_host, s.port(), timeout=s.smtp_timeout, context=self._tls()
                )
            else:
                client = smtplib.SMTP(s.smtp_host, s.port(), timeout=s.smtp_timeout)
            client.ehlo()
            if s.smtp_security == "starttls":
                if not client.has_extn("starttls"):
                    client.close()
                    raise PermanentFailure(
                        f"{s.smtp_host}:{s.port()} does not offer STARTTLS ([report] smtp_security)"
                    )
                client.starttls(context=self._tls())
                client.ehlo()
            if s.smtp_user:
                client.login(s.smtp_user, s.password() or "")
        except smtplib.SMTPAuthenticationError as exc:
            raise PermanentFailure(
                f"authentication as {s.smtp_user} failed: {_said(exc.smtp_code, exc.smtp_error)}"
            ) from None
        except smtplib.SMTPResponseException as exc:
            raise _refusal("connect", exc.smtp_code, exc.smtp_error) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise TransientFailure(f"cannot connect to {s.smtp_host}:{s.port()}: {exc}") from None
        return client

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.settings.smtp_ca_file or None)

    def _transaction(
        self, client: smtplib.SMTP, envelope: Envelope, commit_point: Callable[[], None]
    ) -> str:
        options = []
        if not envelope.raw.isascii():
            if not client.has_extn("8bitmime"):
                raise PermanentFailure("the server does not accept 8-bit mail (no 8BITMIME)")
            options.append("BODY=8BITMIME")
        try:
            code, answer = client.mail(envelope.sender, options)
            if code != 250:
                raise _refusal("MAIL FROM", code, answer)
            refused = []
            for recipient in envelope.recipients:
                code, answer = client.rcpt(recipient)
                if code not in (250, 251):
                    refused.append(f"{recipient} ({_said(code, answer)})")
            if len(refused) == len(envelope.recipients):
                raise _refusal("RCPT TO", code, answer)
            code, answer = client.docmd("DATA")
            if code != 354:
                raise _refusal("DATA", code, answer)
            client.send(wire_data(envelope.raw))
        except (smtplib.SMTPException, OSError) as exc:
            # Before the end-of-data line the server keeps nothing.
            raise TransientFailure(f"lost before the end of the message: {exc}") from None
        commit_point()
        try:
            client.send(b".\r\n")
            code, answer = client.getreply()
        except (smtplib.SMTPException, OSError) as exc:
            raise DeliveryInDoubt(f"no answer after the end of the message: {exc}") from None
        if code != 250:
            raise _refusal("end of data", code, answer)
        note = f"accepted: {_said(code, answer)}"
        if refused:
            note += "; refused recipients: " + ", ".join(refused)
        return note


def _said(code: int, answer: bytes | str) -> str:
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else str(answer)
    return f"{code} {' '.join(text.split())}"


def _refusal(step: str, code: int, answer: bytes | str) -> Exception:
    message = f"{step} refused: {_said(code, answer)}"
    return PermanentFailure(message) if 500 <= code < 600 else TransientFailure(message)
