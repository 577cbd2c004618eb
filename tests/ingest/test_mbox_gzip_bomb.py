"""A gzip bomb handed to `lorelab ingest mbox`: 1 MB on disk, one entry of 1 GiB once
inflated. Its size is checked while it is decompressed: the reader's peak RSS (getrusage, in a
process of its own) is counted, not time."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from tests.support.paths import REPO

GIB = 1 << 30


def _mail(subject: str, body: bytes) -> bytes:
    return (f"From: Ada <ada@example.org>\nSubject: {subject}\n"
            f"Message-ID: <{subject}@example.org>\n\n").encode() + body + b"\n"


def _bomb(path) -> None:
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"From a@b Mon Sep 17 00:00:00 2001\n" + _mail("before", b"hello"))
        out.write(b"\nFrom a@b Mon Sep 17 00:00:00 2001\n" + _mail("bomb", b"")[:-1])
        line = b"A" * 1023 + b"\n"
        for _ in range(GIB // (1 << 20)):
            out.write(line * 1024)
        out.write(b"\nFrom a@b Mon Sep 17 00:00:00 2001\n" + _mail("after", b"bye"))


_READ = """
import json, resource, sys
from bot.config.sections import IngestSettings
from bot.ingest.prepare import prepare_mail
from bot.ingest.sources import iter_mbox
found = []
for mail in iter_mbox(sys.argv[1]):
    row = prepare_mail(mail, IngestSettings())
    found.append({"bytes": len(mail.data), "quarantined": "reason" in row,
                  "head": mail.data[:60].decode(errors="replace")})
print(json.dumps({"mails": found,
                  "max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def test_a_gzip_bomb_entry_is_cut_while_decompressing_and_quarantined(tmp_path):
    path = tmp_path / "bomb.mbox.gz"
    _bomb(path)
    assert path.stat().st_size < 8 << 20  # small on disk
    proc = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcome = json.loads(proc.stdout)
    mails = outcome["mails"]
    assert [("Subject: before" in m["head"], "Subject: bomb" in m["head"],
             "Subject: after" in m["head"]) for m in mails] == [
        (True, False, False), (False, True, False), (False, False, True)]
    assert [m["quarantined"] for m in mails] == [False, True, False]
    assert mails[1]["bytes"] <= (64 << 20) + 1  # cut, not the whole GiB
    # A few copies of the 64 MiB cut at most (the read buffer, the entry, the message, its
    # quarantine record: 0.5-0.6 GB measured), never the whole GiB: 4.2 GB before the cut.
    assert outcome["max_rss"] < GIB
