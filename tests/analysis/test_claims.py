"""Claims in messages: what the seeds and a few made-up messages claim, and what can be judged."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from bot.analysis.claims import JudgedClaim, MessageClaims, analyse_message, extract_claims
from bot.analysis.claims.input import read_message_text, read_reduced
from bot.demo import SEED_DIR as SEEDS
from tests.cli import Lorelab


def analyse_seed(name: str) -> MessageClaims:
    message = read_message_text((SEEDS / name).read_bytes())
    return analyse_message(message.subject, message.sender, message.body, message.msgid)


# --- the lru_gen seed: before/after numbers from 18 runs, no spread


@pytest.fixture(scope="module")
def lru_gen() -> MessageClaims:
    return analyse_seed("lru_gen-batch-counters-reply.eml")


def test_lru_gen_before_after_claim_belongs_to_the_quoted_author(lru_gen: MessageClaims) -> None:
    assert [c.claim.kind for c in lru_gen.claims] == ["before-after"]
    claim = lru_gen.claims[0].claim
    assert claim.speaker.role == "quoted"
    assert claim.speaker.quote_depth == 1
    assert claim.speaker.name == "Kairui Song"
    assert [line.raw for line in claim.lines] == [
        "> Before: 44017.78 Ops/sec",
        "> After:  44687.08 Ops/sec (+1.5%)",
    ]
    assert (claim.first_line, claim.last_line) == (25, 26)  # lines of the decoded body
    pair = claim.before_after
    assert pair is not None
    assert (pair.before, pair.after, pair.unit, pair.stated_pct) == (
        44017.78, 44687.08, "Ops/sec", 1.5,
    )  # fmt: skip
    assert pair.higher_is_better is True
    assert claim.change is not None and claim.change.direction == "improvement"
    assert claim.runs == 18
    assert claim.runs_line is not None and claim.runs_line.number == 23
    assert claim.runs_line.raw == "> Average result of 18 test runs:"
    assert set(claim.benchmarks) == {"memcached", "memtier_benchmark"}


def test_lru_gen_claim_cannot_be_judged_without_spread(lru_gen: MessageClaims) -> None:
    judgement = lru_gen.claims[0].judgement
    assert judgement.status == "needs-spread"
    # Student's t with 34 degrees of freedom, not the normal z (which gave 2.3%).
    assert judgement.cv_threshold_pct == pytest.approx(2.23, abs=0.005)
    assert "no spread" in judgement.summary
    assert "2.2%" in judgement.summary


def test_lru_gen_commands_and_the_reviewers_doubt(lru_gen: MessageClaims) -> None:
    commands = {c.benchmark: c for c in lru_gen.commands}
    assert set(commands) == {"memcached", "memtier_benchmark"}
    memtier = commands["memtier_benchmark"]
    assert len(memtier.lines) == 4  # three continuation lines joined
    assert memtier.text.startswith("memtier_benchmark -S /tmp/memcached.socket")
    assert memtier.text.endswith("--pipeline 8 -x 6")
    assert memtier.speaker.name == "Kairui Song"
    # The reviewer's own words, not the quoted author's; the diff after them is not prose.
    [doubt] = lru_gen.doubts
    assert doubt.speaker.role == "replier"
    assert doubt.speaker.email == "yuzhao@google.com"
    assert "assuming it's not noise" in doubt.text
    assert "folio" not in doubt.text
    assert "mongodb" in lru_gen.benchmarks  # named by the reviewer


# --- the lru_lock seed: a bare percentage, reduced headers


@pytest.fixture(scope="module")
def lru_lock() -> MessageClaims:
    return analyse_seed("per-lruvec-lru_lock-cover-reply.txt")


def test_reduced_file_gives_subject_sender_and_body() -> None:
    message = read_message_text((SEEDS / "per-lruvec-lru_lock-cover-reply.txt").read_bytes())
    assert message.reduced
    assert message.subject == "Re: [PATCH v4 0/9] per lruvec lru_lock for memcg"
    assert message.sender == "Konstantin Khlebnikov <khlebnikov@yandex-team.ru>"
    assert message.body.splitlines()[0] == "On 19/11/2019 15.23, Alex Shi wrote:"


def test_lru_lock_17_percent_claim_has_no_runs_or_spread(lru_lock: MessageClaims) -> None:
    first = lru_lock.claims[0]
    claim = first.claim
    assert claim.kind == "percentage"
    assert claim.speaker.role == "quoted" and claim.speaker.name == "Alex Shi"
    assert (claim.first_line, claim.last_line) == (11, 12)
    assert "improved 17%" in claim.lines[0].raw
    assert claim.change is not None
    assert (claim.change.low_pct, claim.change.direction) == (17.0, "improvement")
    assert claim.runs is None
    assert {"dd", "case-lru-file-readtwice", "vm-scalability"} <= set(claim.benchmarks)
    assert first.judgement.status == "no-data"
    assert "no runs or spread" in first.judgement.summary


def test_lru_lock_version_history_claim_is_found_too(lru_lock: MessageClaims) -> None:
    texts = [c.claim.text for c in lru_lock.claims]
    assert texts[1] == "v1: initial version, aim testing show 5% performance increase"
    assert lru_lock.claims[1].claim.benchmarks == ("aim",)  # its own sentence, not the block's
    assert len(texts) == 2  # the diffstat and the patch list hold no claims


# --- the vmscan bail-out seed: two tables of hackbench runs


@pytest.fixture(scope="module")
def bailout() -> MessageClaims:
    return analyse_seed("vmscan-bailout-hackbench-reply.txt")


def test_bailout_tables_are_read_back_into_samples(bailout: MessageClaims) -> None:
    kinds = [(c.claim.kind, c.claim.first_line) for c in bailout.claims]
    assert [k for k, _ in kinds] == ["table", "percentage", "table"]
    first, second = bailout.claims[0].claim, bailout.claims[2].claim
    assert first.table is not None and second.table is not None
    assert first.table.kernels == ("2.6.28-rc6", "bail-out")
    assert second.table.kernels == ("2.6.28-rc6", "this patch")
    assert [c.label for c in first.table.columns] == [
        "2.6.28-rc6 125", "2.6.28-rc6 130", "2.6.28-rc6 135",
        "bail-out 125", "bail-out 130", "bail-out 135",
    ]  # fmt: skip
    bail_135 = first.table.columns[5]
    assert len(bail_135.samples) == 10
    assert bail_135.samples[0] == 193.382 and bail_135.samples[8] == 103.189
    assert bail_135.summary == {"avg": 93.256, "std": 34.16, "min": 75.736, "max": 193.382}
    assert second.table.columns[4].summary["avg"] == 74.2083
    assert first.table.higher_is_better is False  # hackbench prints seconds
    assert first.runs == 10
    assert first.runs_line is not None and "mesured 10 times each" in first.runs_line.raw
    assert first.speaker.name == "KOSAKI Motohiro" and first.speaker.quote_depth == 1
    assert first.lines[0].raw.split() == [">", "2.6.28-rc6", "bail-out"]
    assert first.lines[-1].raw.startswith("> max")


EXPECTED_VERDICTS = {
    # docs/statistics.md, "Expected verdicts on the seed hackbench tables": the verdict of each
    # column on its own, then (docs/claims.md) once the table's three columns are one family.
    "bail-out 125": (4.79, 3.82, 3.31, -0.41, 6.63, 0.089, "inconclusive", "inconclusive"),
    "bail-out 130": (0.34, -0.08, 0.75, -2.91, 3.45, 0.853, "inconclusive", "inconclusive"),
    "bail-out 135": (18.75, 2.88, 3.36, -1.00, 7.38, 0.165, "inconclusive", "inconclusive"),
    "this patch 125": (-2.92, -2.61, -2.93, -5.47, -0.29, 0.043, "improvement", "inconclusive"),
    "this patch 130": (-3.33, -3.01, -2.98, -5.54, -0.51, 0.015, "improvement", "improvement"),
    "this patch 135": (-0.09, 1.15, 0.61, -2.70, 2.57, 0.579, "inconclusive", "inconclusive"),
}


def _comparisons(result: MessageClaims) -> dict[str, dict]:
    return {
        c["label"]: c
        for judged in result.claims
        for c in judged.judgement.to_dict()["comparisons"]
        if judged.claim.kind == "table"
    }


@pytest.mark.parametrize("label", EXPECTED_VERDICTS)
def test_bailout_verdicts_match_the_statistics_doc(bailout: MessageClaims, label: str) -> None:
    mean, median, hl, low, high, p, alone, family = EXPECTED_VERDICTS[label]
    got = _comparisons(bailout)[label]
    assert got["mean_pct"] == pytest.approx(mean, abs=0.006)
    assert got["median_pct"] == pytest.approx(median, abs=0.006)
    assert got["hl_pct"] == pytest.approx(hl, abs=0.006)
    assert got["ci_pct"] == pytest.approx([low, high], abs=0.006)
    assert got["p_value"] == pytest.approx(p, abs=0.0006)
    if alone == "improvement":
        assert got["verdict_alone"].startswith("improvement")
    assert got["verdict_kind"] == family
    assert got["fdr_demoted"] == (alone != family)
    assert (got["n_base"], got["n_patched"]) == (10, 10)
    assert got["line"].startswith(f"{label}: {hl:+.2f}% [{low:+.2f}%, {high:+.2f}%] p={p:.3f}")


def test_bailout_135_says_the_mean_misleads(bailout: MessageClaims) -> None:
    comparisons = _comparisons(bailout)
    notes = " ".join(comparisons["bail-out 135"]["notes"])
    assert "193.382, 103.189" in notes
    assert "bail-out 135: the mean change (+18.75%) misleads" in notes
    assert "tail regression" in notes
    for label in ("bail-out 125", "bail-out 130", "this patch 125", "this patch 130"):
        assert not any("misleads" in n for n in comparisons[label]["notes"]), label
    assert "93.414" in " ".join(comparisons["bail-out 125"]["notes"])


def test_bailout_table_summaries(bailout: MessageClaims) -> None:
    first, _, second = (c.judgement for c in bailout.claims)
    assert first.status == second.status == "judged"
    assert first.summary.startswith("None of 3 comparisons shows a change at 5%")
    # each column beside its own interval (they were once listed sorted, apart from their labels)
    for label, (low, high) in {"bail-out 125": ("-0.41", "+6.63"),
                               "bail-out 130": ("-2.91", "+3.45"),
                               "bail-out 135": ("-1.00", "+7.38")}.items():
        assert f"{label}: could not tell: between {low}% and {high}%" in first.summary, label
    # this patch 125 (p=0.043) does not survive Benjamini-Hochberg across the table's 3 columns.
    assert second.summary.startswith("1 of 3 comparisons show a change at 5%")
    assert first.notes == second.notes == ()  # printed avg/min/max agree with the rows read


def test_bailout_degression_claim_is_judged_by_the_table_above(bailout: MessageClaims) -> None:
    judged = bailout.claims[1]
    claim = judged.claim
    assert claim.text == "about 4-5% degression."
    assert claim.change is not None
    assert (claim.change.low_pct, claim.change.high_pct) == (4.0, 5.0)
    assert claim.change.direction == "regression"
    assert claim.refers_to == 1
    assert judged.judgement.status == "see-table"
    assert "does not support it" in judged.judgement.summary
    assert any("misleads" in note for note in judged.judgement.notes)


# --- made-up messages


def analyse(body: str, sender: str = "Rev Iewer <rev@example.org>") -> MessageClaims:
    return analyse_message("Re: [PATCH] test", sender, textwrap.dedent(body))


def test_table_with_run_numbers_and_summary_rows() -> None:
    result = analyse(
        """\
        Results in ops/sec, 8 runs each:

        run     base        patched
          1     1000.0      1052.0
          2     1003.0      1049.5
          3      998.5      1056.1
          4     1001.2      1050.3
          5      999.9      1047.7
          6     1004.4      1053.9
          7      997.1      1051.0
          8     1002.3      1048.8
        -----------------------------
        avg     1000.8      1052.2
        min      997.1      1047.7
        max     1004.4      1056.1

        So about 5% better.
        """
    )
    table_claim, summing_up = result.claims
    table = table_claim.claim.table
    assert table is not None
    assert table.kernels == ("base", "patched")
    assert table.columns[0].samples[:2] == (1000.0, 1003.0)  # the run numbers are not samples
    assert table.columns[1].summary == {"avg": 1052.2, "min": 1047.7, "max": 1056.1}
    assert table.higher_is_better is True
    assert table_claim.claim.speaker.role == "replier"
    [comparison] = table_claim.judgement.comparisons
    assert comparison.comparison.verdict.value == "improvement"
    assert comparison.comparison.beyond_delta
    # The printed patched avg is wrong (the runs average 1051.16): the reader is told.
    assert table_claim.judgement.notes == (
        "patched: printed avg 1052.2 differs from the 8 runs read (1051.16).",
    )
    assert summing_up.claim.refers_to == table_claim.claim.index
    assert "supports it" in summing_up.judgement.summary


def test_table_without_unit_or_benchmark_speaks_of_increase() -> None:
    result = analyse(
        """\
               A       B
             ===============
               10.1    11.2
               10.3    11.1
               10.2    11.4
               10.0    11.3
               10.4    11.0
        """
    )
    [judged] = result.claims
    [comparison] = judged.judgement.comparisons
    assert comparison.words.startswith("increase (")
    assert "improvement" not in comparison.line


def test_one_kernel_table_has_nothing_to_compare() -> None:
    result = analyse(
        """\
        threads    1       2       4
                   10.1    19.8    38.0
                   10.3    20.1    39.2
                   10.2    20.0    38.7
        """
    )
    [judged] = result.claims
    assert judged.claim.table is not None and len(judged.claim.table.columns) == 3
    assert judged.judgement.status == "no-comparison"


def test_without_with_claim_in_the_repliers_words() -> None:
    result = analyse(
        """\
        Hi,

        I ran fio randread on my box, averaged over 5 runs:

        w/o patch: 1234 MB/s
        w/ patch:  1300 MB/s

        Thanks.
        """
    )
    [judged] = result.claims
    claim = judged.claim
    assert claim.kind == "before-after"
    assert claim.speaker.role == "replier" and claim.speaker.name == "Rev Iewer"
    assert (claim.first_line, claim.last_line) == (5, 6)
    assert claim.before_after is not None
    assert (claim.before_after.before_label, claim.before_after.after_label) == (
        "w/o patch", "w/ patch",
    )  # fmt: skip
    assert claim.before_after.computed_pct == pytest.approx(5.35, abs=0.01)
    assert claim.runs == 5 and claim.benchmarks == ("fio",)
    assert judged.judgement.status == "needs-spread"
    assert judged.judgement.cv_threshold_pct == pytest.approx(3.6, abs=0.05)  # t with 8 df


def test_quoted_claim_and_own_claim_have_different_speakers() -> None:
    result = analyse(
        """\
        On Mon, 1 Jan 2024 10:00:00 +0000, Jane Dev <jane@example.org> wrote:
        > This improves will-it-scale page_fault2 throughput by 10%.

        I measured a 2% regression in hackbench with this series, though.
        """
    )
    quoted, own = (j.claim for j in result.claims)
    assert (quoted.speaker.role, quoted.speaker.name, quoted.speaker.email) == (
        "quoted", "Jane Dev", "jane@example.org",
    )  # fmt: skip
    assert quoted.change is not None and quoted.change.direction == "improvement"
    assert quoted.benchmarks == ("will-it-scale",)
    assert (own.speaker.role, own.speaker.quote_depth) == ("replier", 0)
    assert own.change is not None
    assert (own.change.low_pct, own.change.direction) == (2.0, "regression")
    assert own.benchmarks == ("hackbench",)


def test_nested_quotes_name_each_author() -> None:
    result = analyse(
        """\
        On Tue, Bob <bob@example.org> wrote:
        > On Mon, Alice <alice@example.org> wrote:
        > > Before: 100 ops/sec
        > > After: 110 ops/sec
        > That is a nice 10% improvement.
        """
    )
    speakers = [(j.claim.kind, j.claim.speaker.name, j.claim.speaker.quote_depth)
                for j in result.claims]  # fmt: skip
    assert speakers == [("before-after", "Alice", 2), ("percentage", "Bob", 1)]
    assert result.claims[0].judgement.status == "no-data"


def test_from_to_sentence_is_a_before_after_claim() -> None:
    [judged] = analyse("Throughput went from 1.2 to 1.5 GB/s in my dd test.\n").claims
    assert judged.claim.kind == "before-after"
    assert judged.claim.change is not None
    assert judged.claim.change.low_pct == pytest.approx(25.0)
    assert judged.claim.change.direction == "improvement"


def test_message_without_claims() -> None:
    body = """\
        Looks good to me. I tested it on a 64 CPU box for 3 hours, with 4 to 8 threads.
        Performance testing went from 4 to 8 threads without trouble.

        > +	/* scale by 50% */
        > +	x = x / 2;

        Reviewed-by: Some One <some@example.org>
        """
    assert extract_claims(textwrap.dedent(body)) == []
    result = analyse(body)
    assert result.to_dict()["claims"] == []
    assert result.doubts == ()


def test_reduced_reader_without_sender_line() -> None:
    message = read_reduced("Subject: numbers\n\nBefore: 10 s\nAfter: 9 s\n")
    assert (message.subject, message.sender) == ("numbers", "")
    assert message.body.splitlines()[0] == "Before: 10 s"
    bare = read_reduced("Before: 10 s\nAfter: 9 s\n")
    assert bare.subject == "" and bare.body.startswith("Before: 10 s")


def test_json_shape_is_stable(bailout: MessageClaims) -> None:
    data = json.loads(json.dumps(bailout.to_dict()))
    assert data["format"] == "lorelab-claims/2"
    # Every key of lorelab-claims/1 is still there with its meaning; /2 only adds keys.
    assert set(data) == {
        "format", "subject", "sender", "msgid", "benchmarks", "commands", "claims", "doubts",
        "unmentioned", "unreadable",
    }  # fmt: skip
    claim = data["claims"][0]
    assert set(claim) == {
        "index", "kind", "text", "speaker", "lines", "runs", "runs_line", "benchmarks", "change",
        "before_after", "table", "refers_to", "judgement", "layout", "measurements",
    }  # fmt: skip
    assert set(claim["speaker"]) == {"role", "quote_depth", "name", "email"}
    assert set(claim["judgement"]) == {
        "status", "summary", "cv_threshold_pct", "comparisons", "notes",
    }  # fmt: skip
    comparison = claim["judgement"]["comparisons"][0]
    assert {"verdict", "verdict_kind", "verdict_alone", "fdr_demoted"} <= set(comparison)
    measurement = claim["measurements"][0]
    assert {"metric", "base", "patched", "n_base", "cv_pct", "direction", "judgement"} <= set(
        measurement
    )
    assert claim["lines"][0] == {
        "number": 25,
        "text": ">            2.6.28-rc6" + " " * 23 + "bail-out",
    }


# --- the command


@pytest.fixture
def lorelab(tmp_path: Path) -> Lorelab:
    """`lorelab` with a database of its own (empty until a test stores mail)."""
    return Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")


def run_cli(lorelab: Lorelab, *args: str) -> subprocess.CompletedProcess[str]:
    done = lorelab.run(*args, check=False)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


def test_cli_json_for_a_seed_file(lorelab: Lorelab) -> None:
    done = run_cli(lorelab, "claims", str(SEEDS / "vmscan-bailout-hackbench-reply.txt"), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["subject"] == "Re: [PATCH] vmscan: improve reclaim throuput to bail out patch take2"
    assert data["sender"] == "MinChan Kim"
    assert [c["kind"] for c in data["claims"]] == ["table", "percentage", "table"]
    verdicts = {
        c["label"]: c["verdict_kind"] for c in data["claims"][2]["judgement"]["comparisons"]
    }
    assert verdicts == {
        "this patch 125": "inconclusive",  # p=0.043 alone; not after BH across 3 columns
        "this patch 130": "improvement",
        "this patch 135": "inconclusive",
    }
    assert data["benchmarks"] == ["hackbench"]


def test_cli_human_output_quotes_the_claim_and_the_judgement(lorelab: Lorelab) -> None:
    done = run_cli(lorelab, "claims", str(SEEDS / "lru_gen-batch-counters-reply.eml"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "> Before: 44017.78 Ops/sec" in out
    assert "Kairui Song (quoted, depth 1)" in out
    assert "needs-spread" in out and "2.2%" in out
    assert "assuming it's not noise" in out


def test_cli_message_id_not_in_the_database(lorelab: Lorelab, tmp_path: Path) -> None:
    done = run_cli(lorelab, "claims", "<nowhere@example.org>")
    assert done.returncode == 1
    assert "no message <nowhere@example.org> in the database" in done.stderr
    missing = run_cli(lorelab, "claims", str(tmp_path / "missing.eml"))
    assert missing.returncode == 1
    assert "no such file" in missing.stderr
    directory = run_cli(lorelab, "claims", str(tmp_path))
    assert directory.returncode == 1
    assert "a directory; give one message file" in directory.stderr


def test_cli_message_id_from_the_database(lorelab: Lorelab) -> None:
    lorelab.run("ingest", "stdin",
                input=(SEEDS / "lru_gen-batch-counters-reply.eml").read_bytes())
    msgid = "CAOUHufYtSQnrVBC6OEXpT=LJW=L4J1Uw1yXpPrzaUhPWauo_3A@mail.gmail.com"
    done = run_cli(lorelab, "claims", f"<{msgid}>", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["msgid"] == msgid
    assert data["claims"][0]["judgement"]["status"] == "needs-spread"


def test_judged_claim_dict_carries_the_claim_and_its_judgement(lru_gen: MessageClaims) -> None:
    judged: JudgedClaim = lru_gen.claims[0]
    data = judged.to_dict()
    assert data["runs"] == 18
    assert data["before_after"]["computed_pct"] == pytest.approx(1.5205, abs=1e-4)
    assert data["judgement"]["cv_threshold_pct"] == pytest.approx(2.228, abs=0.005)


ORIGINAL = """\
From: Jane Dev <jane@example.org>
To: linux-mm@kvack.org
Subject: [PATCH] mm: make reclaim faster
Date: Mon, 1 Jan 2024 10:00:00 +0000
Message-ID: <orig@example.org>

