"""The reply's reproduce lines, run for real (b4 offline on the thread as lore would serve it,
curl and `git am` against a public-inbox server): they must give the patches the run tested, on
SQLite and PostgreSQL.

The ways `b4 am -o . <anchor>` went wrong on real lists (cgroups):
- a v2 sent in reply to v1's cover letter joins v1's thread, and b4 takes the newest revision;
- a fix sent in reply to a bug report (273 of 3,190 versions hang from a message not theirs) was
  fetched by that message's id, and b4 mixed in the fixes others posted there;
- another author's `[PATCH]` in reply to the patch is in b4's series too;
- numbered patches sent with no threading headers are one series to lorelab but each a thread
  of its own on lore, where one `b4 am` finds only one of them.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import sqlalchemy as sa

from bot.db.models import SeriesVersion
from bot.demo.threads import LIST_ADDRESS, SeriesSpec, make_reply, make_series, make_tree
from bot.report.compose.from_db import fetch_lines
from bot.report.compose.reproduce import LORE_ALL, apply_lines, raw_apply_lines, raw_url
from bot.series.views import series_dict
from tests.series.mailing import header, msgs_id, store, untagged
from tests.series.test_forged_msgid import forge
from tests.support.gitrepo import git
from tests.support.pi_server import PublicInbox, missing_reason

B4 = str(Path(sys.executable).with_name("b4"))
START = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def b4_subjects(line: str, thread: list[bytes], work: Path) -> list[str]:
    """The subjects of the patches `line` (a reply's `b4 am ...`) writes, run offline on
    `thread` as the archive's copy of it."""
    mbox = work / "thread.mbox"
    with mbox.open("wb") as out:
        for raw in thread:
            out.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + raw.rstrip(b"\n") + b"\n\n")
    words = shlex.split(line)
    assert words[:2] == ["b4", "am"] and words[words.index("-o") + 1] == "."
    outdir = work / f"out{len(list(work.glob('out*')))}"
    outdir.mkdir()
    words[words.index("-o") + 1] = str(outdir)
    command = [B4, "--offline-mode", "--no-stdin", "-q", "am", "-m", str(mbox), *words[2:]]
    env = dict(os.environ, HOME=str(work), GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    (am,) = outdir.glob("*.mbx")
    return [header(b"Subject: " + s.split(b"\n\n", 1)[0], "Subject")
            for s in am.read_bytes().split(b"\nSubject: ")[1:]]


def stored_version(db, anchor_or_member: str) -> SeriesVersion:
    with db.session() as session:
        for version in session.scalars(sa.select(SeriesVersion)):
            first = version.first_message
            if anchor_or_member in (version.anchor_msgid, first.msgid if first else None):
                session.expunge_all()
                return version
    raise AssertionError(f"no version of <{anchor_or_member}>")


def reproduce_lines(db, msgid: str, base: str = "") -> list[str]:
    """The apply lines of the reply to the version whose first message is `msgid`."""
    with db.session() as session:
        version = next(v for v in session.scalars(sa.select(SeriesVersion))
                       if v.first_message is not None and v.first_message.msgid == msgid)
        return fetch_lines(version, base)


def reproduce_line(db, msgid: str) -> str:
    return reproduce_lines(db, msgid)[0]


def subjects(messages: list[bytes]) -> list[str]:
    return [header(m, "Subject") for m in messages]


def test_v1s_line_gives_v1_after_v2_was_sent_in_reply_to_it(db, tree, ingest_settings, tmp_path):
    v1spec = SeriesSpec(title="mm: reclaim in larger batches", patches=2)
    v1 = make_series(tree, v1spec)
    v2 = make_series(tree, SeriesSpec(title=v1spec.title, patches=2, version=2,
                                      in_reply_to=f"<{msgs_id(v1[0])}>",
                                      same_changes_as=v1spec, revised=(2,)))
    store(db, v1 + v2, ingest_settings)
    line = reproduce_line(db, msgs_id(v1[0]))
    assert line == f"b4 am -v 1 --no-parent -o . {msgs_id(v1[0])}"
    assert b4_subjects(line, v1 + v2, tmp_path) == subjects(v1[1:])
    # What the line said before: b4 took the newest revision in the thread, v2.
    assert b4_subjects(line.replace("-v 1 ", ""), v1 + v2, tmp_path) == subjects(v2[1:])
    assert b4_subjects(reproduce_line(db, msgs_id(v2[0])), v1 + v2, tmp_path) == \
        subjects(v2[1:])


def test_the_revision_is_the_one_b4_reads(db, tree, ingest_settings, tmp_path):
    made = make_series(tree, SeriesSpec(title="mm: one fix", patches=1, cover=False, version=3))
    patch = made[0].replace(b"[PATCH v3]", b"[PATCH -v3]", 1)
    store(db, [patch], ingest_settings)
    with db.session() as session:
        assert session.scalar(sa.select(SeriesVersion.version)) == 3  # as lorelab reads it
    line = reproduce_line(db, msgs_id(patch))
    assert line == f"b4 am -v 1 --no-parent -o . {msgs_id(patch)}"  # as b4 reads it
    (got,) = b4_subjects(line, [patch], tmp_path)
    assert got == header(patch, "Subject").replace("[PATCH -v3]", "[PATCH]")  # b4's own prefix


@pytest.mark.parametrize("cover_subject", ["block: bounce buffer direct I/O v2",
                                           "[PATCHSET v2] block: bounce buffer direct I/O"])
def test_a_cover_letter_b4_does_not_read_names_the_revision_of_the_patches(
    db, tree, ingest_settings, tmp_path, cover_subject
):
    spec = SeriesSpec(title="block: bounce buffer direct I/O", patches=2, version=2)
    v2 = untagged(make_series(tree, spec), cover_subject)
    # prose only, as Jens Axboe's `[PATCHSET v2]` on linux-block: no diffstat for b4 to go by
    v2[0] = v2[0].split(b"\n\n", 1)[0] + b"\n\nBounce buffer direct I/O where needed.\n"
    store(db, v2, ingest_settings)
    with db.session() as session:
        assert session.scalar(sa.select(SeriesVersion.version)) == 2  # the cover letter's
    line = reproduce_line(db, msgs_id(v2[0]))
    # b4 reads no cover letter there, and the patches as revision 1 (`[PATCHSET v2]` itself
    # as revision 2, which holds no patch)
    assert line == f"b4 am -v 1 --no-parent -o . {msgs_id(v2[0])}"
    assert b4_subjects(line, v2, tmp_path) == subjects(v2[1:])


def bug_report() -> bytes:
    return (
        "From: syzbot <syzbot+0123456789abcdef@syzkaller.appspotmail.com>\n"
        f"To: {LIST_ADDRESS}\n"
        "Subject: [syzbot] KASAN: use-after-free Read in shrink_lruvec\n"
        "Date: Mon, 30 Nov 2026 08:00:00 +0000\n"
        "Message-ID: <000000000000aaaa0000@google.com>\n"
        "\n"
        "syzbot found the following issue on:\n\nHEAD commit: 0123456789ab\n"
    ).encode()


def test_a_fix_sent_into_a_bug_report_is_fetched_by_its_own_message(
    db, tree, ingest_settings, tmp_path
):
    report = bug_report()
    fix = dict(title="mm/vmscan: fix a use-after-free in shrink_lruvec", patches=1, cover=False,
               in_reply_to="<000000000000aaaa0000@google.com>")
    ada = make_series(tree, SeriesSpec(**fix, start_date=START))
    # Another developer's fix in the same thread, later: revision 1 too, 1/1 too.
    bob = make_series(tree, SeriesSpec(**fix, author=("Bob Pages", "bob@example.com"),
                                       start_date=START + dt.timedelta(hours=2),
                                       revised=(1,), same_changes_as=SeriesSpec(**fix)))
    thread = [report, *ada, *bob]
    store(db, thread, ingest_settings)
    version = stored_version(db, msgs_id(ada[0]))
    # The version hangs from the report (what names it), but the report is not its message.
    assert version.anchor_msgid == "000000000000aaaa0000@google.com"
    line = reproduce_line(db, msgs_id(ada[0]))
    assert line == f"b4 am -v 1 --no-parent -o . {msgs_id(ada[0])}"
    assert b4_subjects(line, thread, tmp_path) == subjects(ada)
    # By the report's id (the line before), b4 read the whole thread and put both fixes into
    # one mbox, as if they were one series.
    assert b4_subjects(f"b4 am -o . {version.anchor_msgid}", thread, tmp_path) == \
        subjects(ada) + subjects(bob)
    # `series show` links the version to Ada's patch, not to the report.
    with db.session() as session:
        shown = series_dict(session, session.get(SeriesVersion, version.id).series)
    assert shown["versions"][0]["url"] == f"https://lore.kernel.org/r/{msgs_id(ada[0])}"


def applied_by(lines: list[str], thread: list[bytes], tree: Path, work: Path) -> list[str]:
    """The commits (subjects, oldest first) that `lines` make on a clone of `tree`, run as a
    reader would, against a real public-inbox server holding `thread` in lore's place."""
    pi = PublicInbox(work / "pi")
    for raw in thread:
        pi.deliver(raw)
    pi.start()
    clone = work / "reader"
    try:
        subprocess.run(["git", "clone", "-q", str(tree), str(clone)], check=True)
        for line in lines:
            subprocess.run(line.replace(LORE_ALL, pi.base_url + "/"), shell=True, check=True,
                           cwd=clone, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1",
                                           "GIT_COMMITTER_NAME": "Reader",
                                           "GIT_COMMITTER_EMAIL": "reader@example.org"})
    finally:
        pi.stop()
    base = git(tree, "rev-parse", "master").strip()
    return git(clone, "log", "--format=%s", f"{base}..HEAD").splitlines()[::-1]


