"""A real public-inbox archive and HTTP server for tests (and the backfill benchmark).

`PublicInbox` stands up a v2 (or v1) inbox in a temporary directory with HOME and PI_CONFIG of
its own, imports or delivers mail into it, and serves it with `public-inbox-httpd` on a free
127.0.0.1 port. Nothing here installs anything: `missing_reason()` says why the tests must skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.cli import Lorelab

LIST_NAME = "linux-mm"
LIST_ADDRESS = "linux-mm@kvack.org"

# InboxWritable::import_mbox, with the importer's epoch size settable (ARGV[2], bytes; 0 keeps
# public-inbox's 1 GB): a small one makes an archive of many epochs from a few messages.
_IMPORT_MBOX = r"""
my $ibx = PublicInbox::Config->new->lookup_name($ARGV[1]); $ibx->{-no_fsync} = 1;
$ibx = PublicInbox::InboxWritable->new($ibx);
my $im = $ibx->importer(1);
$im->{rotate_bytes} = $ARGV[2] if $ARGV[2];
open(my $fh, "<", $ARGV[0]) or die "open: $!";
PublicInbox::MboxReader->reads("mboxrd")->(undef, $fh, \&PublicInbox::InboxWritable::_mbox_eml_cb,
                                           $im, $ibx->filter);
$im->done;
"""


def missing_reason() -> str | None:
    """None when public-inbox is installed, else why the tests that need it skip."""
    for tool in ("public-inbox-init", "public-inbox-httpd", "public-inbox-mda"):
        if shutil.which(tool) is None:
            return f"{tool} not found: install Debian's public-inbox (scripts/test.sh does)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PublicInbox:
    """One v2 (or `version=1`) inbox named `linux-mm` under `root`, optionally served over
    HTTP."""

    def __init__(self, root: Path, *, index_level: str = "full", version: int = 2) -> None:
        self.root = root
        self.port = free_port()
        self.inbox = root / LIST_NAME
        self.env = {
            **os.environ,
            "HOME": str(root / "home"),
            "PI_CONFIG": str(root / "pi-config"),
            "PI_EMERGENCY": str(root / "emergency"),
        }
        (root / "home").mkdir(parents=True, exist_ok=True)
        self.httpd: subprocess.Popen[bytes] | None = None
        self._run(
            "public-inbox-init", f"-V{version}", "-L", index_level, LIST_NAME, str(self.inbox),
            f"http://127.0.0.1:{self.port}/{LIST_NAME}", LIST_ADDRESS,
        )
        self._run("git", "config", "-f", self.env["PI_CONFIG"], "publicinboxmda.spamcheck", "none")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{LIST_NAME}"

    def _run(self, *args: str, input: bytes | None = None) -> None:
        proc = subprocess.run(args, input=input, env=self.env, capture_output=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {proc.stderr.decode(errors='replace')}")

    def import_mbox(self, mbox: Path, *, index: bool = True, epoch_bytes: int = 0) -> None:
        """Bulk import an mboxrd file (fast; what an archive's history looks like); a new
        epoch is started after each `epoch_bytes` of mail when it is given."""
        self._run(
            "perl", "-MPublicInbox::Config", "-MPublicInbox::InboxWritable",
            "-MPublicInbox::MboxReader", "-e", _IMPORT_MBOX, str(mbox), LIST_NAME,
            str(epoch_bytes),
        )
        if index:
            self.index()

    def index(self) -> None:
        self._run("public-inbox-index", str(self.inbox))

    def deliver(self, raw: bytes) -> None:
        """One message as the list server delivers it (indexed at once)."""
        proc = subprocess.run(
            ["public-inbox-mda", "--no-precheck"], input=raw, capture_output=True, timeout=120,
            env={**self.env, "ORIGINAL_RECIPIENT": LIST_ADDRESS},
        )
        if proc.returncode != 0:
            raise RuntimeError(f"public-inbox-mda: {proc.stderr.decode(errors='replace')}")

    def remove(self, raw: bytes) -> None:
        """`public-inbox-learn rm`: a new commit renames the message's blob `m` to `d` (v2), or
        deletes the message's file (v1)."""
        self._run("public-inbox-learn", "rm", input=raw)

    def start(self) -> None:
        out = self.root / "httpd.out"
        err = self.root / "httpd.err"
        self.httpd = subprocess.Popen(
            ["public-inbox-httpd", "-W0", "-l", f"127.0.0.1:{self.port}",
             "-1", str(out), "-2", str(err)],
            env=self.env, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.base_url}/new.atom", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if self.httpd.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"public-inbox-httpd did not start: {err.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.httpd is not None and self.httpd.poll() is None:
            self.httpd.send_signal(signal.SIGTERM)
            try:
                self.httpd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.httpd.kill()
                self.httpd.wait()
        self.httpd = None


class LiveLorelab(Lorelab):
    """`lorelab` for the live-ingest commands; `popen` starts a long-running one (`run`)."""

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-c", "from bot.cli import main; main()", *args]

    def popen(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.command(*args), env={**self.env, **env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
