"""Finding the diff in a mail body: files, change kinds, line counts, and the patch fingerprint.

Real diffs come from git in a temporary repository, and git itself (`--numstat`,
`--name-status`) is the oracle for what each file's change is.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.demo import SEED_DIR as SEEDS
from bot.mail.diff import patch_fingerprint, scan_diff
from tests.support.gitrepo import git, needs_git


def source(lines: int, tag: str = "") -> str:
    return "".join(f"\tline {i} of the file {tag}\n" for i in range(lines))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "mm").mkdir()
    (repo / "mm" / "vmscan.c").write_text(source(80, "vmscan"))
    (repo / "mm" / "swap.c").write_text(source(40, "swap"))
    (repo / "mm" / "old_name.c").write_text(source(30, "renamed"))
    (repo / "mm" / "moved_and_edited.c").write_text(source(30, "moved"))
    (repo / "mm" / "gone.c").write_text(source(10, "gone"))
    (repo / "scripts").mkdir()
    (repo / "scripts" / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "scripts" / "both.sh").write_text("#!/bin/sh\necho both\n")
    (repo / "fw.bin").write_bytes(bytes(range(256)))
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / "a file.c").write_text(source(5, "spaced"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def make_every_kind_of_change(repo: Path) -> None:
    lines = source(80, "vmscan").splitlines(keepends=True)
    lines[10] = "\tchanged line ten\n"
    lines.insert(50, "\tinserted line\n")
    del lines[70]
    (repo / "mm" / "vmscan.c").write_text("".join(lines))
    (repo / "mm" / "workingset.c").write_text(source(12, "new"))  # added
    (repo / "mm" / "gone.c").unlink()  # deleted
    git(repo, "mv", "mm/old_name.c", "mm/new_name.c")  # pure rename: no hunks
    git(repo, "mv", "mm/moved_and_edited.c", "mm/moved.c")
    moved = (repo / "mm" / "moved.c").read_text().replace("line 3 of", "line three of")
    (repo / "mm" / "moved.c").write_text(moved)  # rename with a hunk
    (repo / "scripts" / "run.sh").chmod(0o755)  # mode only
    (repo / "scripts" / "both.sh").chmod(0o755)
    (repo / "scripts" / "both.sh").write_text("#!/bin/sh\necho both changed\n")  # mode + content
    (repo / "fw.bin").write_bytes(bytes(reversed(range(256))))  # binary
    (repo / "dir with space" / "a file.c").write_text(source(5, "spaced!"))
    git(repo, "add", "-A")


def git_oracle(repo: Path, *rev: str) -> dict[str, tuple[int | None, int | None]]:
    """path -> (added, removed) from `git diff --numstat`; None for binary files."""
    result = {}
    for line in git(repo, "diff", "--numstat", "-M", "-z", *rev).split("\0"):
        if not line:
            continue
        added, removed, path = line.split("\t", 2)
        result[path] = (
            None if added == "-" else int(added), None if removed == "-" else int(removed)
        )
    return result


@needs_git
def test_git_diff_every_change_kind_matches_git(repo: Path) -> None:
    make_every_kind_of_change(repo)
    diff = git(repo, "diff", "--cached", "-M", "--binary")
    scan = scan_diff("Some text before.\n\n" + diff)

    by_path = {f.path: f for f in scan.files}
    assert set(by_path) == {
        "mm/vmscan.c", "mm/workingset.c", "mm/gone.c", "mm/new_name.c", "mm/moved.c",
        "scripts/run.sh", "scripts/both.sh", "fw.bin", "dir with space/a file.c",
    }
    kinds = {path: f.change for path, f in by_path.items()}
    assert kinds == {
        "mm/vmscan.c": "modify", "mm/workingset.c": "add", "mm/gone.c": "delete",
        "mm/new_name.c": "rename", "mm/moved.c": "rename", "scripts/run.sh": "mode",
        "scripts/both.sh": "modify", "fw.bin": "modify", "dir with space/a file.c": "modify",
    }
    assert by_path["mm/new_name.c"].old_path == "mm/old_name.c"
    assert by_path["mm/moved.c"].old_path == "mm/moved_and_edited.c"
    assert by_path["fw.bin"].binary and not by_path["mm/vmscan.c"].binary

    # git's own count of added and removed lines, file by file (the oracle ignores paths of
    # renames in its -z output format, so compare on the counts we both know)
    oracle = git(repo, "diff", "--cached", "--numstat", "-M")
    for line in oracle.splitlines():
        added, removed, path = line.split("\t", 2)
        path = re.sub(r"\{.* => (.*)\}", r"\1", path) if "=>" in path else path
        path = path.split(" => ")[-1]
        change = by_path[path]
        if added == "-":
            assert change.binary
        else:
            assert (change.added, change.removed) == (int(added), int(removed)), path
    assert scan.prose.startswith("Some text before.")
    assert scan.diff is not None and scan.diff.startswith("diff --git")


@needs_git
def test_binary_without_binary_payload(repo: Path) -> None:
    (repo / "fw.bin").write_bytes(bytes(reversed(range(256))))
    (repo / "new.bin").write_bytes(b"\0\1\2")
    git(repo, "add", "-A")
    scan = scan_diff(git(repo, "diff", "--cached"))
    by_path = {f.path: f for f in scan.files}
    assert by_path["fw.bin"].binary and by_path["fw.bin"].change == "modify"
    assert by_path["new.bin"].binary and by_path["new.bin"].change == "add"


@needs_git
def test_copy_is_recognised(repo: Path) -> None:
    (repo / "mm" / "swap_copy.c").write_text(source(40, "swap"))
    git(repo, "add", "-A")
    scan = scan_diff(git(repo, "diff", "--cached", "-C", "--find-copies-harder"))
    assert [(f.path, f.change, f.old_path) for f in scan.files] == [
        ("mm/swap_copy.c", "copy", "mm/swap.c")
    ]


@needs_git
def test_counts_agree_with_unidiff_on_a_large_diff(repo: Path) -> None:
    unidiff = pytest.importorskip("unidiff")
    text = source(400, "vmscan").splitlines(keepends=True)
    for at in range(5, 395, 13):
        text[at] = "\tedited\n"
        text.insert(at + 3, "\t-- a line that looks like a signature\n")
        text.insert(at + 5, "\t++ a line that looks like a header\n")
    (repo / "mm" / "vmscan.c").write_text("".join(text))
    diff = git(repo, "diff")
    ours = scan_diff(diff).files
    theirs = unidiff.PatchSet(diff)
    assert [(f.path, f.added, f.removed) for f in ours] == [
        (f.path, f.added, f.removed) for f in theirs
    ]


@needs_git
def test_removed_lines_that_look_like_file_headers_stay_in_the_hunk(repo: Path) -> None:
    (repo / "notes.txt").write_text("keep\n-- x\n++ y\nkeep\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "notes")
    (repo / "notes.txt").write_text("keep\nkeep\n")
    diff = git(repo, "diff")
    assert "\n--- x\n+++ y\n" not in diff and "\n--- x\n-++ y\n" in diff
    scan = scan_diff(diff + "-- \n2.39.5\n")
    assert [(f.path, f.added, f.removed) for f in scan.files] == [("notes.txt", 0, 2)]
    assert scan.prose == "-- \n2.39.5\n"


@needs_git
def test_no_newline_at_end_of_file_lines(repo: Path) -> None:
    (repo / "mm" / "swap.c").write_text(source(40, "swap") + "\tlast line without newline")
    (repo / "mm" / "vmscan.c").write_text(source(80, "vmscan").replace("line 2 ", "line two "))
    diff = git(repo, "diff")
    assert "\\ No newline at end of file" in diff
    scan = scan_diff(diff)
    assert [(f.path, f.added, f.removed) for f in scan.files] == [
        ("mm/swap.c", 1, 0), ("mm/vmscan.c", 1, 1)
    ]
    assert scan.problems == []


def unquoted_seed_diff() -> str:
    """The vmscan seed's patch (2008, `Index:` + `---`/`+++` style), taken out of its quote."""
    text = (SEEDS / "vmscan-bailout-hackbench-reply.txt").read_text()
    start = text.index("> Index: b/mm/vmscan.c")
    end = text.index(">\n>\n> --\n")
    return re.sub(r"(?m)^> ?", "", text[start:end])


