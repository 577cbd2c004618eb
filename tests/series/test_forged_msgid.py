"""A mail that reuses a patch's Message-ID (issue 16, item 8), on SQLite and PostgreSQL: both
mails are kept, the series version is flagged ambiguous, and the forged copy is never the patch
that gets applied, whether it arrives first or last; when nothing tells the copies apart, the
version is not tested at all."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from bot.db.models import Message, SeriesVersion
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_reply, make_series, make_tree
from bot.report.compose.from_db import parent_message
from bot.series.mbox import am_ready_mbox
from tests.cli import Lorelab
from tests.series.mailing import all_series, header, msgs_id, only_series, store, with_header
from tests.support.web_data import web_settings
from tests.support.web_server import serving


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def forge(raw: bytes, sender: str | None) -> bytes:
    """`raw` with another first added line in its diff (and another sender, if given)."""
    head, body = raw.split(b"\n\n", 1)
    body = re.sub(rb"^\+(?!\+\+ )(.*)$", rb"+\1 /* planted */", body, count=1, flags=re.M)
    forged = head + b"\n\n" + body
    return with_header(forged, "From", sender) if sender else forged


def patch_two(db: Database) -> tuple[dict, dict]:
    (version,) = only_series(db)["versions"]
    return version, {p["index"]: p for p in version["patches"]}[2]


def copies(db: Database, msgid: str) -> list[tuple[str, str]]:
    with db.session() as session:
        return sorted((sender, stored) for sender, stored in session.execute(
            sa.select(Message.from_email, Message.msgid).where(
                (Message.msgid == msgid) | (Message.claimed_msgid == msgid))
        ))


@pytest.mark.parametrize("forged_first", [True, False])
def test_a_forged_copy_is_kept_but_never_taken_for_the_patch(
    db: Database, db_url: str, tree: Path, ingest_settings, forged_first: bool, tmp_path: Path
) -> None:
    cover, one, two, three = make_series(tree, SeriesSpec(title="mm: forged", patches=3))
    forged = forge(two, "Mallory <mallory@evil.example>")
    first, last = (forged, two) if forged_first else (two, forged)
    store(db, [cover, one, first, three], ingest_settings)
    again = store(db, [last], ingest_settings)
    assert again.stored == 1 and again.duplicates == 0  # a different mail: kept, not a duplicate
    msgid = msgs_id(two)
    assert [sender for sender, _ in copies(db, msgid)] == ["ada@example.org",
                                                           "mallory@evil.example"]
    version, patch = patch_two(db)
    assert patch["author"]["email"] == "ada@example.org"  # the real patch is what gets applied
    assert patch["url"] == f"https://lore.kernel.org/r/{msgid}"  # as lore knows it
    assert patch["sent_message_id"] == msgid
    # `series show` gives the id to hand b4, and the copy's own for `lorelab message show`
    shown = Lorelab(tmp_path, db_url).run("series", "show", msgs_id(cover)).stdout.decode()
    (line,) = [x.strip() for x in shown.splitlines() if x.strip().startswith(f"<{msgid}>")]
    if forged_first:  # the real patch came second: kept as a copy, under a stand-in id
        assert line.startswith(f"<{msgid}> (a copy; lorelab's id <{patch['message_id']}>)")
        assert patch["message_id"] != msgid
        assert Lorelab(tmp_path, db_url).run("message", "show", patch["message_id"]).returncode == 0
    else:
        assert line.startswith(f"<{msgid}>  +") and patch["message_id"] == msgid
    assert "planted" not in str(patch["file_changes"])
    assert version["complete"]
    assert any(n.startswith(f"ambiguous Message-ID, settled: <{msgid}>")
               and "ada@example.org" in n for n in version["notes"]), version["notes"]
    # what a run applies: the real patch, whichever of the two came first (b4 keys mails by
    # the id in their headers, and took the forged one, or failed on the stand-in's id)
    with db.session() as session:
        stored = session.scalars(sa.select(SeriesVersion)).one()
        mbox = am_ready_mbox(session, stored)
        assert mbox.count(b"\nSubject: ") == 3 and b"planted" not in mbox
        # a reply to it answers the id the list knows, never lorelab's stand-in for a copy
        real = next(p.message for p in stored.patches if p.index == 2)
        assert parent_message(real).msgid == msgid
    assert f"Message-ID: <{msgid}>".encode() in mbox or f"Message-Id: <{msgid}>".encode() in mbox
    # a rerun of everything stores nothing twice and changes nothing
    rerun = store(db, [cover, one, two, forged, three], ingest_settings)
    assert rerun.stored == 0 and rerun.duplicates == 5
    assert patch_two(db) == (version, patch)


def test_copies_nothing_tells_apart_leave_the_version_untested(
    db: Database, db_url: str, tree: Path, ingest_settings, tmp_path: Path
) -> None:
    cover, one, two, three = make_series(tree, SeriesSpec(title="mm: spoofed", patches=3))
    spoofed = forge(two, None)  # the same sender, date and parent: only the diff differs
    store(db, [cover, one, spoofed, three], ingest_settings)
    store(db, [two], ingest_settings)
    version, _ = patch_two(db)
    assert not version["complete"]  # what the planner, apply, build, review and commands check
    assert any(n.startswith(f"ambiguous Message-ID, unresolved: <{msgs_id(two)}>")
               for n in version["notes"]), version["notes"]
    shown = Lorelab(tmp_path, db_url).run("series", "show", msgs_id(cover)).stdout.decode()
    assert "ambiguous Message-ID" in shown and "unresolved" in shown
    series_id = only_series(db)["id"]
    with serving(web_settings(db_url)) as base:
        front = requests.get(f"{base}/", timeout=10)
        page = requests.get(f"{base}/series/{series_id}", timeout=10)
    assert front.status_code == page.status_code == 200
    assert "ambiguous Message-ID" in front.text
    assert f"ambiguous Message-ID, unresolved: &lt;{msgs_id(two)}&gt;" in page.text


def test_a_version_incomplete_with_every_number_says_why_not_what_is_missing(
    db: Database, db_url: str, tree: Path, ingest_settings, tmp_path: Path
) -> None:
    """Every patch arrived but one id is unresolved: `series show` says "incomplete" (its note
    says why) and `series mbox` refuses with that note, not "missing" and no number."""
    cover, one, two, three = make_series(tree, SeriesSpec(title="mm: spoofed", patches=3))
    store(db, [cover, one, forge(two, None), three], ingest_settings)
    store(db, [two], ingest_settings)
    lorelab = Lorelab(tmp_path, db_url)
    shown = lorelab.run("series", "show", msgs_id(cover)).stdout.decode()
    assert "3/3 incomplete " in shown and "missing" not in shown, shown
    refused = lorelab.run("series", "mbox", msgs_id(cover), check=False)
    assert refused.returncode != 0
    said = refused.stderr.decode()
    assert f"is incomplete: ambiguous Message-ID, unresolved: <{msgs_id(two)}>" in said, said
    with serving(web_settings(db_url)) as base:
        page = requests.get(f"{base}/series/{only_series(db)['id']}", timeout=10).text
    assert "missing" not in re.search(r'<tr aria-current="true">.*?</tr>', page, re.S).group(0)


@pytest.mark.parametrize("cover", [True, False], ids=["with a cover letter", "patches only"])
def test_a_copy_that_lost_its_text_on_the_way_gives_way_to_the_whole_one(
    db: Database, tree: Path, ingest_settings, cover: bool
) -> None:
    """linux-omap, Dhruva Gole's `[PATCH 2/2] pinctrl: single: ...` (2023): TI's mail gateway
    delivered it once empty and once whole, under one Message-ID, the empty one stored first.
    Before, the empty one stood for the id and the version was incomplete, never tested."""
    sent = make_series(tree, SeriesSpec(title="pinctrl-single: am654", patches=2, cover=cover))
    last = sent[-1]
    empty = last.split(b"\n\n", 1)[0] + b"\n\n"
    store(db, [*sent[:-1], empty], ingest_settings)
    store(db, [last], ingest_settings)
    assert len(copies(db, msgs_id(last))) == 2
    (version,) = only_series(db)["versions"]
    assert version["complete"]
    assert [p["sent_message_id"] for p in version["patches"]] == [msgs_id(m) for m in sent
                                                                   if b"[PATCH 0/" not in m]
    assert version["patches"][-1]["file_changes"]
    assert [n for n in version["notes"] if n.startswith("ambiguous")] == [
        f"ambiguous Message-ID, settled: <{msgs_id(last)}> is carried by 2 mails that send "
        f"patch 2/2, all but one without its diff (its text lost on the way); took the one "
        f"with the diff, dated {version['patches'][-1]['date'].replace('T', ' ')}"]


def test_a_series_sent_again_under_its_message_ids_is_tested(
    db: Database, tree: Path, ingest_settings
) -> None:
    """The whole posting sent a second time a day later with the same Message-IDs, to more
    people (linux-block: "bio: check return values of bio_add_page" v6; "mm/hmm: let users to
    tag specific PFNs"): every id is carried by two mails, and nothing but the date tells them
    apart, but each pair sends the same patch. Before, the version was never tested."""
    sent = make_series(tree, SeriesSpec(title="mm: sent twice", patches=3))
    again = [with_header(with_header(m, "Date", "Tue, 01 Dec 2026 09:00:00 +0000"),
                         "Cc", "more@example.org") for m in sent]
    store(db, sent, ingest_settings)
    store(db, again, ingest_settings)
    assert all(len(copies(db, msgs_id(m))) == 2 for m in sent)
    (version,) = only_series(db)["versions"]
    assert version["complete"]  # the planner, apply, build and review take it
    assert [p["message_id"] for p in version["patches"]] == [msgs_id(m) for m in sent[1:]]
    assert sorted(n.split(">")[1].split(";")[0] for n in version["notes"]) == sorted(
        [" is carried by 2 mails that send a cover letter of 3 patches"]
        + [" is carried by 2 mails that send the same patch (one diff)"] * 3)
    assert all(n.startswith("ambiguous Message-ID, settled: <") and "took the first stored"
               in n for n in version["notes"])


def test_a_patch_sent_again_with_another_diff_under_its_id_stays_untested(
    db: Database, tree: Path, ingest_settings
) -> None:
    """The same, but one patch sent again changed: which one the author meant is unknown."""
    sent = make_series(tree, SeriesSpec(title="mm: sent twice, changed", patches=3))
    again = [with_header(m, "Date", "Tue, 01 Dec 2026 09:00:00 +0000") for m in sent]
    again[2] = forge(again[2], None)
    store(db, [*sent, *again], ingest_settings)
    (version,) = only_series(db)["versions"]
    assert not version["complete"]
    assert any(n.startswith(f"ambiguous Message-ID, unresolved: <{msgs_id(sent[2])}>")
               for n in version["notes"]), version["notes"]


@pytest.mark.parametrize("subject", [None, "[PATCH RESEND] mm: one patch twice"],
                         ids=["as it was", "as RESEND"])
@pytest.mark.parametrize("separately", [False, True], ids=["one batch", "two batches"])
def test_a_single_patch_sent_again_under_its_message_id_is_one_version(
    db: Database, tree: Path, ingest_settings, subject: str | None, separately: bool
) -> None:
    """A patch without a cover letter sent a second time with its Message-ID, minutes or days
    later, as it was or as RESEND (io-uring: Pavel Begunkov's "io_uring/msg_ring: let target
    know allocated index", "io_uring/af_unix: disable sending io_uring over sockets"; Geert
    Uytterhoeven's "slab: Fix too strict alignment check"). The copy is a thread of its own,
    which made it a second version of the series, of the same number; lore has one mail under
    the id, and b4 and a reviewer one patch: one version, the first mail's."""
    (sent,) = make_series(tree, SeriesSpec(title="mm: one patch twice", patches=1, cover=False))
    again = with_header(sent, "Date", "Tue, 01 Dec 2026 09:00:00 +0000")
    if subject:
        again = with_header(again, "Subject", subject)
    if separately:
        store(db, [sent], ingest_settings)
        store(db, [again], ingest_settings)
    else:
        store(db, [sent, again], ingest_settings)
    assert len(copies(db, msgs_id(sent))) == 2
    (version,) = only_series(db)["versions"]
    assert version["complete"]
    assert [p["message_id"] for p in version["patches"]] == [msgs_id(sent)]
    assert version["notes"] == [
        f"ambiguous Message-ID, settled: <{msgs_id(sent)}> is carried by 2 mails that send the "
        "same patch (one diff); took the first stored, dated "
        + version["patches"][0]["date"].replace("T", " ")]


@pytest.mark.parametrize(("first", "then"), [("PATCH", "PATCH v2"), ("RFC PATCH", "PATCH")])
def test_a_single_patch_rerolled_under_its_message_id_is_the_new_version(
    db: Database, tree: Path, ingest_settings, first: str, then: str
) -> None:
    """`[PATCH V2]` over the same diff (a new commit message) under v1's Message-ID (linux-xfs:
    "xfs: use kvmemdup() to replace kvmalloc + memcpy"), or an RFC sent again as `[PATCH]`
    (io-uring): not the posting sent again but the next one, a version of its own."""
    (sent,) = make_series(tree, SeriesSpec(title="mm: one patch again", patches=1, cover=False,
                                           subject_prefix=first))
    title = header(sent, "Subject").split("] ", 1)[1]
    again = with_header(with_header(sent, "Date", "Tue, 01 Dec 2026 09:00:00 +0000"),
                        "Subject", f"[{then}] {title}")
    store(db, [sent, again], ingest_settings)
    versions = only_series(db)["versions"]
    assert [(v["version"], v["rfc"], len(v["patches"])) for v in versions] == (
        [(1, False, 1), (2, False, 1)] if "v2" in then else [(1, True, 1), (1, False, 1)])


def reuse_ids(sent: list[bytes], ids: list[str]) -> list[bytes]:
    """The posting `sent` (cover letter first, the patches in reply to it) under `ids`, as a
    tool that starts its Message-ID counter again sends it."""
    out = [with_header(sent[0], "Message-ID", f"<{ids[0]}>")]
    for raw, msgid in zip(sent[1:], ids[1:], strict=True):
        raw = with_header(raw, "Message-ID", f"<{msgid}>")
        out.append(with_header(with_header(raw, "In-Reply-To", f"<{ids[0]}>"),
                               "References", f"<{ids[0]}>"))
    return out


@pytest.mark.parametrize("separately", [False, True], ids=["one batch", "one mail a batch"])
def test_series_under_message_ids_their_sender_used_before_are_series_of_their_own(
    db: Database, tree: Path, ingest_settings, separately: bool
) -> None:
    """Realtek's r8152 series (linux-usb, netdev) came for years under ids whose counter
    started again: a 2021 `[PATCH net-next 0/4]` carried the id of a 2020 `[PATCH net 3/9]`,
    its patches those of 4/9..7/9, each in reply to the cover letter's id, and single patches
    the ids of other old patches. The new patches joined the old series' thread, where the old
    patches took their ids: the 2021 series was in no version, and each single patch was
    flagged ambiguous and never tested. A reply answers a mail sent before it: here, the new
    one."""
    hayes = ("Hayes Wang", "hayeswang@realtek.example")
    old = make_series(tree, SeriesSpec(title="r8152: serial fixes", author=hayes, patches=5,
                                       start_date=dt.datetime(2020, 1, 21, 12, 40, tzinfo=dt.UTC)))
    new = make_series(tree, SeriesSpec(title="r8152: minor adjustments", author=hayes, patches=2,
                                       start_date=dt.datetime(2021, 2, 19, 9, 4, tzinfo=dt.UTC)))
    new = reuse_ids(new, [msgs_id(m) for m in old[3:6]])
    (single,) = make_series(tree, SeriesSpec(
        title="r8152: move r8153_mac_clk_spd", author=hayes, patches=1, cover=False,
        start_date=dt.datetime(2021, 2, 19, 9, 38, tzinfo=dt.UTC)))
    single = with_header(single, "Message-ID", f"<{msgs_id(old[1])}>")
    review = make_reply(new[1], author=("Rita Reviewer", "rita@example.org"),
                        body="Fine.", trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"])
    mails = [*old, *new, single, review]
    for batch in [[m] for m in mails] if separately else [mails]:
        store(db, batch, ingest_settings)

    def title(raw: bytes) -> str:
        return header(raw, "Subject").split("] ", 1)[1]

    by_title = {s["title"]: s for s in all_series(db)}
    assert sorted(by_title) == sorted(["r8152: serial fixes", "r8152: minor adjustments",
                                       title(single)])
    for sent in (old, new, [single]):
        (version,) = by_title[title(sent[0])]["versions"]
        assert version["complete"], version["notes"]
        patches = sent[1:] if len(sent) > 1 else sent
        assert [(p["sent_message_id"], p["subject"]) for p in version["patches"]] == [
            (msgs_id(m), header(m, "Subject")) for m in patches]
    (new_version,) = by_title["r8152: minor adjustments"]["versions"]
    assert [msgid for n in new_version["notes"] for msgid in re.findall(r"<([^>]+)>", n)] == [
        msgs_id(m) for m in new]
    assert all("which send other parts (an id the sender used again); took the one in this "
               "thread" in n for n in new_version["notes"])
    # the review answers the new 1/2, sent a year after the old patch under its id
    given = [(t["name"], t["value"]) for p in new_version["patches"] for t in p["trailers"]
             if t["origin"] != "own"]
    assert given == [("Reviewed-by", "Rita Reviewer <rita@example.org>")]
    (old_version,) = by_title["r8152: serial fixes"]["versions"]
    assert not [t for p in old_version["patches"] for t in p["trailers"] if t["origin"] != "own"]