This makes reclaim faster. Average of 10 runs:

Before: 200 ops/sec
After: 220 ops/sec (+10%)
"""

REPLY = """\
From: Rev Iewer <rev@example.org>
To: linux-mm@kvack.org
Subject: Re: [PATCH] mm: make reclaim faster
Date: Tue, 2 Jan 2024 10:00:00 +0000
Message-ID: <reply@example.org>
In-Reply-To: <orig@example.org>
References: <orig@example.org>

On Mon, 1 Jan 2024, Jane Dev <jane@example.org> wrote:
> This makes reclaim faster. Average of 10 runs:
>
> Before: 200 ops/sec
> After: 220 ops/sec (+10%)

I see a 3% regression in hackbench instead.
"""


def test_cli_thread_shows_each_claim_once(lorelab: Lorelab, tmp_path: Path) -> None:
    mbox = tmp_path / "thread.mbox"
    mbox.write_text(
        f"From jane@example.org Mon Jan  1 10:00:00 2024\n{ORIGINAL}\n"
        f"From rev@example.org Tue Jan  2 10:00:00 2024\n{REPLY}\n"
    )
    lorelab.run("ingest", "mbox", str(mbox))
    done = run_cli(lorelab, "claims", "reply@example.org", "--thread", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["format"] == "lorelab-claims-thread/1"
    original, reply = data["messages"]
    assert original["msgid"] == "orig@example.org"
    [own] = original["claims"]
    assert own["speaker"]["role"] == "replier" and own["runs"] == 10
    assert own["judgement"]["status"] == "needs-spread"
    # The reply's quoted copy of Jane's numbers is left out; its own claim stays.
    assert [(c["kind"], c["speaker"]["role"]) for c in reply["claims"]] == [
        ("percentage", "replier")
    ]
    single = json.loads(run_cli(lorelab, "claims", "reply@example.org", "--json").stdout)
    assert [c["speaker"]["role"] for c in single["claims"]] == ["quoted", "replier"]
    refused = run_cli(lorelab, "claims", str(SEEDS / "lru_gen-batch-counters-reply.eml"),
                      "--thread")
    assert refused.returncode == 1 and "--thread needs a Message-ID" in refused.stderr


def test_change_log_items_are_claims_of_their_own() -> None:
    result = analyse(
        """\
        Changes since v1:
         - fix the build on arm64
         - 8% faster in will-it-scale page_fault2
         - drop the sysctl
        """
    )
    [judged] = result.claims
    assert judged.claim.text == "- 8% faster in will-it-scale page_fault2"
    assert (judged.claim.first_line, judged.claim.last_line) == (3, 3)
    assert judged.claim.benchmarks == ("will-it-scale",)


def test_cli_names_the_kernels_of_each_judgement_in_a_table_of_three(
    lorelab: Lorelab, tmp_path: Path
) -> None:
    mail = tmp_path / "three.eml"
    mail.write_text(
        "From: Feng Tang <feng.tang@intel.com>\nSubject: Re: [mm] 2d146aa3aa\n\n"
        "dc26532aed0ab25c 2d146aa3aa842d7f5065802556b 73371bf27a8a8ea68df2fbf456b\n"
        "---------------- --------------------------- ---------------------------\n"
        "  65523232 ±  4%     -40.8%   38817332 ±  5%     -19.6%   52701654 ±  3%  "
        "vm-scalability.throughput\n"
        "      1.15            +3.1        4.20            +2.5        3.68 ±  4%  "
        "pp.bt.page_add_file_rmap\n"
    )
    done = run_cli(lorelab, "claims", str(mail))
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert ("* vm-scalability.throughput (73371bf27a8a8ea68df2fbf456b vs dc26532aed0ab25c): "
            "-19.57%") in out  # fmt: skip
