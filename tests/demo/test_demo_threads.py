"""The generated patch threads look and behave like real list traffic.

Real git makes them (format-patch), real git applies them (am), real git splits their mbox
(mailsplit), and b4 reads them as a series with trailers carried over between versions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import email
import email.policy
import os
import re
import subprocess
from pathlib import Path

import pytest

from bot.demo.threads import (
    TREE_FILES,
    SeriesSpec,
    as_mbox,
    make_reply,
    make_series,
    make_tree,
    series_changes,
    series_message_ids,
)

TITLE = "Batch LRU updates in reclaim"
REVIEWER = ("Zoë Reviewer", "zoe@example.net")
SUGGESTION = """\
diff --git a/mm/swap.c b/mm/swap.c
--- a/mm/swap.c
+++ b/mm/swap.c
@@ -17,1 +17,1 @@
-#define LRU_ADD_BATCH\t\t15
+#define LRU_ADD_BATCH\t\t31
"""


def _git(tree: Path, *args: str, input: bytes | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    result = subprocess.run(
        ["git", "-C", str(tree), "-c", "user.name=Applier", "-c", "user.email=a@example.org",
         *args], input=input, capture_output=True, env=env, check=True,
    )
    return result.stdout.decode()


def _parse(raw: bytes) -> email.message.EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)


def _body(raw: bytes) -> str:
    return _parse(raw).get_content()


def _ids(value: object) -> list[str]:
    return re.findall(r"<[^>]+>", str(value or ""))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def test_subjects_are_what_git_format_patch_writes(tree: Path) -> None:
    v2 = make_series(tree, SeriesSpec(TITLE, version=2))
    assert [str(_parse(m)["Subject"]) for m in v2][:2] == [
        f"[PATCH v2 0/3] {TITLE}",
        f"[PATCH v2 1/3] {series_changes(SeriesSpec(TITLE, version=2))[0].subject}",
    ]
    assert str(_parse(v2[3])["Subject"]).startswith("[PATCH v2 3/3] ")

    rfc = make_series(tree, SeriesSpec(TITLE, patches=2, subject_prefix="RFC PATCH"))
    assert str(_parse(rfc[0])["Subject"]) == f"[RFC PATCH 0/2] {TITLE}"
    unstable = SeriesSpec(TITLE, patches=2, version=3, subject_prefix="PATCH mm-unstable")
    assert str(_parse(make_series(tree, unstable)[1])["Subject"]).startswith(
        "[PATCH mm-unstable v3 1/2] ")
    resend = make_series(tree, SeriesSpec(TITLE, patches=1, cover=False,
                                          subject_prefix="RESEND PATCH"))
    single = SeriesSpec(TITLE, patches=1, cover=False)
    assert str(_parse(resend[0])["Subject"]).startswith("[RESEND PATCH] mm/")
    assert str(_parse(make_series(tree, single)[0])["Subject"]).startswith("[PATCH] mm/")
    # An RFC, a RESEND and the plain posting of the same version are different messages.
    assert len({series_message_ids(s)[-1] for s in (
        SeriesSpec(TITLE, patches=1, cover=False),
        SeriesSpec(TITLE, patches=1, cover=False, subject_prefix="RFC PATCH"),
        SeriesSpec(TITLE, patches=1, cover=False, subject_prefix="RESEND PATCH"),
    )}) == 3


def test_messages_are_clean_rfc822_as_send_email_sends_them(tree: Path) -> None:
    spec = SeriesSpec(TITLE, cc=("Jörg Rödel <joerg@example.com>",))
    messages = make_series(tree, spec)
    assert len(messages) == 4
    for i, raw in enumerate(messages):
        assert not raw.startswith(b"From ")  # the mbox From_ line is gone
        msg = _parse(raw)
        assert msg.defects == [] and all(not p.defects for p in msg.walk())
        assert msg["Message-ID"] == series_message_ids(spec)[i]
        assert msg["List-Id"] == "<linux-mm.kvack.org>"
        assert msg["To"] == "linux-mm@kvack.org"
        assert msg["Cc"] == "Jörg Rödel <joerg@example.com>"
        assert msg["From"] == "Ada Reclaim <ada@example.org>"
        assert msg["Date"].datetime == spec.date + dt.timedelta(minutes=i)
        assert raw.isascii() or b"Content-Transfer-Encoding: 8bit" in raw
    cover = _body(messages[0])
    assert "*** SUBJECT HERE ***" not in str(_parse(messages[0])["Subject"])
    assert "*** BLURB HERE ***" not in cover
    assert "Ada Reclaim (3):" in cover  # git's shortlog


def test_shallow_threading_hangs_every_patch_off_the_cover(tree: Path) -> None:
    spec = SeriesSpec(TITLE, threading="shallow")
    ids = series_message_ids(spec)
    messages = [_parse(m) for m in make_series(tree, spec)]
    assert messages[0]["In-Reply-To"] is None and messages[0]["References"] is None
    for msg in messages[1:]:
        assert msg["In-Reply-To"] == ids[0]
        assert _ids(msg["References"]) == [ids[0]]


def test_deep_threading_chains_each_message_to_the_previous(tree: Path) -> None:
    spec = SeriesSpec(TITLE, threading="deep")
    ids = series_message_ids(spec)
    messages = [_parse(m) for m in make_series(tree, spec)]
    for i, msg in enumerate(messages[1:], start=1):
        assert msg["In-Reply-To"] == ids[i - 1]
        assert _ids(msg["References"]) == ids[:i]


def test_unthreaded_series_has_ids_but_no_parents(tree: Path) -> None:
    spec = SeriesSpec(TITLE, threading="none", cover=False)
    messages = [_parse(m) for m in make_series(tree, spec)]
    assert [m["Message-ID"] for m in messages] == series_message_ids(spec)
    assert all(m["In-Reply-To"] is None and m["References"] is None for m in messages)


def test_new_version_threads_under_the_old_cover_letter(tree: Path) -> None:
    v1 = SeriesSpec(TITLE)
    old_cover = series_message_ids(v1)[0]
    v2 = SeriesSpec(TITLE, version=2, same_changes_as=v1, in_reply_to=old_cover)
    ids = series_message_ids(v2)
    messages = [_parse(m) for m in make_series(tree, v2)]
    assert messages[0]["In-Reply-To"] == old_cover
    assert _ids(messages[1]["References"]) == [old_cover, ids[0]]
    assert messages[1]["In-Reply-To"] == ids[0]
    assert v2.date > v1.date  # a later version is also later by date, as b4 expects
    assert f"Link to v1: https://lore.kernel.org/r/{old_cover.strip('<>')}" in _body(
        make_series(tree, v2)[0])


def test_base_commit_and_change_id_as_b4_writes_them(tree: Path) -> None:
    master = _git(tree, "rev-parse", "master").strip()
    change_id = "20261130-batch-lru-updates-0123456789ab"
    cover = _body(make_series(tree, SeriesSpec(TITLE, change_id=change_id))[0])
    assert f"\nbase-commit: {master}\nchange-id: {change_id}\n" in cover

    single = _body(make_series(tree, SeriesSpec(TITLE, patches=1, cover=False,
                                                change_id=change_id))[0])
    # Without a cover letter both lines follow the diff, before the signature.
    diff_at = single.index("diff --git")
    assert single.index(f"base-commit: {master}\nchange-id: {change_id}\n") > diff_at
    assert single.index("change-id:") < single.rindex("\n-- \n")


@pytest.mark.parametrize("spec", [
    SeriesSpec(TITLE, patches=5, threading="shallow"),
    SeriesSpec(TITLE, patches=3, version=2, threading="deep", revised=(2,)),
    SeriesSpec("Keep kswapd honest", patches=1, cover=False, threading="none"),
    SeriesSpec("Keep kswapd honest", patches=16, author=("Łukasz Ząbek", "lz@example.pl")),
], ids=["shallow-5", "deep-v2", "single", "sixteen-non-ascii-author"])
def test_patches_apply_with_git_am_onto_master_of_a_fresh_clone(
    tree: Path, tmp_path: Path, spec: SeriesSpec
) -> None:
    messages = make_series(tree, spec)
    patches = messages[1:] if spec.cover else messages
    mbox = tmp_path / "series.mbox"
    mbox.write_bytes(as_mbox(patches))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tree), str(clone)], check=True)
    _git(clone, "am", "--patch-format=mboxrd", str(mbox))

    log = _git(clone, "log", "--format=%an|%s", "origin/master..HEAD").splitlines()[::-1]
    changes = series_changes(spec)
    assert log == [f"{spec.author[0]}|{c.subject}" for c in changes]
    expected = dict(TREE_FILES)
    for change in changes:
        expected[change.path] = change.apply(expected[change.path])
    for path, text in expected.items():
        assert (clone / path).read_text() == text


def test_generation_is_deterministic(tmp_path: Path) -> None:
    spec = SeriesSpec(TITLE, version=2, change_id="20261130-x-0123456789ab", threading="deep",
                      cc=("Jörg Rödel <joerg@example.com>",))

    def generate(where: Path) -> tuple[str, list[bytes], bytes]:
        tree = make_tree(where)
        messages = make_series(tree, spec)
        assert make_series(tree, spec) == messages  # again on the same tree
        reply = make_reply(messages[1], author=REVIEWER, body="Fine.")
        return _git(tree, "rev-parse", "master").strip(), messages, reply

    assert generate(tmp_path / "a") == generate(tmp_path / "b")


def test_making_a_series_leaves_master_and_the_work_tree_alone(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "linux")
    master = _git(tree, "rev-parse", "master").strip()
    make_series(tree, SeriesSpec(TITLE, patches=4))
    assert _git(tree, "rev-parse", "master").strip() == master
    assert _git(tree, "symbolic-ref", "HEAD").strip() == "refs/heads/master"
    assert _git(tree, "status", "--porcelain") == ""


def _patch_id(raw: bytes, tree: Path) -> str:
    return _git(tree, "patch-id", "--stable", input=raw).split()[0]


def test_unchanged_patches_keep_their_patch_id_in_the_next_version(tree: Path) -> None:
    v1 = SeriesSpec(TITLE)
    v2 = SeriesSpec(TITLE, version=2, same_changes_as=v1, revised=(2,))
    ids1 = [_patch_id(m, tree) for m in make_series(tree, v1)[1:]]
    ids2 = [_patch_id(m, tree) for m in make_series(tree, v2)[1:]]
    assert ids1[0] == ids2[0] and ids1[2] == ids2[2]
    assert ids1[1] != ids2[1]


def test_b4_reads_the_versions_and_carries_trailers_by_patch_id(tree: Path) -> None:
    import b4

    b4.setup_config(argparse.Namespace(config={}), topdir=str(tree))
    b4.can_network = False
    v1 = SeriesSpec(TITLE)
    v2 = SeriesSpec(TITLE, version=2, same_changes_as=v1, revised=(2,),
                    in_reply_to=series_message_ids(v1)[0])
    m1, m2 = make_series(tree, v1), make_series(tree, v2)
    replies = [
        make_reply(m1[i], author=REVIEWER, body="Looks right.",
                   trailers=[f"Reviewed-by: {REVIEWER[0]} <{REVIEWER[1]}>"])
        for i in (1, 2)
    ]
    mailbox = b4.LoreMailbox()
    for raw in [*replies, *m2, *m1]:  # out of order, as a list archive may hand them over
        mailbox.add_message(email.message_from_bytes(raw, policy=b4.emlpolicy))
    assert mailbox.get_latest_revision() == 2
    series = mailbox.get_series(revision=2, codereview_trailers=False)
    assert series.complete and series.has_cover
    carried = [[t.as_string() for t in p.followup_trailers] for p in series.patches[1:]]
    assert carried == [[f"Reviewed-by: {REVIEWER[0]} <{REVIEWER[1]}>"], [], []]


def test_reply_threads_quotes_and_signs_like_a_mail_client(tree: Path) -> None:
    spec = SeriesSpec(TITLE, cc=("Jörg Rödel <joerg@example.com>",))
    patch = make_series(tree, spec)[1]
    reply = make_reply(patch, author=REVIEWER, body="This looks right to me.",
                       trailers=["Reviewed-by: Zoë Reviewer <zoe@example.net>"],
                       diff=SUGGESTION)
    msg = _parse(reply)
    ids = series_message_ids(spec)
    assert msg["Subject"] == "Re: " + str(_parse(patch)["Subject"])
    assert msg["In-Reply-To"] == ids[1]
    assert _ids(msg["References"]) == [ids[0], ids[1]]
    assert msg["From"] == "Zoë Reviewer <zoe@example.net>"
    assert msg["To"] == "Ada Reclaim <ada@example.org>"
    assert msg["Cc"] == "linux-mm@kvack.org, Jörg Rödel <joerg@example.com>"
    assert reply.split(b"\n\n")[0].isascii()  # names RFC 2047 encoded, even after b4 is loaded
    body = msg.get_content()
    assert body.startswith("On Mon, Nov 30, 2026 at 10:01:00AM +0000, Ada Reclaim wrote:\n> ")
    assert "> Signed-off-by: Ada Reclaim <ada@example.org>" in body
    assert body.index("This looks right") < body.index("\ndiff --git") < body.index(
        "Reviewed-by: Zoë Reviewer <zoe@example.net>")

    # A reply to the reply: still one "Re:", the chain grows, nothing quoted when asked so.
    second = _parse(make_reply(reply, author=spec.author, body="Thanks!", quote=False))
    assert second["Subject"] == msg["Subject"]
    assert _ids(second["References"]) == [ids[0], ids[1], msg["Message-ID"]]
    assert second.get_content() == "Thanks!\n"
    assert second["To"] == "Zoë Reviewer <zoe@example.net>"


def test_mbox_is_mboxrd_that_git_splits_back_into_the_same_messages(
    tree: Path, tmp_path: Path
) -> None:
    messages = make_series(tree, SeriesSpec(TITLE, patches=2))
    tricky = make_reply(messages[1], author=REVIEWER, quote=False,
                        body="From the numbers above I cannot tell.\n>From here on, quoted.")
    order = [messages[2], tricky, messages[0], messages[1]]
    mbox = as_mbox(order)
    assert mbox.count(b"\nFrom mboxrd@z ") == 3 and mbox.startswith(b"From mboxrd@z ")
    assert b"\n>From the numbers" in mbox and b"\n>>From here on" in mbox

    (tmp_path / "out").mkdir()
    path = tmp_path / "all.mbox"
    path.write_bytes(mbox)
    _git(tmp_path, "mailsplit", "--mboxrd", "-o" + str(tmp_path / "out"), str(path))
    split = [p.read_bytes() for p in sorted((tmp_path / "out").iterdir())]
    # mailsplit keeps each message's From_ line and the blank line that ends it.
    assert split == [b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m + b"\n" for m in order]
