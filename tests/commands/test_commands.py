"""Email commands: the `#lorelab` language, MAINTAINERS matching, who may ask and how often,
and the whole path from a stored reply to a review run and an answer in the outbox.

The end-to-end tests ingest real threads made with git into SQLite and PostgreSQL, each reply
DKIM-signed by its sender's domain (tests.support.command_thread).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from bot.commands.handler import handle_command_mails
from bot.commands.language import parse_commands
from bot.commands.maintainers import parse_maintainers, read_maintainers
from bot.commands.policy import PastRequest, rate_decision
from bot.config.sections import CommandSettings
from bot.db.models import CommandRequest, Run, SeriesVersion
from bot.db.session import Database, ensure_schema
from bot.mail import parse_message
from tests.cli import Lorelab
from tests.support.command_thread import (
    ADA,
    HANNES,
    MAINTAINERS,
    MALLORY,
    RITA,
    YUANCHU,
    Thread,
    unwrapped,
)
from tests.support.dkim_signing import sign

BENCHMARKS = ("hackbench", "readtwice", "vm-scalability")



# --------------------------------------------------------------------------------------------
# The language


def test_commands_on_lines_of_their_own_in_any_case_with_trailing_blanks():
    body = ("Looks fine to me.\n\n#lorelab test hackbench base=v6.18-rc1  \n"
            "  #LoreLab HELP\t\n#lorelab retest\n#lorelabs test\nplease #lorelab test\n")
    commands = parse_commands(body, BENCHMARKS)
    assert [(c.line, c.name) for c in commands] == [(3, "test"), (4, "help"), (5, "retest")]
    test = commands[0]
    assert test.understood and test.benchmarks == ("hackbench",) and test.base == "v6.18-rc1"
    assert test.text == "#lorelab test hackbench base=v6.18-rc1"
    assert test.arguments == ["hackbench", "base=v6.18-rc1"]


def test_several_benchmarks_commas_and_repeats():
    [command] = parse_commands("#lorelab test HackBench, readtwice hackbench", BENCHMARKS)
    assert command.understood and command.benchmarks == ("hackbench", "readtwice")
    [bare] = parse_commands("#lorelab test", BENCHMARKS)
    assert bare.understood and bare.benchmarks == () and bare.base is None


def test_quoted_commands_are_ignored_at_any_depth():
    body = """\
On Mon, Nov 30, 2026 at 10:00:00AM +0000, Ada Reclaim wrote:
> #lorelab test hackbench
>> #lorelab stop
> > #lorelab retest
 > #lorelab help

