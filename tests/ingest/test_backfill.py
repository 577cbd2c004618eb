"""Backfilling a whole public-inbox archive through git: many epochs walked in order, each with
its own cursor, and objects a partial mirror lacks or holds corrupt recorded and walked past; the
layouts people hold besides a v2 inbox (one epoch on its own, a folder of epoch mirrors, a v1
inbox), and what is no archive refused before it is walked.

The archive is made by public-inbox itself (`import_mbox` with a small epoch size); the bad
objects are made the way they happen on disk: the packs exploded into loose objects (as a
mirror copied file by file holds them), then one file deleted and one damaged.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from bot.cli.progress import WalkBar
from bot.demo.threads import SeriesSpec, as_mbox, make_reply, make_series, make_tree
from bot.ingest.archive_layout import epoch_of_url
from bot.ingest.epoch_slice import msgid_of
from bot.ingest.pigit import PiGitSource, commit_runs, parse_log
from bot.ingest.sources import RawMail
from tests.cli import Lorelab
from tests.support.gitrepo import git
from tests.support.pi_server import PublicInbox, missing_reason

pytestmark = pytest.mark.skipif(missing_reason() is not None, reason=missing_reason() or "")


def archive_mails(tree: Path) -> list[bytes]:
    """Three 2-patch series with a cover letter, each with two review replies: 15 messages."""
    out: list[bytes] = []
    for n in range(3):
        series = make_series(tree, SeriesSpec(title=f"mm/vmscan: backfill part {n}", patches=2))
        out += series
        out += [make_reply(series[1 + k], author=("Rita Reviewer", "rita@example.org"),
                           body=f"Reviewed part {n} patch {k}.") for k in range(2)]
    return out


def archive(tmp_path: Path, tree: Path) -> tuple[list[bytes], PublicInbox]:
    """The mails, and a public-inbox archive of them in several epochs (one every 6 KB)."""
    raws = archive_mails(tree)
    pi = PublicInbox(tmp_path / "pi", index_level="basic")
    mbox = tmp_path / "archive.mbox"
    mbox.write_bytes(as_mbox(raws))
    pi.import_mbox(mbox, index=False, epoch_bytes=6_000)
    return raws, pi


def epoch_dirs(pi: PublicInbox) -> list[Path]:
    """The inbox's epoch repositories, oldest first."""
    return sorted((pi.inbox / "git").glob("*.git"), key=lambda p: int(p.name[:-4]))


def explode_packs(git_dir: Path) -> None:
    """Every packed object as a loose file, the packs gone (a mirror copied file by file)."""
    pack_dir = git_dir / "objects" / "pack"
    for pack in sorted(pack_dir.glob("*.pack")):
        data = pack.read_bytes()
        for stale in pack_dir.glob(pack.stem + ".*"):
            stale.unlink()
        subprocess.run(["git", "--git-dir", str(git_dir), "unpack-objects", "-q"], input=data,
                       check=True)


