"""The author's commands mapped to lab benchmarks (bot/benchmarks/author_commands.py), over real
and real-looking cover letters and replies: which run with which parameters, which do not and
why, and the runs and memcg size the author's own words state."""

from __future__ import annotations

import email
import email.policy
from pathlib import Path

import pytest

from bot.benchmarks.author_commands import (
    AuthorCommand,
    AuthorMessage,
    author_experiment,
    map_command,
    stated_memcg,
    stated_runs,
)
from bot.benchmarks.registry import benchmark
from bot.benchmarks.spec import from_spec

SEEDS = Path(__file__).resolve().parents[2] / "bot" / "demo" / "seeds"  # the real list mail
KOSAKI = "kosaki.motohiro@xxxxxxxxxxxxxx"
ALL = lambda program: True  # noqa: E731 - a lab with every program
NONE = lambda program: False  # noqa: E731 - a lab with none


def seed(name: str) -> str:
    return (SEEDS / name).read_text()


def mapped(text: str, installed=ALL, **kwargs: str) -> AuthorCommand:
    return map_command(text, installed, **kwargs)


# --------------------------------------------------------------------------------------------
# The seeds: real messages


def test_the_hackbench_seed_runs_the_authors_three_old_form_lines_ten_times():
    """The 2008 reply quotes KOSAKI's patch: "hackbench 125 process 3000" (old positional
    form: sockets, processes), "mesured 10 times each"."""
    body = seed("vmscan-bailout-hackbench-reply.txt")
    found = author_experiment([AuthorMessage(body, "MinChan Kim <minchan.kim@gmail.com>")],
                              KOSAKI, ALL)
    assert found.benchmarks == [f"hackbench:groups={g}:loops=3000:pipe=0" for g in (125, 130, 135)]
    assert found.pairs == 10 and found.memcg_max is None
    assert found.commands[0].kept == ("125", "process", "3000")
    # The spec makes the benchmark the author ran: hackbench over sockets, as processes.
    bench = from_spec(found.benchmarks[0])
    assert bench.argv() == ["hackbench", "-g", "125", "-l", "3000"]
    # And a campaign's stored parameters make it again (not the lab's default of pipes).
    assert benchmark(bench.name, **bench.parameters).argv() == bench.argv()
    # The replier's own words hold no command: for MinChan's series there is no experiment.
    mine = author_experiment([AuthorMessage(body, "MinChan Kim <minchan.kim@gmail.com>")],
                             "minchan.kim@gmail.com", ALL)
    assert mine.commands == () and mine.pairs is None


def test_the_lru_gen_seed_states_memtier_in_a_4g_memcg_for_18_runs():
    raw = seed("lru_gen-batch-counters-reply.eml").encode()
    message = email.message_from_bytes(raw, policy=email.policy.default)
    body = message.get_body(("plain",)).get_content()
    found = author_experiment([AuthorMessage(body, str(message["From"]))], "ryncsn@gmail.com",
                              lambda program: program != "memtier_benchmark")
    assert (found.pairs, found.memcg_max, found.benchmarks) == (18, "4G", [])
    why = {c.program: c.why_not for c in found.commands}
    assert why == {
        "memcached": "starts the memcached server, not a benchmark: its load generator's line "
                     "is the experiment",
        "memtier_benchmark": "memtier_benchmark: not installed in the lab",
    }
    memtier = next(c for c in found.commands if c.program == "memtier_benchmark")
    assert memtier.text.startswith("memtier_benchmark -S /tmp/memcached.socket") \
        and "--ratio=1:0" in memtier.text and memtier.text.endswith("-x 6")
    # The reviewer's own words (the replier, Yu Zhao) state no command of the author's.
    assert author_experiment([AuthorMessage(body, str(message["From"]))],
                             "yuzhao@google.com", ALL).commands == ()


