"""Reply composition: whole messages against golden files, threading as a mail client reads it,
line widths, recipients, Message-IDs, claims beside measurements, build-log excerpts.

The goldens under tests/golden/ are whole messages, compared byte for byte. After an intended
change to a reply's wording or layout, regenerate them and review the diff:

    LORELAB_UPDATE_GOLDENS=1 .venv/bin/pytest tests/test_report_compose.py

The benchmark replies are rendered from tests/fixtures/results/*.json: the hackbench samples are
the seed tables (vmscan-bailout-hackbench-reply.txt), the author's claim is the seed lru_gen claim
(Before 44017.78 / After 44687.08 Ops/sec, 18 runs) as bot.analysis.claims reads it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email
import email.policy
import json
import os
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from bot.analysis.claims import analyse_message
from bot.analysis.verdict import compare
from bot.demo import SEED_DIR as SEEDS
from bot.report.compose.benchmark_reply import compose_benchmark_reply
from bot.report.compose.build_log import first_errors
from bot.report.compose.claim_view import claim_from_judged, claim_support
from bot.report.compose.command_reply import CommandAnswer, compose_command_reply
from bot.report.compose.failure_reply import (
    ApplyFailureContext,
    BuildFailureContext,
    compose_apply_failure,
    compose_build_failure,
)
from bot.report.compose.inputs import (
    BotIdentity,
    ParentMessage,
    Person,
    ReplyOptions,
    ResentPatch,
    SeriesInfo,
    TreeInfo,
)
from bot.report.compose.message import (
    ComposedReply,
    reply_message_id,
    reply_recipients,
    reply_subject,
)
from bot.report.compose.results import BenchmarkResult, BuildInfo, ClaimQuote, MetricResult
from bot.report.compose.results_file import ResultsFileError, load_results
from bot.report.compose.text import PROSE_WIDTH, TABLE_WIDTH, Fields, Prose, Quote, render_body
from bot.report.deliver.policy import OptOutList
from tests.support.paths import TESTS

HERE = TESTS
GOLDEN = HERE / "golden"
RESULTS = HERE / "fixtures" / "results"
LOGS = HERE / "fixtures" / "report"
UPDATE = bool(os.environ.get("LORELAB_UPDATE_GOLDENS"))

IDENTITY = BotIdentity(
    sender=Person("lorelab", "lorelab@lorelab.example.org"),
    domain="lorelab.example.org",
    contact="Lab Admin <admin@lorelab.example.org>",
)
OPTIONS = ReplyOptions(identity=IDENTITY, date=dt.datetime(2008, 12, 5, 9, 30, tzinfo=dt.UTC))

# A series posted to linux-mm, for the failure and command replies.
POSTING = ParentMessage(
    msgid="20081204102342.2DF1.KOSAKI.MOTOHIRO@jp.fujitsu.com",
    subject="[PATCH] vmscan: improve reclaim throuput to bail out patch take2",
    sender=Person("KOSAKI Motohiro", "kosaki.motohiro@jp.fujitsu.com"),
    to=(Person("LKML", "linux-kernel@vger.kernel.org"), Person("linux-mm", "linux-mm@kvack.org")),
    cc=(Person("Rik van Riel", "riel@redhat.com"),),
    references=("20081128140405.3D0B.KOSAKI.MOTOHIRO@jp.fujitsu.com",),
    lists=("linux-mm@kvack.org", "linux-kernel@vger.kernel.org"),
)
SERIES = SeriesInfo(
    title="vmscan: improve reclaim throuput to bail out patch take2",
    version=1,
    patches=1,
    status_url="https://lorelab.example.org/series/1042/v1",
    series_version_id=1042,
    anchor_msgid=POSTING.msgid,
)
TREE = TreeInfo(
    tree="torvalds/linux",
    branch="master",
    base="13d428afc007fcfcd6deeb215618f54cf9c0cae6",
    head="6f1e29d3a0b4c5d7e8f90123456789abcdef0123",
    base_source="the base-commit: line",
)
BUILD = BuildInfo(
    config_name="x86_64-defconfig+lorelab-reclaim",
    config_hash="9c1185a5c5e9fc54612808977ee8f548b2258d31",
    compiler="gcc (Debian 12.2.0-14) 12.2.0",
    config_url="https://lorelab.example.org/configs/9c1185a5c5e9",
)
COMMAND = ParentMessage(
    msgid="b2d1f0e4-7a3c-4c55-9a0b-3f6e2f1d9c10@suse.cz",
    subject="Re: [PATCH] vmscan: improve reclaim throuput to bail out patch take2",
    sender=Person("Vlastimil Babka", "vbabka@suse.cz"),
    to=(Person("KOSAKI Motohiro", "kosaki.motohiro@jp.fujitsu.com"),),
    cc=(Person("", "linux-mm@kvack.org"),),
    references=(POSTING.references[0], POSTING.msgid),
    lists=("linux-mm@kvack.org",),
)


def results_reply(name: str) -> ComposedReply:
    ctx, _ = load_results(json.loads((RESULTS / name).read_text()))
    return compose_benchmark_reply(ctx, OPTIONS)


def build_failure_reply() -> ComposedReply:
    ctx = BuildFailureContext(
        parent=POSTING,
        series=SERIES,
        tree=TREE,
        build=BUILD,
        log=(LOGS / "gcc-build-failure.log").read_text(),
        log_url="https://lorelab.example.org/series/1042/v1/build.log",
        reproduce=(
            "b4 am -o - 20081204102342.2DF1.KOSAKI.MOTOHIRO@jp.fujitsu.com | git am -3",
            "make O=../patched x86_64_defconfig && make O=../patched -j$(nproc)",
        ),
    )
    return compose_build_failure(ctx, OPTIONS)


def apply_failure_reply(resent: tuple[ResentPatch, ...] = ()) -> ComposedReply:
    ctx = ApplyFailureContext(
        parent=dataclasses.replace(POSTING, subject="[PATCH 0/3] mm: per-lruvec reclaim batching"),
        series=dataclasses.replace(SERIES, title="mm: per-lruvec reclaim batching", patches=3,
                                   resent=resent),
        tree=dataclasses.replace(
            TREE,
            head="",
            tree="akpm/mm",
            branch="mm-unstable",
            base_source="a guess from the patches' blob hashes",
        ),
        failing_patch=2,
        failing_subject="mm/vmscan: batch lru_gen counter updates",
        conflicts=("mm/vmscan.c", "include/linux/mmzone.h"),
    )
    return compose_apply_failure(ctx, OPTIONS)


def command_reply(outcome: str) -> ComposedReply:
    answers = {
        "queued": CommandAnswer(
            parent=COMMAND,
            command="#lorelab test hackbench",
            outcome="queued",
            detail='hackbench (groups 125, 130, 135) on "vmscan: improve reclaim throuput to '
            'bail out patch take2" v1, 10 boots of each kernel',
            queue_position=3,
            status_url="https://lorelab.example.org/series/1042/v1",
            series_version_id=1042,
        ),
        "not-understood": CommandAnswer(
            parent=COMMAND,
            command="#lorelab tset hackbench",
            outcome="not-understood",
            problems=('"tset" is not a command (did you mean "test"?)',),
        ),
        "help": CommandAnswer(
            parent=COMMAND,
            command="#lorelab help",
            outcome="help",
            commands=(
                ("#lorelab test [BENCHMARK...]", "test this series version again"),
                ("#lorelab stop", "lorelab will not write to you again"),
                ("#lorelab help", "this list"),
            ),
        ),
    }
    return compose_command_reply(answers[outcome], OPTIONS)


REPLIES = {
    "benchmark-take2": lambda: results_reply("vmscan-bailout-take2.json"),
    "benchmark-bailout-v2": lambda: results_reply("vmscan-bailout-v2.json"),
    # Recorded runs: a real kernel under QEMU (scripts/kernel-review) and the local runner.
    "benchmark-kernel-tcg": lambda: results_reply("kernel-tuning-tcg.json"),
    "benchmark-local-runner": lambda: results_reply("demo-local-runner.json"),
    "build-failure": build_failure_reply,
    "does-not-apply": apply_failure_reply,
    "command-queued": lambda: command_reply("queued"),
    "command-not-understood": lambda: command_reply("not-understood"),
    "command-help": lambda: command_reply("help"),
}


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_reply_matches_golden_file(name: str) -> None:
    produced = REPLIES[name]().as_bytes()
    golden = GOLDEN / f"{name}.eml"
    if UPDATE:
        golden.write_bytes(produced)
    assert golden.exists(), f"no golden {golden}; run with LORELAB_UPDATE_GOLDENS=1"
    assert produced.decode() == golden.read_text(encoding="utf-8")


def parse(reply: ComposedReply) -> email.message.EmailMessage:
    return email.message_from_bytes(reply.as_bytes(), policy=email.policy.default)  # type: ignore[return-value]


def parent_of(name: str) -> ParentMessage:
    """The message each golden reply answers."""
    if name.startswith("benchmark"):
        files = {"take2": "vmscan-bailout-take2.json", "kernel": "kernel-tuning-tcg.json",
                 "local": "demo-local-runner.json"}
        file = next((f for key, f in files.items() if key in name), "vmscan-bailout-v2.json")
        return load_results(json.loads((RESULTS / file).read_text()))[0].parent
    if name.startswith("command"):
        return COMMAND
    if name == "does-not-apply":
        return dataclasses.replace(POSTING, subject="[PATCH 0/3] mm: per-lruvec reclaim batching")
    return POSTING


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_threading_headers_as_a_mail_client_reads_them(name: str) -> None:
    reply = REPLIES[name]()
    message = parse(reply)
    parent = parent_of(name)
    parent_id, parent_refs, original = parent.msgid, parent.references, parent.subject
    subject = message["Subject"]
    assert subject.startswith("Re: ") and subject.count("Re:") == 1
    assert subject == "Re: " + original.removeprefix("Re: ")
    assert message["In-Reply-To"].strip() == f"<{parent_id}>"
    assert message["References"].split() == [f"<{ref}>" for ref in [*parent_refs, parent_id]]
    assert message["Message-ID"].strip() == f"<{reply.message_id}>"
    assert reply.message_id.endswith("@lorelab.example.org")
    assert message.get_content_type() == "text/plain" and not message.is_multipart()
    assert message["Content-Transfer-Encoding"] in ("7bit", "8bit")
    assert message["Auto-Submitted"] == "auto-generated"


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_prose_is_wrapped_at_72_and_tables_fit_in_100(name: str) -> None:
    reply = REPLIES[name]()
    body = parse(reply).get_content()
    # The body in the bytes is exactly the blocks as composed, so each block's kind tells
    # prose from table lines.
    assert body == render_body(reply.body_blocks, IDENTITY.signature_lines())
    for line in body.splitlines():
        assert len(line) <= TABLE_WIDTH, line
    for block in reply.body_blocks:
        if isinstance(block, Prose | Fields | Quote):
            for line in block.lines():
                # Only a single word longer than a line (a URL) may overrun.
                assert len(line) <= PROSE_WIDTH or " " not in line.strip(), line
    signature = body.split("\n-- \n", 1)[1]
    assert "#lorelab help" in signature and "admin@lorelab.example.org" in signature


def test_benchmark_reply_content_follows_the_spec_order() -> None:
    body = parse(results_reply("vmscan-bailout-take2.json")).get_content()
    markers = [
        "lorelab tested",  # 1: what was tested
        "hackbench.time groups=130  -2.98% [-5.54%, -0.51%]  improvement (may be < 1%)",  # 2
        "other metrics: 18 could not tell",
        "hackbench groups=125 mode=process loops=3000",  # 3: tables
        "counters (per run):",
        "Kairui Song wrote:",  # 4: the claim
        "Test machine: KVM guest",  # 5: machine, config, compiler, parameters, runs
        "To reproduce without lorelab:",  # 6
        "Series page: https://lorelab.example.org/series/1042/v1",  # 7
    ]
    positions = [body.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert "base 13d428afc007, patched head 6f1e29d3a0b4." in " ".join(body.split())
    # The verdicts docs/statistics.md expects for the seed tables: groups=125's p of 0.043
    # does not survive the false-discovery-rate control across its run's 6 metrics.
    prose = " ".join(body.split())
    assert "hackbench.time groups=125: p=0.043 is below 0.05 on its own, but not after " \
        "controlling the false alarms across this run's 6 metrics" in prose
    # Significant changes marked as mmtests marks them, the others in parentheses.
    assert re.search(r"\* ?-2\.98%\*", body) and re.search(r"\( ?\+0\.61%\)", body)
    assert re.search(r"\( ?-2\.93%\)", body)
    # Only the claimed lines are quoted, never the patch.
    quoted = [line for line in body.splitlines() if line.startswith(">")]
    assert quoted == [
        "> Average result of 18 test runs:",
        ">",
        "> Before: 44017.78 Ops/sec",
        "> After:  44687.08 Ops/sec (+1.5%)",
    ]
    assert "lorelab did not run memtier_benchmark or memcached" in prose
    assert "only if the per-run CV is below 2.2%" in prose


def test_a_run_after_a_correction_says_which_patches_it_tests_in_place_of_which_run() -> None:
    """A second reply about one version (a patch was corrected after the first run applied
    it, bot.runs.corrections) says why, in the first paragraph of each kind of review reply."""
    resent = (ResentPatch(2, "20261202-fix-2@example.org", dt.datetime(2026, 12, 2, 9, 30), 12),)
    ctx, _ = load_results(json.loads((RESULTS / "vmscan-bailout-take2.json").read_text()))
    bench = compose_benchmark_reply(dataclasses.replace(ctx, series=dataclasses.replace(
        ctx.series, patches=3, resent=resent)), OPTIONS)
    said = ("This run tests patch 2/3 as sent on 2026-12-02 <20261202-fix-2@example.org>, in "
            "place of the one run 12 tested.")
    for reply in (bench, apply_failure_reply(resent)):
        first = parse(reply).get_content().split("\n\n")[0]
        assert " ".join(first.split()).endswith(said)
    assert "in place of" not in parse(apply_failure_reply()).get_content()
    two = (*resent, ResentPatch(3, "20261203-fix-3@example.org", None, 12))
    assert SeriesInfo("t", 1, 3, resent=two).resent_sentence() == (
        " This run tests patch 2/3 as sent on 2026-12-02 <20261202-fix-2@example.org>; "
        "patch 3/3 as sent <20261203-fix-3@example.org>, in place of the ones run 12 tested.")


def test_tail_regression_and_counter_changes_get_verdict_lines() -> None:
    body = parse(results_reply("vmscan-bailout-v2.json")).get_content()
    lines = body.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("hackbench.time")))
    assert lines[first].startswith("hackbench.time groups=135   +3.36% [-1.00%, +7.38%]")
    assert " ".join(" ".join(lines[first + 1:first + 3]).split()) == (
        "could not tell: between -1.00% and +7.38%; 2 slow outliers in patched "
        "(193.382, 103.189): tail regression"
    )
    # Counters have no better direction: their changes are called decreases, not improvements.
    assert any(
        line.startswith("pgscan_direct groups=125") and "decrease (>= 1%)" in line for line in lines
    )
    assert "not compared (a value of 0 in some run: no ratio): allocstall" in " ".join(
        body.split())


def test_message_id_is_the_same_for_the_same_reply_and_differs_by_kind_and_version() -> None:
    first = results_reply("vmscan-bailout-take2.json")
    again = results_reply("vmscan-bailout-take2.json")
    assert first.message_id == again.message_id
    assert first.as_bytes() == again.as_bytes()
    anchor = POSTING.msgid
    ids = {
        reply_message_id("lorelab.example.org", kind, version, anchor)
        for kind in ("benchmark", "build-failure")
        for version in (1042, 1043)
    }
    assert len(ids) == 4
    assert reply_message_id("a.org", "command", None, "x@y") != reply_message_id(
        "a.org", "command", None, "z@y"
    )


def test_subject_gets_exactly_one_re() -> None:
    assert reply_subject("[PATCH] mm: x") == "Re: [PATCH] mm: x"
    assert reply_subject("Re: Re: [PATCH] mm: x") == "Re: [PATCH] mm: x"
    assert reply_subject("RE: Aw: re[2]: [PATCH v2 1/3]\n  mm: x") == "Re: [PATCH v2 1/3] mm: x"
    assert reply_subject("Reclaim: a subject that starts with re") == (
        "Re: Reclaim: a subject that starts with re"
    )
    # The words parsing reads as a reply's, in any language (`bot.mail.subject`).
    assert reply_subject("回复：答复: [PATCH v2] mm: x") == "Re: [PATCH v2] mm: x"
    assert reply_subject("rv: a subsystem, not a reply") == "Re: rv: a subsystem, not a reply"


def test_recipients_lists_first_without_author_bot_duplicates_or_opt_outs_and_capped() -> None:
    people = tuple(Person(f"Dev {i}", f"dev{i}@example.org") for i in range(80))
    parent = dataclasses.replace(
        POSTING,
        to=(Person("", "LINUX-MM@kvack.org"), POSTING.sender, IDENTITY.sender, *people[:40]),
        cc=(*people[30:], Person("Opted", "opted@out.example"), Person("", "x@gone.example")),
    )
    cc = reply_recipients(
        parent,
        POSTING.sender,
        bot=IDENTITY.sender,
        opt_out=OptOutList(["opted@out.example", "@gone.example"]),
        cap=50,
    )
    keys = [person.key for person in cc]
    assert keys[:2] == ["linux-mm@kvack.org", "linux-kernel@vger.kernel.org"]
    assert len(keys) == 50 and len(set(keys)) == 50
    assert POSTING.sender.key not in keys and IDENTITY.sender.key not in keys
    assert "opted@out.example" not in keys and "x@gone.example" not in keys


def test_opted_out_people_are_left_out_of_the_cc_header() -> None:
    options = dataclasses.replace(OPTIONS, opt_out=("riel@redhat.com",))
    ctx = BuildFailureContext(parent=POSTING, series=SERIES, tree=TREE, build=BUILD, log="")
    message = parse(compose_build_failure(ctx, options))
    assert "riel@redhat.com" not in str(message["Cc"])
    assert "linux-mm@kvack.org" in str(message["Cc"])


def test_claim_adapter_reads_the_seed_claim_as_the_fixture_records_it() -> None:
    raw = (SEEDS / "lru_gen-batch-counters-reply.eml").read_bytes()
    message = email.message_from_bytes(raw, policy=email.policy.default)
    body = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    found = analyse_message(str(message["Subject"]), str(message["From"]), body)
    quote = claim_from_judged(found.claims[0], body)
    recorded = json.loads((RESULTS / "vmscan-bailout-take2.json").read_text())["claims"][0]
    assert quote.author == recorded["author"] == "Kairui Song"
    assert list(quote.lines) == recorded["lines"]
    assert quote.summary == recorded["summary"]
    assert quote.runs == 18 and quote.unit == "Ops/sec" and quote.higher_is_better is True
    assert quote.change_pct == pytest.approx(recorded["change_pct"], abs=1e-4)
    # Without the body, the lines between the run count and the numbers are marked as left out.
    assert claim_from_judged(found.claims[0]).lines[:2] == (
        "Average result of 18 test runs:",
        "[...]",
    )


def hackbench_result(base: list[float], patched: list[float]) -> BenchmarkResult:
    comparison = compare(base, patched, higher_is_better=False)
    metric = MetricResult("hackbench.time", "s", comparison)
    return BenchmarkResult("hackbench", (("groups", "125"),), (metric,))


BASE_125 = [71.866, 74.145, 70.305, 74.288, 72.029, 71.499, 76.188, 73.236, 69.427, 72.473]
THIS_125 = [67.302, 72.616, 72.475, 69.229, 71.551, 69.227, 70.759, 69.966, 69.068, 72.057]


@pytest.mark.parametrize(
    ("claimed", "unit", "higher", "words"),
    [
        (-2.6, "s", False, "this supports the claimed -2.60%"),
        (+2.0, "s", False, "this contradicts the claimed +2.00%"),
        (-9.0, "s", False, "the direction agrees, but the interval excludes the claimed -9.00%"),
        # +2.7% in ops/s is -2.63% in s: the claim is converted to the metric's unit.
        (+2.7, "ops/s", True, "this supports the claimed -2.63%"),
    ],
)
def test_claim_is_set_beside_the_measurement_of_the_same_benchmark(
    claimed: float, unit: str, higher: bool, words: str
) -> None:
    claim = ClaimQuote(
        author="KOSAKI Motohiro",
        lines=("OK. the degression is disappeared.",),
        summary="A percentage without runs cannot be judged.",
        benchmarks=("hackbench",),
        change_pct=claimed,
        unit=unit,
        higher_is_better=higher,
    )
    text = claim_support(claim, [hackbench_result(BASE_125, THIS_125)])
    assert text.startswith("lorelab measured hackbench.time -2.93% [-5.47%, -0.29%] (improvement")
    assert words in text
    assert text.endswith("From the message alone: A percentage without runs cannot be judged.")


def test_build_log_excerpt_has_locations_context_and_never_the_whole_log() -> None:
    log = (LOGS / "gcc-build-failure.log").read_text()
    errors = first_errors(log)
    assert [e.location for e in errors] == ["mm/vmscan.c:1437:42", "mm/vmscan.c:1460:33"]
    assert errors[0].excerpt[0] == "mm/vmscan.c: In function ‘shrink_zone’:"
    assert errors[0].excerpt[2].strip().startswith("1437 |")  # the two lines of context
    assert errors[0].excerpt[3].strip().startswith("| ")
    assert all(len(line) <= 96 for e in errors for line in e.excerpt)
    body = parse(build_failure_reply()).get_content()
    assert "CC      mm/filemap.o" not in body and "warning: unused variable" not in body
    prose = " ".join(body.split())
    assert (
        "Base: torvalds/linux master at base 13d428afc007 (chosen from the base-commit: line)"
        in (prose)
    )


def test_build_log_falls_back_to_clang_linker_and_make_errors() -> None:
    clang = first_errors((LOGS / "clang-build-failure.log").read_text())
    assert clang[0].location == "mm/vmscan.c:1437:17"
    assert len(clang[0].excerpt) == 3
    link = first_errors((LOGS / "link-failure.log").read_text())
    assert link[0].message.endswith("undefined reference to `lru_gen_update_batch'")
    assert link[0].excerpt[0].startswith("ld: mm/vmscan.o: in function")
    make = first_errors("  CC x.o\nsomething odd\nmake: *** [Makefile:1: all] Error 2\n")
    assert make[0].excerpt == ("  CC x.o", "something odd", "make: *** [Makefile:1: all] Error 2")
    assert first_errors("all fine\n") == []


def test_results_file_with_a_wrong_shape_says_what_is_wrong() -> None:
    with pytest.raises(ResultsFileError, match="format"):
        load_results({"format": "something-else"})
    data = json.loads((RESULTS / "vmscan-bailout-take2.json").read_text())
    del data["machine"]
    with pytest.raises(ResultsFileError, match="machine"):
        load_results(data)
    data = json.loads((RESULTS / "vmscan-bailout-take2.json").read_text())
    data["benchmarks"][0]["metrics"][0]["base"] = ["fast"]
    with pytest.raises(ResultsFileError, match=r"benchmarks\[0\]\.metrics\[0\]"):
        load_results(data)


def test_reply_preview_prints_the_reply_of_a_results_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.cli import outbox as outbox_cli

    monkeypatch.delenv("LORELAB_CONFIG", raising=False)
    monkeypatch.setattr("bot.cli.context.CONFIG_PATH", None)
    monkeypatch.setattr("bot.config.default_config_path", lambda: tmp_path / "none.toml")
    app = typer.Typer()
    outbox_cli.register(app)
    result = CliRunner().invoke(
        app, ["reply", "preview", str(RESULTS / "vmscan-bailout-take2.json")]
    )
    assert result.exit_code == 0, result.output
    printed = email.message_from_string(result.stdout, policy=email.policy.default)
    golden = email.message_from_bytes(
        (GOLDEN / "benchmark-take2.eml").read_bytes(), policy=email.policy.default
    )
    assert printed["Subject"] == golden["Subject"]
    assert printed["From"] == "lorelab <lorelab@localhost>"  # the default [report] identity
    body = printed.get_content()
    assert body.split("\n-- \n")[0] == golden.get_content().split("\n-- \n")[0]  # type: ignore[union-attr]
    missing = CliRunner().invoke(app, ["reply", "preview", str(tmp_path / "nothing.json")])
    assert missing.exit_code != 0


def test_a_percentage_claim_is_read_in_the_measured_metrics_unit() -> None:
    body = "With this patch hackbench improved 4% over 10 runs.\n"
    found = analyse_message("Re: [PATCH] x", "KOSAKI Motohiro <k@example.org>", body)
    quote = claim_from_judged(found.claims[0], body)
    assert quote.lines == ("With this patch hackbench improved 4% over 10 runs.",)
    text = claim_support(quote, [hackbench_result(BASE_125, THIS_125)])
    # 4% better in a lower-is-better metric is 1/1.04 - 1 = -3.85% of its value.
    assert "this supports the claimed -3.85%" in text


def test_a_long_tail_of_outliers_still_fits_the_verdict_line():
    from bot.report.compose.results import BenchmarkResult, MetricResult
    from bot.report.compose.tables import verdict_lines
    from bot.report.compose.text import TABLE_WIDTH

    base = [25_000_000.0 + 10_000 * i for i in range(30)]
    # Eight runs of the patched kernel far below the rest: a long list of low outliers.
    patched = [26_000_000.0 + 10_000 * i for i in range(22)] + [
        5_867_600.0 + 1000 * i for i in range(8)]
    c = compare(base, patched, higher_is_better=True, delta=0.01)
    assert len(c.tail.patched) > 3
    bench = BenchmarkResult("reclaim-sim", (("ops", "3000000"),),
                            (MetricResult("reclaim-sim.throughput", "ops/s", c),))
    lines = verdict_lines([bench])
    assert lines and all(len(line) <= TABLE_WIDTH for line in lines)
    assert ", ..." in " ".join(lines)  # the worst three, then an ellipsis


def test_a_recorded_real_kernel_reply_states_what_the_run_recorded() -> None:
    body = parse(results_reply("kernel-tuning-tcg.json")).get_content()
    flat = " ".join(body.split())
    # The machine is the guest and its host, never "bare metal"; the LRU is the one that ran.
    assert "Test machine: QEMU guest under TCG (emulated CPU, no KVM), 2 vCPUs" in flat
    assert "itself a virtual machine (kvm)" in flat and "bare metal" not in flat
    assert "LRU: MGLRU (multi-gen LRU; /sys/kernel/mm/lru_gen/enabled = 0x0007)" in flat
    # One word per outcome, one interval level, a resolution a reader can use.
    assert "Result: inconclusive" in flat and "CI" not in body
    assert "95% interval, adjusted for the sequential looks" in flat
    assert "Resolution: readtwice.throughput +-" in flat
    # Counters under their source, each zero counter listed once per source.
    assert "reclaim counters, /proc/vmstat (change per run):" in body
    zero = next(line for line in body.splitlines() if line.startswith("zero in all 32 runs"))
    assert zero.count("allocstall_dma32") == 1
    assert "+inf" not in body and "[-100.00" not in body
    # Reproducible without lorelab, with the config's recipe and each command line.
    reproduce = body.split("To reproduce without lorelab:")[1].split("\n-- \n")[0]
    assert "lorelab " not in reproduce and "/root/" not in reproduce
    assert "merge_config.sh -m .config bot/config/kernel/reclaim-vm.config" in reproduce
    assert "gcc -O2 -static -Wall -o anon-swap bot/benchmarks/anon-swap.c" in reproduce
    assert "in a memcg of memory.max=128M" in reproduce
    tables = body.split("Result:")[1].split("change is patched")[0]
    assert all(len(line) <= 100 for line in tables.splitlines())