def titles(messages: list[bytes]) -> list[str]:
    return [header(m, "Subject").split("] ", 1)[1] for m in messages]


needs_public_inbox = pytest.mark.skipif(missing_reason() is not None,
                                        reason=str(missing_reason()))


@needs_public_inbox
def test_patches_in_threads_of_their_own_are_fetched_one_by_one(
    db, tree, ingest_settings, tmp_path
):
    loose = make_series(tree, SeriesSpec(title="mm/workingset: sent loose", patches=3,
                                         threading="none"))
    store(db, loose, ingest_settings)
    base = git(tree, "rev-parse", "master").strip()
    lines = reproduce_lines(db, msgs_id(loose[0]), base)
    assert lines[-1] == f"git checkout {base} && git am ./*.eml"
    assert applied_by(lines, loose, tree, tmp_path) == titles(loose[1:])


@needs_public_inbox
def test_a_patch_answered_with_another_authors_patch_is_fetched_alone(
    db, tree, ingest_settings, tmp_path
):
    fix = dict(title="mm/vmscan: one fix", patches=1, cover=False)
    ada = make_series(tree, SeriesSpec(**fix, start_date=START))
    # A maintainer answers with a patch of their own, in reply (cgroups has such threads).
    bob = make_series(tree, SeriesSpec(**fix, author=("Bob Pages", "bob@example.com"),
                                       in_reply_to=f"<{msgs_id(ada[0])}>", revised=(1,),
                                       same_changes_as=SeriesSpec(**fix),
                                       start_date=START + dt.timedelta(hours=3)))
    store(db, ada + bob, ingest_settings)
    base = git(tree, "rev-parse", "master").strip()
    # b4 would write both patches from Ada's subthread: lorelab tested Ada's alone.
    line = f"b4 am -v 1 --no-parent -o . {msgs_id(ada[0])}"
    assert len(b4_subjects(line, ada + bob, tmp_path)) == 2
    lines = reproduce_lines(db, msgs_id(ada[0]), base)
    assert lines[0].startswith("curl ") and len(lines) == 2
    assert applied_by(lines, ada + bob, tree, tmp_path) == titles(ada)