#lorelab help
"""
    assert [(c.line, c.name) for c in parse_commands(body)] == [(7, "help")]


def test_nothing_below_a_signature_or_an_outlook_quote_is_a_command():
    assert parse_commands("Thanks\n-- \nAda\n#lorelab test\n") == []
    outlook = "#lorelab help\n\n-----Original Message-----\nFrom: ada\n#lorelab test\n"
    assert [c.name for c in parse_commands(outlook)] == ["help"]


def test_what_is_not_understood_is_said():
    def problems(line: str) -> tuple[str, ...]:
        [command] = parse_commands(line, BENCHMARKS)
        return command.problems

    assert "unknown command \"tset\"" in problems("#lorelab tset hackbench")[0]
    assert "no command" in problems("#lorelab")[0]
    assert "unknown benchmark \"fio\"" in problems("#lorelab test fio")[0]
    assert "hackbench" in problems("#lorelab test fio")[0]  # the known ones are listed
    assert "unknown argument \"runs=10\"" in problems("#lorelab test runs=10")[0]
    assert "base= needs" in problems("#lorelab test base=")[0]
    assert "base= needs" in problems("#lorelab test base=--upload-pack=x")[0]
    assert "base= needs" in problems("#lorelab test base=v6.17..v6.18")[0]
    assert problems("#lorelab test base=a base=b") == ("base= given twice",)
    assert problems("#lorelab stop now") == ('"stop" takes no arguments, not "now"',)
    [unknown] = parse_commands("#lorelab tset", BENCHMARKS)
    assert unknown.name == "unknown" and not unknown.understood


def test_without_a_benchmark_list_any_well_formed_name_is_taken():
    [command] = parse_commands("#lorelab test fio")
    assert command.understood and command.benchmarks == ("fio",)
    [bad] = parse_commands("#lorelab test ../../etc/passwd")
    assert not bad.understood


# --------------------------------------------------------------------------------------------
# MAINTAINERS


def test_maintainers_of_reclaim_files():
    maintainers = read_maintainers(MAINTAINERS)
    titles = [s.title for s in maintainers.sections_for("mm/vmscan.c")]
    assert titles == ["MEMORY MANAGEMENT", "MEMORY MANAGEMENT - MGLRU (MULTI-GEN LRU)",
                      "MEMORY MANAGEMENT - RECLAIM", "THE REST"]
    people = maintainers.maintainers_for(["mm/vmscan.c"])
    assert {"akpm@linux-foundation.org", "hannes@cmpxchg.org", "mhocko@kernel.org",
            "yuanchu@google.com", "weixugc@google.com", "torvalds@linux-foundation.org"} <= people
    assert "muchun.song@linux.dev" not in people  # MEMCG's reviewer
    assert "sj@kernel.org" not in people
    memcg = maintainers.maintainers_for(["mm/memcontrol.c", "mm/memcontrol-v1.h"])
    assert "muchun.song@linux.dev" in memcg and "yuanchu@google.com" not in memcg
    # the prose at the top of the file is not a section
    assert maintainers.sections[0].title == "BLUETOOTH SUBSYSTEM"


def test_maintainers_patterns_follow_get_maintainer():
    maintainers = read_maintainers(MAINTAINERS)

    def titles(path: str) -> list[str]:
        return [s.title for s in maintainers.sections_for(path) if s.title != "THE REST"]

    # a trailing slash: the directory and everything below
    assert titles("mm/damon/core.c") == ["DATA ACCESS MONITOR", "MEMORY MANAGEMENT"]
    # X: takes a section off a path whatever its F: lines say
    assert titles("net/ipv4/tcp.c") == ["NETWORKING [GENERAL]"]
    assert titles("net/bluetooth/hci_core.c") == ["BLUETOOTH SUBSYSTEM"]
    # `drivers/net/*`: the files in drivers/net, not below; X: drivers/net/wireless/
    assert titles("drivers/net/loopback.c") == ["NETWORKING DRIVERS"]
    assert titles("drivers/net/ethernet/intel/e1000/e1000_main.c") == []
    # a directory named without its trailing slash covers what is below it
    assert titles("tools/testing/selftests/damon/sysfs.py") == ["DATA ACCESS MONITOR"]
    # ? and [...] wildcards; N: regexes
    assert titles("include/linux/slub_def.h") == ["SLAB ALLOCATOR"]
    assert "CONTROL GROUP - MEMORY RESOURCE CONTROLLER (MEMCG)" in titles("mm/memcontrol-v1.c")
    assert titles("include/linux/page-flags.h") == ["MEMORY MANAGEMENT"]
    # a file pattern does not match a longer name; THE REST (`*`, `*/`) matches everything
    assert titles("mm/vmscan.c.orig") == ["MEMORY MANAGEMENT"]
    assert [s.title for s in maintainers.sections_for("Makefile")] == ["THE REST"]


def test_maintainers_sections_keep_their_entries():
    text = "SOME DRIVER\nM:\tA <a@x.org>\nR:\tB <B@X.org>\nL:\tl@x.org\nS:\tOdd Fixes\n" \
           "F:\tdrivers/some/\nK:\t\\bsome_\\w+\nN:\t[unclosed\n"
    maintainers = parse_maintainers(text)
    [section] = maintainers.sections
    assert section.status == "Odd Fixes" and section.lists == ["l@x.org"]
    assert section.keywords == ["\\bsome_\\w+"]
    assert section.people() == {"a@x.org", "b@x.org"}
    assert maintainers.problems and "SOME DRIVER: N: [unclosed" in maintainers.problems[0]
    assert maintainers.maintainers_for(["drivers/some/main.c", "README"]) == {"a@x.org",
                                                                              "b@x.org"}


def test_a_tree_without_maintainers_has_none(tmp_path):
    assert read_maintainers(tmp_path / "MAINTAINERS").maintainers_for(["mm/vmscan.c"]) == set()


# --------------------------------------------------------------------------------------------
# The rate limit


def test_rate_decision_allows_the_limit_then_answers_once_per_window():
    settings = CommandSettings(rate_limit=2, window_minutes=60)
    t0 = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.UTC)
    minute = dt.timedelta(minutes=1)
    done = [PastRequest(t0, False, True), PastRequest(t0 + minute, False, True)]
    assert rate_decision(done[:1], t0 + minute, settings).allowed
    limited = rate_decision(done, t0 + 2 * minute, settings)
    assert not limited.allowed and limited.answer
    assert limited.retry_at == t0 + dt.timedelta(minutes=60)
    told = [*done, PastRequest(t0 + 2 * minute, True, True)]
    again = rate_decision(told, t0 + 3 * minute, settings)
    assert not again.allowed and not again.answer
    assert rate_decision(told, t0 + dt.timedelta(minutes=61), settings).allowed
    assert rate_decision(told, t0, CommandSettings(rate_limit=0)).allowed


# --------------------------------------------------------------------------------------------
# From a stored reply to a run and an answer


def test_the_authors_test_queues_a_review_run_and_answers_queued(db, tmp_path):
    thread = Thread(db, tmp_path)
    command_mail, [outcome] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    assert outcome.outcome == "queued" and outcome.command == "test"
    [run_id] = outcome.run_ids
    run = thread.run(run_id)
    assert (run.kind, run.tree, run.state, run.benchmarks, run.requested_base, run.trigger) == (
        "review", "mm", "queued", ["hackbench"], None, "email:ada@example.org")
    with db.session() as session:
        version = session.get(SeriesVersion, run.series_version_id)
        assert version is not None and version.version == 1
        request = session.scalar(sa.select(CommandRequest))
        assert request is not None
        assert (request.state, request.run_id, request.outbox_id, request.line) == (
            "accepted", run_id, outcome.outbox_id, outcome.line)
    answer = thread.answer(outcome.outbox_id)
    assert answer["To"] == "Ada Reclaim <ada@example.org>"
    assert answer["In-Reply-To"] == f"<{parse_message(command_mail).msgid}>"
    assert answer["Subject"].strip().startswith("Re: [PATCH 1/2]")
    text = unwrapped(answer)
    assert "> #lorelab test hackbench" in answer.get_content()
    assert 'Queued: hackbench on "mm/vmscan: reclaim in larger batches" v1' in text
    assert "It runs next." in text


def test_a_strangers_test_is_refused_politely(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [outcome] = thread.send(thread.v1[0], MALLORY, "Try this:\n#lorelab test hackbench")
    assert outcome.outcome == "refused" and outcome.run_ids == ()
    assert thread.counts() == (0, 1, 1)
    text = unwrapped(thread.answer(outcome.outbox_id))
    assert "Only the author of the series, the maintainers of the files it touches" in text
    assert "Nothing was done." in text
    with db.session() as session:
        assert session.scalar(sa.select(CommandRequest.state)) == "refused"


def test_a_maintainer_on_the_thread_may_ask_and_one_off_it_may_not(db, tmp_path):
    thread = Thread(db, tmp_path)
    # Johannes maintains mm/vmscan.c (RECLAIM) and was Cc'd on the series
    _, [allowed] = thread.send(thread.v1[1], HANNES, "#lorelab test hackbench")
    assert allowed.outcome == "queued" and allowed.run_ids
    assert thread.run(allowed.run_ids[0]).trigger == "email:hannes@cmpxchg.org"
    # Yuanchu maintains it too (MGLRU) but is not on the thread
    _, [off_thread] = thread.send(thread.v1[1], YUANCHU, "#lorelab test hackbench")
    assert off_thread.outcome == "refused" and off_thread.run_ids == ()
    # Rita is on the thread but maintains nothing here
    _, [no_maintainer] = thread.send(thread.v1[1], RITA, "#lorelab test hackbench")
    assert no_maintainer.outcome == "refused" and no_maintainer.run_ids == ()


def test_the_allow_list_may_ask_for_a_test_but_not_stop_one(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(allow_list=["@example.net"]))
    _, [test] = thread.send(thread.v1[0], MALLORY, "#lorelab test hackbench")
    assert test.outcome == "queued"
    _, [stop] = thread.send(thread.v1[0], MALLORY, "#lorelab stop")
    assert stop.outcome == "refused"
    assert thread.run(test.run_ids[0]).state == "queued"


def test_help_from_anyone_answers_with_the_commands(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [outcome] = thread.send(thread.v1[2], MALLORY, "#lorelab help")
    assert outcome.outcome == "help" and thread.counts() == (0, 1, 1)
    text = unwrapped(thread.answer(outcome.outbox_id))
    for syntax in ("#lorelab test BENCH[:k=v...]... [base=REV]", "#lorelab retest", "#lorelab stop",
                   "#lorelab bisect", "#lorelab compare MSGID"):
        assert syntax in text


def test_a_quoted_command_does_nothing(db, tmp_path):
    thread = Thread(db, tmp_path)
    command_mail, [_] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    before = thread.counts()
    # Rita answers Ada's mail, quoting it whole: her mail holds "> #lorelab test hackbench"
    quoting, outcomes = thread.send(command_mail, RITA, "Good idea.", quote_lines=200)
    assert "\n> #lorelab test hackbench\n" in quoting.decode()
    assert outcomes == [] and thread.counts() == before


def test_the_same_mail_twice_creates_nothing_new(db, tmp_path):
    thread = Thread(db, tmp_path)
    command_mail, [first] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    counts = thread.counts()
    assert counts == (1, 1, 1)
    assert thread.handle(command_mail) == []
    thread.store(command_mail)  # ingested again: a duplicate, and handled again
    assert thread.handle(command_mail) == []
    assert thread.counts() == counts


def test_stop_cancels_the_queued_run(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [test] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    _, [stop] = thread.send(thread.v1[0], HANNES, "#lorelab stop")
    assert stop.outcome == "stopped"
    with db.session() as session:
        run = session.get(Run, test.run_ids[0])
        assert run is not None
        assert run.state == "cancelled" and {s.state for s in run.steps} == {"cancelled"}
    stopped = unwrapped(thread.answer(stop.outbox_id))
    assert f"Stopped: run {run.id} (review on mm), of v1." in stopped
    _, [again] = thread.send(thread.v1[0], ADA, "#lorelab stop")
    assert "nothing was queued or running for v1" in again.detail


def test_retest_repeats_the_latest_test_and_the_same_test_is_not_queued_twice(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [first] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench base=master")
    # Johannes asks for the same test while it waits: one run
    _, [same] = thread.send(thread.v1[1], HANNES, "#lorelab test hackbench base=master")
    assert same.outcome == "queued" and same.run_ids == ()
    assert f"asked for already: run {first.run_ids[0]}" in same.detail
    with db.session() as session:
        run = session.get(Run, first.run_ids[0])
        assert run is not None
        run.state = "done"
    _, [retest] = thread.send(thread.v1[0], ADA, "#lorelab retest")
    assert retest.outcome == "queued" and len(retest.run_ids) == 1
    repeated = thread.run(retest.run_ids[0])
    assert (repeated.benchmarks, repeated.requested_base, repeated.trigger) == (
        ["hackbench"], "master", "email:ada@example.org")


def test_a_reply_under_v1_is_about_v1_and_under_v2_about_v2(db, tmp_path):
    thread = Thread(db, tmp_path, versions=2)  # v2 is threaded under v1's cover letter
    _, [on_v1] = thread.send(thread.v1[2], ADA, "#lorelab test hackbench")
    _, [on_v2] = thread.send(thread.v2[2], ADA, "#lorelab test hackbench")
    with db.session() as session:
        versions = [session.get(SeriesVersion, o.series_version_id).version  # type: ignore
                    for o in (on_v1, on_v2)]
    assert versions == [1, 2]


def test_not_understood_is_answered_with_the_problem(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [outcome] = thread.send(thread.v1[1], ADA, "#lorelab tset hackbench")
    assert outcome.outcome == "not-understood" and outcome.command == "unknown"
    text = unwrapped(thread.answer(outcome.outbox_id))
    assert 'lorelab did not understand this: unknown command "tset"' in text
    assert "Nothing was queued." in text
    # benchmark names are checked against the lab's registry
    _, [unknown] = thread.send(thread.v1[1], ADA, "#lorelab test fio")
    assert unknown.outcome == "not-understood" and thread.counts()[0] == 0
    assert 'unknown benchmark "fio"; known: ' in unknown.detail and "hackbench" in unknown.detail


def test_each_command_of_a_mail_gets_its_own_answer(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, outcomes = thread.send(thread.v1[1], ADA, "#lorelab test hackbench\n#lorelab help")
    assert [o.outcome for o in outcomes] == ["queued", "help"]
    assert len({o.outbox_id for o in outcomes}) == 2


def test_commands_past_the_rate_limit_are_not_done_and_answered_once(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(rate_limit=3, window_minutes=60))
    # five different commands (the same one asked again is answered once: test_command_flood)
    outcomes = [thread.send(thread.v1[0], MALLORY, f"#lorelab test bench{i}")[1][0]
                for i in range(5)]
    assert [o.outcome for o in outcomes] == ["not-understood"] * 3 + ["limited"] * 2
    limited, silent = outcomes[3:]
    assert limited.outbox_id is not None and silent.outbox_id is None
    assert "at most 3 commands from one sender in 60 minutes" in unwrapped(
        thread.answer(limited.outbox_id))
    with db.session() as session:
        states = list(session.scalars(sa.select(CommandRequest.state)
                                      .order_by(CommandRequest.id)))
    assert states == ["answered"] * 3 + ["limited"] * 2
    # another sender is not limited by Mallory's mail
    assert thread.send(thread.v1[0], RITA, "#lorelab help")[1][0].outcome == "help"
    # once the window has passed, Mallory is answered again
    thread.clock += dt.timedelta(minutes=60)
    assert thread.send(thread.v1[0], MALLORY, "#lorelab help")[1][0].outcome == "help"


def test_commands_in_old_mail_and_from_the_bot_itself_are_ignored(db, tmp_path):
    thread = Thread(db, tmp_path)
    old = thread.reply(thread.v1[1], ADA, "#lorelab test hackbench")
    thread.store(old)
    late = thread.clock + dt.timedelta(hours=73)
    assert handle_command_mails(db, thread.settings, [parse_message(old).msgid], now=late) == []
    bot = ("lorelab", "lorelab@lorelab.example.org")
    _, outcomes = thread.send(thread.v1[1], bot, "#lorelab test hackbench")
    assert outcomes == [] and thread.counts() == (0, 0, 0)


def test_disabled_commands_do_nothing(db, tmp_path):
    thread = Thread(db, tmp_path, CommandSettings(enabled=False))
    _, outcomes = thread.send(thread.v1[1], ADA, "#lorelab test hackbench")
    assert outcomes == [] and thread.counts() == (0, 0, 0)


# --------------------------------------------------------------------------------------------
# The command line


def test_lorelab_commands_scan_acts_once(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'lorelab.db'}"
    db = Database(db_url)
    ensure_schema(db.engine)
    thread = Thread(db, tmp_path)
    thread.clock = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=5)
    thread.store(thread.reply(thread.v1[1], ADA, "#lorelab test hackbench"),
                 thread.reply(thread.v1[1], MALLORY, "#lorelab test hackbench"))
    db.dispose()
    config = tmp_path / "config.toml"
    config.write_text(f'[[trees]]\nname = "mm"\npath = "{thread.tree}"\n\n'
                      '[report]\nfrom_address = "lorelab <lorelab@lorelab.example.org>"\n\n'
                      f'[commands]\ndkim_keys = "{thread.key_table}"\n')
    cli = Lorelab(tmp_path / "home", db_url)
    cli.env["LORELAB_CONFIG"] = str(config)
    outcomes = cli.json("commands", "scan", "--no-dispatch")
    assert [(o["sender"], o["outcome"]) for o in outcomes] == [
        ("ada@example.org", "queued"), ("mallory@example.net", "refused")]
    assert len(outcomes[0]["run_ids"]) == 1 and outcomes[1]["outbox_id"]
    assert cli.json("commands", "scan", "--no-dispatch") == []
    shown = cli.run("commands", "scan", "--no-dispatch").stdout.decode()
    assert "no new commands in 2 replies" in shown
    with db.session() as session:  # --no-dispatch: made, not sent to the workers
        runs = session.execute(sa.select(Run.state, Run.kind)).all()
    assert [tuple(r) for r in runs] == [("queued", "review")]
    bad = cli.run("commands", "scan", "--since", "yesterday", check=False)
    assert bad.returncode == 1 and b"use a date such as" in bad.stderr


def test_a_mail_outside_any_series_is_told_so(db, tmp_path):
    thread = Thread(db, tmp_path)
    lonely = (b"From: Ada Reclaim <ada@example.org>\nTo: linux-mm@kvack.org\n"
              b"Subject: Re: a question\nDate: Mon, 30 Nov 2026 11:30:00 +0000\n"
              b"Message-ID: <q1@example.org>\nIn-Reply-To: <nowhere@example.org>\n\n"
              b"#lorelab test hackbench\n")
    thread.store(sign(lonely, "example.org"))
    [outcome] = handle_command_mails(db, thread.settings, ["q1@example.org"],
                                     now=thread.clock)
    assert outcome.outcome == "not-understood" and outcome.series_version_id is None
    assert "does not answer a patch series lorelab knows" in outcome.detail


def test_after_stop_the_series_gets_no_new_run_and_no_reply_until_a_new_test(db, tmp_path):
    from bot.runs.planner import plan_new_versions
    from bot.runs.stops import series_stopped
    from workers.report_step import compose_for_run

    thread = Thread(db, tmp_path, versions=2)
    thread.settings.plan.max_age_days = 100000
    _, [stop] = thread.send(thread.v1[0], ADA, "#lorelab stop")
    assert stop.outcome == "stopped"
    with db.session() as session:
        version = session.get(SeriesVersion, stop.series_version_id)
        assert series_stopped(session, version.series_id)
        # mm/vmscan.c is watched, yet neither version is planned
        assert plan_new_versions(session, thread.settings) == []
    _, [test] = thread.send(thread.v2[0], ADA, "#lorelab test hackbench")
    with db.session() as session:
        assert not series_stopped(session, version.series_id)  # a newer test lifts it
    # Johannes (a maintainer on the thread) stops it while the run waits: no reply comes.
    _, [stopped] = thread.send(thread.v2[0], HANNES, "#lorelab stop")
    assert stopped.outcome == "stopped"
    with db.session() as session:
        run = session.get(Run, test.run_ids[0])
        reply, why = compose_for_run(session, thread.settings, run)
        assert reply is None and "#lorelab stop" in why
