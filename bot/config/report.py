"""The [report] configuration section: where replies go, who they are from, what limits apply.

`ReportSettings` is wired into `bot.config.Settings` as `settings.report`; every key can also be
set as `LORELAB_REPORT_<KEY>`. The SMTP password is never a setting: it comes from
`$LORELAB_SMTP_PASSWORD` or from the file named by `smtp_password_file`, is read only when a
connection is made, and is never logged or stored.
"""

from __future__ import annotations

import email.utils
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.report.compose.inputs import BotIdentity

MODES = ("outbox", "smtp")
SECURITIES = ("starttls", "ssl", "plain")
PASSWORD_ENV = "LORELAB_SMTP_PASSWORD"


class ReportSettingsError(ValueError):
    """A [report] setting that cannot be used; the text says which and why."""


@dataclass
class ReportSettings:
    # "outbox": write replies into a maildir under the data directory (the embedded default;
    # nothing leaves the machine). "smtp": send them through smtp_host.
    mode: str = "outbox"
    outbox_dir: str = ""  # empty: <data dir>/outbox
    # Replies wait in pending-approval until `lorelab outbox approve ID`.
    moderation: bool = False
    from_address: str = "lorelab <lorelab@localhost>"
    domain: str = ""  # for Message-IDs; empty: the domain of from_address
    contact: str = ""  # how to reach a human, printed in the signature; required for smtp
    status_base_url: str = ""  # e.g. https://lorelab.example.org; series pages hang below it
    # Lists a reply may go to (addresses). In outbox mode an empty list allows any list,
    # since nothing leaves the machine; in smtp mode an empty list allows none.
    allowed_lists: list[str] = field(default_factory=list)
    # Addresses never written to; "@example.org" covers a whole domain.
    opt_out: list[str] = field(default_factory=list)
    list_daily_limit: int = 20  # replies per list in any 24 hours
    author_daily_limit: int = 5  # replies to one author in any 24 hours
    cc_cap: int = 50
    does_not_apply_replies: bool = False  # default: does-not-apply goes to the status page only
    smtp_host: str = "localhost"
    smtp_port: int = 0  # 0: 465 for ssl, 587 for starttls, 25 for plain
    smtp_security: str = "starttls"
    smtp_user: str = ""
    smtp_password_file: str = ""
    smtp_ca_file: str = ""  # extra CA bundle for a server with a private certificate
    smtp_timeout: int = 60  # seconds per SMTP command
    max_attempts: int = 5  # transient failures before a reply is marked failed
    send_lease_seconds: int = 600  # a claim older than this is taken to be dead

    def validate(self) -> None:
        if found := self.problems():
            key, problem = found[0]
            raise ReportSettingsError(f"[report] {key} {problem}")

    def problems(self) -> list[tuple[str, str]]:
        """(key, what is wrong, worded to follow the key) of each setting that cannot be used."""
        found = []
        if self.mode not in MODES:
            found.append(("mode", f"= {self.mode!r}: use one of {', '.join(MODES)}"))
        if self.smtp_security not in SECURITIES:
            found.append(("smtp_security",
                          f"= {self.smtp_security!r}: use one of {', '.join(SECURITIES)}"))
        if "@" not in email.utils.parseaddr(self.from_address)[1]:
            found.append(("from_address", f"= {self.from_address!r}: no address"))
        if self.mode == "smtp" and not self.contact:
            found.append(("contact", "is required in smtp mode: the signature must say how to "
                          "reach a human"))
        return found

    def identity(self) -> BotIdentity:
        # Imported here: every command reads the settings, few of them write a reply.
        from bot.report.compose.inputs import BotIdentity, Person

        name, address = email.utils.parseaddr(self.from_address)
        domain = self.domain or address.rpartition("@")[2]
        return BotIdentity(
            sender=Person(name or "lorelab", address), domain=domain, contact=self.contact
        )

    def port(self) -> int:
        if self.smtp_port:
            return self.smtp_port
        return {"ssl": 465, "starttls": 587, "plain": 25}[self.smtp_security]

    def outbox_path(self, data_dir: Path) -> Path:
        return Path(self.outbox_dir) if self.outbox_dir else data_dir / "outbox"

    def password(self) -> str | None:
        """The SMTP password from the environment or the password file; None when neither."""
        if os.environ.get(PASSWORD_ENV):
            return os.environ[PASSWORD_ENV]
        if self.smtp_password_file:
            try:
                text = Path(self.smtp_password_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ReportSettingsError(
                    f"[report] smtp_password_file {self.smtp_password_file}: {exc.strerror}"
                ) from None
            return text.strip("\r\n")
        return None