def test_the_lru_lock_seed_names_the_readtwice_case_under_an_attribution_without_address():
    """Alex Shi's cover letter, quoted under "Alex Shi wrote:" (no address), links to
    vm-scalability's case-lru-file-readtwice: known by the author's name, run as readtwice."""
    body = seed("per-lruvec-lru_lock-cover-reply.txt")
    sender = "Konstantin Khlebnikov <khlebnikov@yandex-team.ru>"
    found = author_experiment([AuthorMessage(body, sender)], "alex.shi@linux.alibaba.com", ALL,
                              "Alex Shi")
    assert [(c.text, c.spec) for c in found.commands] == [("case-lru-file-readtwice",
                                                            "readtwice")]
    # Without the author's name the quoted words are nobody's known: nothing is run.
    assert author_experiment([AuthorMessage(body, sender)], "alex.shi@linux.alibaba.com",
                             ALL).commands == ()


# --------------------------------------------------------------------------------------------
# hackbench, both forms


@pytest.mark.parametrize(("line", "spec", "argv"), [
    ("hackbench -g 16 -l 1000 --process --pipe", "hackbench:groups=16:loops=1000",
     ["-g", "16", "-l", "1000", "-p"]),
    ("hackbench -g 16 -l 1000 --thread", "hackbench:groups=16:loops=1000:pipe=0:threads=1",
     ["-g", "16", "-l", "1000", "-T"]),
    ("./hackbench --groups=8 --loops=200 -p -s 512", "hackbench:groups=8:loops=200:datasize=512",
     ["-g", "8", "-l", "200", "-p", "-s", "512"]),
    ("hackbench -g20 -l100 -T -p -f 10 | tee hb.log",
     "hackbench:groups=20:loops=100:fds=10:threads=1",
     ["-g", "20", "-l", "100", "-p", "-T", "-f", "10"]),
    ("hackbench -pipe 50 thread 2000", "hackbench:groups=50:loops=2000:threads=1",
     ["-g", "50", "-l", "2000", "-p", "-T"]),
    ("hackbench 40", "hackbench:groups=40:loops=100:pipe=0", ["-g", "40", "-l", "100"]),
    # Left out: hackbench's own defaults (10 groups, 100 loops, sockets), not the lab's.
    ("hackbench -P", "hackbench:groups=10:loops=100:pipe=0", ["-g", "10", "-l", "100"]),
])
def test_hackbench_lines_run_with_the_authors_parameters(line, spec, argv):
    command = mapped(line)
    assert command.spec == spec and command.why_not is None
    assert from_spec(spec).argv() == ["hackbench", *argv]


def test_hackbench_lines_the_lab_cannot_run_say_why():
    assert mapped("hackbench -g 4 -F").why_not == "hackbench: parameter -F not supported"
    assert mapped("hackbench -g many").why_not == "hackbench: parameter many not supported"
    assert mapped("hackbench 125 process 3000", NONE).why_not == \
        "hackbench: not installed in the lab"
    assert mapped("hackbench 10 process -l 50").why_not.startswith("hackbench: parameter")


# --------------------------------------------------------------------------------------------
# vm-scalability cases, memcg sizes, the simulator, other programs


def test_readtwice_case_runs_in_the_authors_memcg_when_they_gave_one():
    assert mapped("case-lru-file-readtwice").spec == "readtwice"
    in_memcg = mapped("case-lru-file-readtwice   +17%", memcg_max="1G")
    assert in_memcg.spec == "readtwice-memcg:memcg_max=1G" and in_memcg.kept == ("memcg 1G",)
    assert from_spec(in_memcg.spec).memcg_max == "1G"
    assert mapped("case-anon-w-seq").why_not == "case-anon-w-seq: no such benchmark in the lab"


def test_the_stand_in_simulator_line_runs_as_reclaim_sim_with_its_ops_count():
    command = mapped("./arch/x86/boot/bzImage 250000")
    assert command.spec == "reclaim-sim:ops=250000" and command.kept == ("250000",)
    assert from_spec(command.spec).argv(kernel="K") == ["K", "250000"]
    assert mapped("arch/x86/boot/bzImage -v").why_not == "bzImage: parameter -v not supported"


