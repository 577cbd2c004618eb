"""`lorelab ingest` and the query commands, run as a maintainer runs them."""

from __future__ import annotations

import email
import gzip
import subprocess
from pathlib import Path

import pytest

from bot.demo.run import seed_paths
from bot.demo.threads import SeriesSpec, as_mbox, make_reply, make_series, make_tree
from tests.cli import Lorelab

LRU_GEN_REPLY = "CAOUHufYtSQnrVBC6OEXpT=LJW=L4J1Uw1yXpPrzaUhPWauo_3A@mail.gmail.com"


@pytest.fixture
def lorelab(tmp_path: Path, db_url: str) -> Lorelab:
    return Lorelab(tmp_path, db_url)


@pytest.fixture(scope="module")
def thread(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    tree = make_tree(tmp_path_factory.mktemp("tree") / "linux")
    v1 = make_series(tree, SeriesSpec(title="mm/vmscan: batch lru_gen counter updates", patches=2))
    review = make_reply(
        v1[2],
        author=("Rita Reviewer", "rita@example.org"),
        body="Looks good.",
        trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"],
    )
    return [*v1, review]


def test_seeds_ingest_and_are_recorded_for_what_they_are(lorelab: Lorelab) -> None:
    summaries = [lorelab.json("ingest", "mbox", str(p)) for p in seed_paths()]
    assert [(s["stored"], s["quarantined"]) for s in summaries] == [(1, 0), (0, 1), (0, 1)]

    msg = lorelab.json("message", "show", f"<{LRU_GEN_REPLY}>")
    assert msg["kind"] == "inline-diff"
    assert msg["in_reply_to"] == "20231222102255.56993-2-ryncsn@gmail.com"
    assert msg["references"] == [
        "20231222102255.56993-1-ryncsn@gmail.com",
        "20231222102255.56993-2-ryncsn@gmail.com",
    ]
    assert [f["path"] for f in msg["files"]] == ["mm/vmscan.c"]
    assert msg["from"] == {"name": "Yu Zhao", "email": "yuzhao@google.com"}
    # Quoted-printable decoded: "=3D" is "=", soft line breaks joined.
    assert "--key-minimum=1 --key-maximum=16000000" in msg["body"]
    assert "=3D" not in msg["body"]
    assert "Before: 44017.78 Ops/sec" in msg["body"]

    quarantined = lorelab.json("quarantine", "list")
    reasons = {Path(q["source"].split(":", 1)[1]).name: q["reason"] for q in quarantined}
    assert "Re: [PATCH v4 0/9] per lruvec lru_lock for memcg" in reasons[
        "per-lruvec-lru_lock-cover-reply.txt"
    ]
    assert "not an RFC 822 message" in reasons["vmscan-bailout-hackbench-reply.txt"]

    # Again: nothing new, nothing twice.
    again = [lorelab.json("ingest", "mbox", str(p)) for p in seed_paths()]
    assert [(s["stored"], s["quarantined"], s["duplicates"]) for s in again] == [(0, 0, 1)] * 3


def test_bad_mail_is_quarantined_and_the_batch_goes_on(
    lorelab: Lorelab, thread: list[bytes], tmp_path: Path
) -> None:
    garbage = b"\x00\xff\xfe this is not mail at all \x00\n" * 10
    no_msgid = b"From: someone@example.org\nSubject: no id\n\nbody\n"
    header_junk = b"Subject: =?bogus?Q?=ZZ?=\nFrom: \xff\xfe\nDate: yesterday-ish\n\nhello\n"
    huge = (
        b"From: big@example.org\nMessage-ID: <huge@example.org>\nSubject: big\n"
        b"Content-Type: text/plain\n\n" + b"x" * (2 * 1024 * 1024) + b"\n"
    )
    mbox = tmp_path / "mixed.mbox"
    mbox.write_bytes(as_mbox([thread[0], garbage, no_msgid, header_junk, huge, *thread[1:]]))
    summary = lorelab.json(
        "ingest", "mbox", str(mbox), LORELAB_INGEST_MAX_MESSAGE_BYTES=str(1024 * 1024)
    )
    assert summary["read"] == 8
    assert summary["stored"] == 6  # the thread (4), the mail without Message-ID, the junk
    assert summary["quarantined"] == 2
    reasons = " | ".join(q["reason"] for q in lorelab.json("quarantine", "list"))
    assert "over the 1.0 MiB limit" in reasons and "max_message_bytes" in reasons
    (series,) = lorelab.json("series", "list")
    assert series["versions"][0]["complete"]


def test_series_queries_and_am_ready_mbox(
    lorelab: Lorelab, thread: list[bytes], tmp_path: Path
) -> None:
    mbox = tmp_path / "thread.mbox.gz"
    mbox.write_bytes(gzip.compress(as_mbox(thread)))
    lorelab.run("ingest", "mbox", str(mbox), "--list", "linux-mm")

    (listed,) = lorelab.json("series", "list", "--list", "linux-mm", "--author", "ada")
    assert listed["title"] == "mm/vmscan: batch lru_gen counter updates"
    assert lorelab.json("series", "list", "--list", "netdev") == []
    assert lorelab.json("series", "list", "--since", "2030-01-01") == []
    assert lorelab.json("series", "list", "--author", "nobody") == []

    cover_id = listed["versions"][0]["cover_message_id"]
    by_url = lorelab.json("series", "show", f"https://lore.kernel.org/linux-mm/{cover_id}/")
    by_id = lorelab.json("series", "show", str(listed["id"]))
    assert by_url == by_id
    (v1,) = by_id["versions"]
    assert {"version", "expected", "received", "complete", "cover_message_id", "base_commit",
            "change_id", "patches"} <= set(v1)
    assert {"index", "subject", "message_id", "files", "trailers"} <= set(v1["patches"][0])
    human = lorelab.run("series", "show", str(listed["id"])).stdout.decode()
    assert "Reviewed-by: Rita Reviewer" in human and "complete" in human

    am = lorelab.run("series", "mbox", str(listed["id"])).stdout
    tree = make_tree(tmp_path / "apply")
    env = {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", "am"], input=am, cwd=tree, check=True, capture_output=True,
                   env={**lorelab.env, **env})
    log = subprocess.run(["git", "log", "--format=%B", "-2"], cwd=tree, check=True,
                         capture_output=True, text=True).stdout
    assert "Reviewed-by: Rita Reviewer <rita@example.org>" in log

    missing = lorelab.run("series", "show", "<nope@example.org>", check=False)
    assert missing.returncode == 1 and b"ingest its thread first" in missing.stderr


def test_ingest_stdin_as_a_delivery_agent(lorelab: Lorelab, thread: list[bytes]) -> None:
    first = lorelab.run("ingest", "stdin", "--list", "linux-mm", input=b"From x\n" + thread[0])
    assert first.returncode == 0
    msgid = email.message_from_bytes(thread[0])["Message-ID"]
    assert lorelab.json("message", "show", msgid)["lists"] == ["linux-mm"]
    down = lorelab.run(
        "ingest", "stdin", input=thread[1], check=False, process=True,
        LORELAB_DATABASE_URL="postgresql+psycopg://nobody@127.0.0.1:1/none",
    )
    assert down.returncode == 75, down.stderr
    assert b"try again" in down.stderr or b"cannot open the database" in down.stderr


def test_ingest_maildir(lorelab: Lorelab, thread: list[bytes], tmp_path: Path) -> None:
    maildir = tmp_path / "Maildir"
    for sub in ("new", "cur", "tmp"):
        (maildir / sub).mkdir(parents=True)
    for i, raw in enumerate(thread):
        (maildir / ("new" if i % 2 else "cur") / f"{1700000000 + i}.{i}.host").write_bytes(raw)
    summary = lorelab.json("ingest", "maildir", str(maildir))
    assert summary["stored"] == len(thread)
    not_a_maildir = lorelab.run("ingest", "maildir", str(tmp_path), check=False)
    assert not_a_maildir.returncode != 0 and b"not a maildir" in not_a_maildir.stderr