def message_blobs(git_dir: Path) -> list[tuple[str, str]]:
    """(commit, blob) of each message the epoch added, oldest first."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "log", "--reverse", "--raw",
                          "--no-renames", "--no-abbrev", "--format=%x00%H"],
                         capture_output=True, check=True).stdout
    return [(c.commit, c.blob) for c in parse_log(out) if not c.removed]


def loose(git_dir: Path, oid: str) -> Path:
    return git_dir / "objects" / oid[:2] / oid[2:]


def damage(path: Path) -> None:
    """Flip bytes inside the compressed stream: git inflates garbage and gives up mid-object."""
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def stored_msgids(db_file: Path) -> list[str]:
    with sqlite3.connect(db_file) as conn:
        return [row[0] for row in conn.execute("SELECT msgid FROM messages")]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tree") / "linux")


def test_a_walk_records_a_missing_and_a_corrupt_object_and_stores_everything_else(
    tmp_path: Path, tree: Path
) -> None:
    raws, pi = archive(tmp_path, tree)
    epochs = epoch_dirs(pi)
    assert len(epochs) >= 3, "the archive should span several epochs"
    removed_commit, removed_blob = message_blobs(epochs[1])[0]
    corrupt_commit, corrupt_blob = message_blobs(epochs[-1])[-1]
    for epoch in (epochs[1], epochs[-1]):
        explode_packs(epoch)
    loose(epochs[1], removed_blob).unlink()
    damage(loose(epochs[-1], corrupt_blob))

    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    got = lorelab.json("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm")
    assert (got["stored"], got["skipped"], got["duplicates"]) == (len(raws) - 2, 2, 0)
    unreadable = {
        raw for raw in raws
        if msgid_of(raw) not in stored_msgids(tmp_path / "lorelab.db")
    }
    assert len(unreadable) == 2

    (source,) = lorelab.json("sources")
    assert source["last_error"] is None and source["skipped"] == 2
    skips = {s["commit"]: s for s in source["skips"]}
    assert set(skips) == {removed_commit, corrupt_commit}
    assert skips[removed_commit]["object"] == removed_blob
    assert skips[removed_commit]["reason"].startswith("missing object")
    assert skips[removed_commit]["epoch"] == 1
    assert skips[corrupt_commit]["reason"].startswith("corrupt object")
    assert set(source["position"]) == {f"epoch/{n}" for n in range(len(epochs))}
    table = lorelab.run("sources").stdout.decode()
    assert f"commit {removed_commit}" in table and "2 commits skipped" in table

    again = lorelab.json("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm")
    assert (again["read"], again["stored"], again["skipped"]) == (0, 0, 0)
    assert len(stored_msgids(tmp_path / "lorelab.db")) == len(raws) - 2
    (source,) = lorelab.json("sources")
    assert source["last_error"] is None and source["skipped"] == 2


def test_epochs_are_walked_in_order_and_the_bar_shows_each_epoch_and_its_rate(
    tmp_path: Path, tree: Path
) -> None:
    raws, pi = archive(tmp_path, tree)
    source = PiGitSource(str(pi.inbox), "linux-mm")
    walked = [item for piece in source.slices({}, 4) for item in piece.read()]
    assert all(isinstance(mail, RawMail) for mail in walked)
    epochs_in_order = [int(mail.origin.split("#", 1)[1].split(":", 1)[0]) for mail in walked]
    assert epochs_in_order == sorted(epochs_in_order) and epochs_in_order[-1] >= 2
    assert [msgid_of(raw) for raw in raws] == [msgid_of(mail.data) for mail in walked]

    screen = StringIO()
    with WalkBar(Console(file=screen, force_terminal=True, width=100)) as bar:
        for number, changes in enumerate((5, 7)):
            bar.epoch(number, changes)
            bar.stored(changes)
    shown = screen.getvalue()
    assert "epoch 1" in shown and "7/7" in shown and "msg/s" in shown


def lorelab_in(tmp_path: Path) -> Lorelab:
    return Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")


def removed_msgids(db_file: Path) -> list[str]:
    with sqlite3.connect(db_file) as conn:
        return [row[0] for row in conn.execute("SELECT msgid FROM message_removals")]


def v1_inbox(tmp_path: Path, raws: list[bytes], *, index: bool = False) -> PublicInbox:
    """A public-inbox v1 inbox of `raws`: one repository, a file per message."""
    pi = PublicInbox(tmp_path / "pi", index_level="basic", version=1)
    mbox = tmp_path / "v1.mbox"
    mbox.write_bytes(as_mbox(raws))
    pi.import_mbox(mbox, index=index)
    return pi


def test_a_v1_inbox_is_walked_then_only_its_new_mail_and_removals(
    tmp_path: Path, tree: Path
) -> None:
    raws = archive_mails(tree)
    pi = v1_inbox(tmp_path, raws[:-1])
    lorelab = lorelab_in(tmp_path)
    got = lorelab.json("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm")
    assert (got["stored"], got["skipped"], got["removals"]) == (len(raws) - 1, 0, 0)
    assert got["series_created"] == 3
    assert sorted(stored_msgids(tmp_path / "lorelab.db")) == sorted(map(msgid_of, raws[:-1]))

    pi.deliver(raws[-1])
    pi.remove(raws[0])
    again = lorelab.json("ingest", "pi-git", str(pi.inbox), "--list", "linux-mm")
    assert (again["stored"], again["duplicates"], again["removals"]) == (1, 0, 1)
    assert removed_msgids(tmp_path / "lorelab.db") == [msgid_of(raws[0])]
    assert len(stored_msgids(tmp_path / "lorelab.db")) == len(raws)
    (source,) = lorelab.json("sources")
    assert set(source["position"]) == {"epoch/0"} and source["last_error"] is None


def test_one_epoch_given_alone_bare_or_cloned_is_walked_as_that_epoch(
    tmp_path: Path, tree: Path
) -> None:
    _, pi = archive(tmp_path, tree)
    epochs = epoch_dirs(pi)
    assert len(epochs) >= 3
    # as GitHub's mirrors of lore are named and cloned, and as lore's own epoch is cloned
    mirror = tmp_path / "linux-mm.kvack.org.2"
    subprocess.run(["git", "clone", "-q", str(epochs[2]), str(mirror)], check=True)
    clone = tmp_path / "linux-mm"
    subprocess.run(["git", "clone", "-q", str(epochs[0]), str(clone)], check=True)
    lorelab = lorelab_in(tmp_path)
    for location, epoch in ((epochs[1], 1), (mirror, 2), (clone, 0)):
        got = lorelab.json("ingest", "pi-git", str(location), "--list", "linux-mm")
        assert got["stored"] == len(message_blobs(epochs[epoch])) > 0
        (source,) = (s for s in lorelab.json("sources") if s["location"] == str(location))
        assert set(source["position"]) == {f"epoch/{epoch}"}


def test_a_folder_of_one_lists_epoch_mirrors_is_walked_as_its_epochs(
    tmp_path: Path, tree: Path
) -> None:
    raws, pi = archive(tmp_path, tree)
    epochs = epoch_dirs(pi)
    mirrors = tmp_path / "mirrors"  # `git clone [--mirror]` of GitHub's linux-mm.kvack.org.N
    for number, epoch in enumerate(epochs):  # bare and not, alternately
        how = ["--mirror"] if number % 2 else []
        name = f"linux-mm.kvack.org.{number}" + (".git" if how else "")
        subprocess.run(["git", "clone", "-q", *how, str(epoch), str(mirrors / name)], check=True)
    lorelab = lorelab_in(tmp_path)
    got = lorelab.json("ingest", "pi-git", str(mirrors), "--list", "linux-mm")
    assert (got["stored"], got["skipped"]) == (len(raws), 0)
    (source,) = lorelab.json("sources")
    assert set(source["position"]) == {f"epoch/{n}" for n in range(len(epochs))}

    subprocess.run(["git", "clone", "-q", "--mirror", str(epochs[0]),
                    str(mirrors / "linux-pm.vger.kernel.org.0.git")], check=True)
    failed = lorelab.run("ingest", "pi-git", str(mirrors), "--list", "linux-mm", check=False)
    assert failed.returncode == 66
    assert ("several archives (linux-mm.kvack.org, linux-pm.vger.kernel.org)"
            in failed.stderr.decode())


def test_a_v1_commit_of_several_messages_is_never_cut_between_slices(tmp_path: Path) -> None:
    repo = tmp_path / "inbox"
    git(tmp_path, "init", "-q", str(repo))
    names = []
    for n in range(3):
        digest = hashlib.sha1(f"<{n}@example.org>".encode()).hexdigest()
        names.append(f"{digest[:2]}/{digest[2:]}")
        (repo / names[-1]).parent.mkdir(exist_ok=True)
        (repo / names[-1]).write_text(f"Message-ID: <{n}@example.org>\n\nmail {n}\n")
    git(repo, "add", names[0])
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "add", *names[1:])
    git(repo, "commit", "-q", "-m", "two at once")
    git(repo, "rm", "-q", names[0])
    git(repo, "commit", "-q", "-m", "a removal")
    out = subprocess.run(["git", "-C", str(repo), "log", "--reverse", "--raw", "--no-renames",
                          "--no-abbrev", "--format=%x00%H"], capture_output=True, check=True).stdout
    changes = parse_log(out)
    assert [c.removed for c in changes] == [False, False, False, True]
    assert changes[1].commit == changes[2].commit != changes[0].commit
    assert [len(run) for run in commit_runs(changes, 2)] == [3, 1]
    assert [len(run) for run in commit_runs(changes, 1)] == [1, 2, 1]


def test_a_git_tree_that_holds_no_mail_is_refused_before_its_history_is_walked(
    tmp_path: Path, tree: Path
) -> None:
    lorelab = lorelab_in(tmp_path)
    failed = lorelab.run("ingest", "pi-git", str(tree), "--list", "linux-mm", check=False)
    assert failed.returncode == 66
    assert failed.stderr.decode() == (
        f"lorelab: {tree / '.git'}: a git repository, but not a public-inbox archive (its head"
        " holds no message `m` and no v1 message folders); give an archive's path\n")
    (source,) = lorelab.json("sources")
    assert source["position"] == {} and "not a public-inbox archive" in source["last_error"]


@pytest.mark.slow  # a public-inbox-httpd of its own
def test_a_v1_inbox_over_http_is_followed_through_its_feed_and_pi_git_says_so(
    tmp_path: Path, tree: Path
) -> None:
    raws = archive_mails(tree)
    pi = v1_inbox(tmp_path, raws, index=True)
    pi.start()
    try:
        lorelab = lorelab_in(tmp_path)
        failed = lorelab.run("ingest", "pi-git", pi.base_url, "--list", "linux-mm", check=False)
        assert failed.returncode == 75
        assert "follow a v1 inbox with `lorelab ingest lore URL`" in failed.stderr.decode()
        got = lorelab.json("ingest", "lore", pi.base_url, "--list", "linux-mm", "--once")
        assert got["stored"] == len(raws)
    finally:
        pi.stop()


def test_a_url_naming_one_epoch_is_that_epoch_and_an_inbox_url_none() -> None:
    assert epoch_of_url("https://lore.kernel.org/lkml/15") == 15
    assert epoch_of_url("https://lore.kernel.org/lkml/15/") == 15
    assert epoch_of_url(
        "https://github.com/linux-mailinglist-archives/linux-kernel.vger.kernel.org.4") == 4
    assert epoch_of_url("https://example.org/mirrors/linux-mm/git/2.git") == 2
    assert epoch_of_url("https://lore.kernel.org/linux-mm") is None
    assert epoch_of_url("https://lore.kernel.org/linux-mm/") is None


@pytest.mark.slow  # a public-inbox-httpd of its own
def test_one_epoch_followed_over_http_is_mirrored_alone(tmp_path: Path, tree: Path) -> None:
    _, pi = archive(tmp_path, tree)
    epochs = epoch_dirs(pi)
    pi.index()
    pi.start()
    try:
        lorelab = lorelab_in(tmp_path)
        url = f"{pi.base_url}/1"  # as lore serves an epoch: https://lore.kernel.org/lkml/1
        got = lorelab.json("ingest", "pi-git", url, "--list", "linux-mm")
        assert got["stored"] == len(message_blobs(epochs[1])) > 0
        assert lorelab.json("ingest", "pi-git", url, "--list", "linux-mm")["read"] == 0
        (source,) = lorelab.json("sources")
        assert set(source["position"]) == {"epoch/1"} and source["last_error"] is None
        failed = lorelab.run("ingest", "pi-git", f"{pi.base_url}/999", "--list", "linux-mm",
                             check=False)
        assert failed.returncode == 75 and "git clone failed" in failed.stderr.decode()
    finally:
        pi.stop()