def test_programs_the_lab_has_no_benchmark_for():
    assert mapped("fio --rw=randread --size=1G").why_not == "fio: no such benchmark in the lab"
    assert mapped("usemem -n 16 10G").why_not.startswith("usemem: no such benchmark in the lab")
    assert mapped("memtier_benchmark --ratio=1:0 -t 4", ALL).why_not.endswith(
        "no such benchmark in the lab")
    assert mapped("hackbench -g 'four", ALL).why_not == "hackbench: parameter 'four not supported"


# --------------------------------------------------------------------------------------------
# Whose words: the author's, not the quoted reviewer's


AUTHOR = "Ada Reclaim <ada@example.org>"
REVIEWER = "Rex Viewer <rex@example.org>"


def test_a_reviewers_command_quoted_in_the_authors_reply_is_not_the_authors():
    reply = """\
On Tue, Dec 1, 2026 at 10:00 AM Rex Viewer <rex@example.org> wrote:
> Could you try the thread mode too?
>
>   hackbench -g 32 -l 5000 --thread
>
> and repeat it 30 times?

Sure. I ran it 12 runs each, with sockets this time:

  $ hackbench -g 16 -l 1000 --process

Tested in a memcg of 512MB.
"""
    found = author_experiment([AuthorMessage(reply, AUTHOR)], "ada@example.org", ALL)
    assert found.benchmarks == ["hackbench:groups=16:loops=1000:pipe=0"]
    assert (found.pairs, found.memcg_max) == (12, "512M")
    # The same thread read for the reviewer: their line is theirs, quoted or not.
    theirs = author_experiment([AuthorMessage(reply, AUTHOR)], "rex@example.org", ALL)
    assert theirs.benchmarks == ["hackbench:groups=32:loops=5000:pipe=0:threads=1"]
    assert theirs.pairs == 30


def test_a_command_the_author_states_twice_is_one_command_and_options_keep_each():
    cover = "Results from:\n\n  hackbench -g 8 -l 100\n  fio --rw=read\n"
    reply = "> hackbench -g 8 -l 100\n\nThe same line, 6 runs.\n"
    quoted = f"On Mon, Nov 30, 2026, {AUTHOR} wrote:\n" + reply
    found = author_experiment([AuthorMessage(cover, AUTHOR), AuthorMessage(quoted, AUTHOR)],
                              "ada@example.org", ALL)
    assert [c.text for c in found.commands] == ["hackbench -g 8 -l 100", "fio --rw=read"]
    assert found.options == {
        "commands": [
            {"text": "hackbench -g 8 -l 100", "program": "hackbench",
             "spec": "hackbench:groups=8:loops=100:pipe=0", "kept": ["-g 8", "-l 100"]},
            {"text": "fio --rw=read", "program": "fio",
             "why_not": "fio: no such benchmark in the lab"},
        ],
        "pairs": 6,
    }
    assert [AuthorCommand.from_option(o) for o in found.options["commands"]] == \
        list(found.commands)


# --------------------------------------------------------------------------------------------
# Runs and memcg sizes in prose


@pytest.mark.parametrize(("prose", "runs"), [
    ("Average result of 18 test runs:", 18),
    ("I compared following three pattern (it was mesured 10 times each)", 10),
    ("Each configuration was repeated 5 times.", 5),
    ("Mean of 7 runs, stddev below 1%.", 7),
    ("One run only, 1 run.", None),
    ("Tested on a 64-CPU machine with 256G.", None),
])
def test_the_runs_the_author_states(prose, runs):
    assert stated_runs(prose) == runs


@pytest.mark.parametrize(("prose", "size"), [
    ("Tested in a 4G memcg on a EPYC 7K62 with:", "4G"),
    ("run inside a memcg limited to 512MB", "512M"),
    ("echo 2G > /sys/fs/cgroup/test/memory.max", "2G"),
    ("echo 2G > memory.high", None),  # a throttle, not a limit
    ("in a 0.5K memcg", "512"),  # bytes
    ("with memory.max=2G", "2G"),
    ("in a 1.5GiB cgroup", "1536M"),
    ("64 dd in 32 containers", None),
])
def test_the_memcg_size_the_author_states(prose, size):
    assert stated_memcg(prose) == size
