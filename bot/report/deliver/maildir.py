"""The embedded default transport: replies written into a maildir, not sent anywhere.

`<data dir>/outbox/{new,cur,tmp}` opens in mutt (`mutt -f DIR`) or any maildir reader. Each
reply's file name is derived from its Message-ID, and a file appears in new/ only by an atomic
rename from tmp/, so this transport can always tell whether a reply was delivered: a crash
never leaves a reply in doubt, and a retry never writes a second copy.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from bot.report.deliver.transport import Envelope, PermanentFailure


class MaildirTransport:
    name = "maildir"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def ensure(self) -> None:
        for sub in ("tmp", "new", "cur"):
            (self.path / sub).mkdir(parents=True, exist_ok=True, mode=0o700)

    @staticmethod
    def filename(message_id: str) -> str:
        # Maildir wants unique names without "/" or ":"; a digest of the Message-ID is one.
        return "lorelab." + hashlib.sha256(message_id.encode()).hexdigest()[:32]

    def delivered(self, message_id: str) -> bool:
        name = self.filename(message_id)
        for sub in ("new", "cur"):
            folder = self.path / sub
            if (folder / name).exists():
                return True
            # A reader that saw the message moved it to cur/ with its flags: NAME:2,S
            if sub == "cur" and folder.is_dir() and any(folder.glob(name + ":*")):
                return True
        return False

    def send(self, envelope: Envelope, commit_point: Callable[[], None]) -> str:
        try:
            self.ensure()
        except OSError as exc:
            raise PermanentFailure(f"cannot create the maildir {self.path}: {exc}") from None
        if self.delivered(envelope.message_id):
            commit_point()
            return "already in the maildir"
        name = self.filename(envelope.message_id)
        tmp = self.path / "tmp" / name
        try:
            with open(tmp, "wb") as out:
                out.write(envelope.raw)
                out.flush()
                os.fsync(out.fileno())
            commit_point()
            os.rename(tmp, self.path / "new" / name)
            _fsync_dir(self.path / "new")
        except OSError as exc:
            raise PermanentFailure(f"cannot write to the maildir {self.path}: {exc}") from None
        return f"written to {self.path / 'new' / name}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