@needs_public_inbox
def test_a_patch_whose_message_id_a_forgery_took_first_says_which_mail_to_keep(
    db, tree, ingest_settings, tmp_path
):
    """A forged mail took patch 2's Message-ID first: lorelab applied the real patch (kept as a
    copy under a stand-in id), and the lines name it by the id lore knows, with a word on
    which of lore's mails under that id to keep: lore gives both."""
    cover, one, two, three = make_series(tree, SeriesSpec(title="mm: forged", patches=3))
    forged = forge(two, "Mallory <mallory@evil.example>")
    store(db, [cover, one, forged, three], ingest_settings)
    store(db, [two], ingest_settings)
    base = git(tree, "rev-parse", "master").strip()
    lines = reproduce_lines(db, msgs_id(cover), base)
    assert "lorelab.invalid" not in "\n".join(lines)
    sent = email.utils.parsedate_to_datetime(header(two, "Date")).astimezone(dt.UTC)
    assert lines[1:3] == [
        f"curl -s -o 02.eml {raw_url(msgs_id(two))}",
        "# 02.eml: lore gives every mail under this Message-ID; keep only the one from "
        f"ada@example.org dated {sent:%Y-%m-%d %H:%M:%S} UTC (2 mails carry it)"]
    pi = PublicInbox(tmp_path / "pi")
    for raw in (cover, one, forged, three, two):
        pi.deliver(raw)
    pi.start()
    clone = tmp_path / "reader"
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "Reader",
           "GIT_COMMITTER_EMAIL": "reader@example.org"}
    try:
        subprocess.run(["git", "clone", "-q", str(tree), str(clone)], check=True)
        for line in lines[:-1]:
            subprocess.run(line.replace(LORE_ALL, pi.base_url + "/"), shell=True, check=True,
                           cwd=clone, env=env)
    finally:
        pi.stop()
    # as the comment says: both mails, and the reader keeps Ada's
    mails = re.split(rb"(?m)^From (?=\S+ \w{3} \w{3} )", (clone / "02.eml").read_bytes())[1:]
    assert len(mails) == 2
    (ada,) = [m for m in mails if b"\nFrom: Ada" in m]
    (clone / "02.eml").write_bytes(b"From " + ada)
    subprocess.run(lines[-1], shell=True, check=True, cwd=clone, env=env)
    log = git(clone, "log", "--format=%s", f"{base}..HEAD").splitlines()[::-1]
    assert log == titles([one, two, three])
    assert "planted" not in git(clone, "show", "HEAD~1")