def test_plain_index_style_diff_from_the_vmscan_seed() -> None:
    diff = unquoted_seed_diff()
    assert diff.startswith("Index: b/mm/vmscan.c\n====")
    scan = scan_diff("The patch:\n\n" + diff + "\nThanks.\n")
    # its own diffstat says: mm/vmscan.c | 15 +++++++++------, 9 insertions(+), 6 deletions(-)
    assert [(f.path, f.change, f.added, f.removed) for f in scan.files] == [
        ("mm/vmscan.c", "modify", 9, 6)
    ]
    assert scan.prose.startswith("The patch:") and "Thanks." in scan.prose


def test_a_quoted_diff_is_not_this_messages_diff() -> None:
    text = (SEEDS / "vmscan-bailout-hackbench-reply.txt").read_text()
    scan = scan_diff(text)
    assert scan.diff is None and scan.files == [] and scan.fingerprint is None


@needs_git
def test_crlf_line_endings_give_the_same_result(repo: Path) -> None:
    make_every_kind_of_change(repo)
    diff = git(repo, "diff", "--cached", "-M")
    lf = scan_diff(diff)
    crlf = scan_diff(diff.replace("\n", "\r\n"))
    assert crlf.files == lf.files
    assert crlf.fingerprint == lf.fingerprint


def test_quilt_style_paths_lose_their_first_component() -> None:
    diff = (
        "--- linux-2.6.orig/mm/vmscan.c\t2008-12-04 10:00:00.000000000 +0900\n"
        "+++ linux-2.6/mm/vmscan.c\t2008-12-04 10:05:00.000000000 +0900\n"
        "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    )
    assert [(f.path, f.added, f.removed) for f in scan_diff(diff).files] == [("mm/vmscan.c", 1, 1)]


def test_text_after_an_inline_diff_is_prose() -> None:
    body = (
        "How about this instead:\n\n"
        "diff --git a/mm/swap.c b/mm/swap.c\n--- a/mm/swap.c\n+++ b/mm/swap.c\n"
        "@@ -10,3 +10,3 @@ void f(void)\n a\n-b\n+c\n d\n"
        "\nUntested. Reviewed-by: nobody\n"
    )
    scan = scan_diff(body)
    assert scan.diff is not None and scan.diff.endswith(" d\n")
    assert scan.prose == "How about this instead:\n\n\nUntested. Reviewed-by: nobody\n"
    assert scan.lead == "How about this instead:\n\n"


def test_a_diff_cut_off_inside_a_hunk_is_kept_and_noted() -> None:
    body = "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,5 +1,6 @@\n a\n+b\n c\n"
    scan = scan_diff(body)
    assert [(f.path, f.added) for f in scan.files] == [("x.c", 1)]
    assert any("ends inside a hunk" in p for p in scan.problems)


def test_a_mail_wrapped_hunk_still_counts_right() -> None:
    # a Gmail reply: a long context line wrapped, and an empty context line lost its space
    body = (
        "diff --git a/mm/vmscan.c b/mm/vmscan.c\n--- a/mm/vmscan.c\n+++ b/mm/vmscan.c\n"
        "@@ -3095,6 +3095,8 @@ static int folio_update_gen(struct folio *folio, int gen)\n"
        " static int folio_inc_gen(struct lruvec *lruvec, struct folio *folio,\n"
        "bool reclaiming)\n"
        " {\n"
        "        int type = folio_is_file_lru(folio);\n"
        "+       struct lru_gen_mm_walk *walk = current->reclaim_state->mm_walk;\n"
        "+\n"
        "\n"
        "        int new_gen;\n"
        "        unsigned long new_flags;\n"
        "\nThat is all.\n"
    )
    scan = scan_diff(body)
    assert [(f.path, f.added, f.removed) for f in scan.files] == [("mm/vmscan.c", 2, 0)]
    assert scan.prose == "\nThat is all.\n"


@needs_git
def test_fingerprint_survives_a_rebase_and_whitespace(repo: Path) -> None:
    (repo / "mm" / "vmscan.c").write_text(
        source(80, "vmscan").replace("line 40 of", "line forty of")
    )
    first = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    # the same change on a base with ten more lines at the top: other line numbers and index
    (repo / "mm" / "vmscan.c").write_text("/* header */\n" * 10 + source(80, "vmscan"))
    git(repo, "commit", "-qam", "grow")
    (repo / "mm" / "vmscan.c").write_text(
        "/* header */\n" * 10 + source(80, "vmscan").replace("line 40 of", "line forty of")
    )
    rebased = git(repo, "diff")
    assert re.findall(r"@@.*@@", first) != re.findall(r"@@.*@@", rebased)
    assert patch_fingerprint(first) == patch_fingerprint(rebased) is not None
    # a mailer turning tabs into spaces does not change it either
    assert patch_fingerprint(first.replace("\t", "        ")) == patch_fingerprint(first)
    # but another change does
    assert patch_fingerprint(first.replace("forty", "fourty")) != patch_fingerprint(first)


@needs_git
def test_fingerprint_ignores_file_order(repo: Path) -> None:
    (repo / "mm" / "vmscan.c").write_text(source(80, "vmscan").replace("line 1 ", "line one "))
    (repo / "mm" / "swap.c").write_text(source(40, "swap").replace("line 1 ", "line one "))
    diff = git(repo, "diff")
    sections = re.split(r"(?m)^(?=diff --git )", diff)[1:]
    assert len(sections) == 2
    assert patch_fingerprint("".join(reversed(sections))) == patch_fingerprint(diff)
    assert patch_fingerprint(sections[0]) != patch_fingerprint(diff)


def test_no_diff_no_fingerprint() -> None:
    assert patch_fingerprint("just words\n--- not a diff\n") is None