def test_a_hostile_message_id_is_one_quoted_word_in_every_line(tmp_path):
    # A Message-ID is the sender's to choose; lorelab stores this one as it is.
    msgid = "$(touch${IFS}pwned);x`id`'q@evil.org/../y"
    lines = [apply_lines(msgid, 1, "abc123", own_subthread=True)[0],
             raw_apply_lines([msgid], "")[0], f"curl -s {raw_url(msgid)}"]
    for line in lines:
        # Each program replaced by one that prints its arguments, a line a word each.
        shown = subprocess.run(f"p() {{ printf '%s\\n' \"$@\"; }}; {_printing(line)}",
                               shell=True, capture_output=True, text=True, cwd=tmp_path,
                               executable="/bin/bash")
        assert shown.returncode == 0, shown.stderr
        words = shown.stdout.splitlines()
        urls = [w[len(LORE_ALL):-len("/raw")] for w in words if w.startswith(LORE_ALL)]
        # The b4 line has the Message-ID as one word; a URL has it as one path segment.
        assert [msgid] == [w for w in words if w == msgid] or \
            [unquote(u) for u in urls if "/" not in u] == [msgid], line
    assert not (tmp_path / "pwned").exists()


def _printing(line: str) -> str:
    """`line` with its commands (b4, curl, git) replaced by the printing function `p`."""
    for program in ("b4 ", "curl ", "git "):
        line = line.replace(program, "p ")
    return line


def test_a_thread_b4_would_walk_without_end_is_fetched_mail_by_mail(
    db, tree, ingest_settings, tmp_path
):
    """linux-pm: a `[PATCH]` sent with a series, in reply to its cover letter, and a review of
    it that reached the list first. Read in that order, b4's `--no-parent` walk asks for the
    cover letter pass after pass and never ends (liblore 0.10.1): the reply's lines must not
    send readers there, and composing them must end."""
    series = make_series(tree, SeriesSpec(title="cpupower: fix resource leaks", patches=2,
                                          start_date=START))
    (stray,) = make_series(tree, SeriesSpec(
        title="tools/cpupower: avoid an out-of-bounds access", patches=1, cover=False,
        in_reply_to=f"<{msgs_id(series[0])}>", start_date=START + dt.timedelta(seconds=3)))
    review = make_reply(stray, author=("Rita Reviewer", "rita@example.org"),
                        body="Which caller passes an empty string?",
                        date=START + dt.timedelta(hours=2))
    assert header(review, "References") == f"<{msgs_id(series[0])}> <{msgs_id(stray)}>"
    store(db, [series[0], review, *series[1:], stray], ingest_settings)  # the review first
    lines = reproduce_lines(db, msgs_id(stray))
    assert len(lines) == 2 and lines[0].startswith("curl ")
    assert lines[0].endswith(f"/{msgs_id(stray)}/raw")
