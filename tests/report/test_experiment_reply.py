"""The experiment reply (bot/report/compose/experiment_reply.py), composed from recorded results:
the author's commands that ran, as which benchmark, the ones that did not and why, then the
benchmark reply's own tables and setup."""

from __future__ import annotations

import json

from bot.benchmarks.author_commands import AuthorCommand
from bot.report.compose.experiment_reply import (
    ExperimentReplyContext,
    compose_experiment_reply,
    experiment_body,
)
from bot.report.compose.results_file import load_results
from bot.report.compose.text import PROSE_WIDTH, Prose
from tests.report.test_report_compose import OPTIONS, RESULTS

RAN = AuthorCommand("hackbench 125 process 3000", "hackbench",
                    spec="hackbench:groups=125:loops=3000", kept=("125", "process", "3000"))
# Mapped, but the run has no campaign of it: never said to have run.
NOT_IN_RESULTS = AuthorCommand("hackbench 140 process 3000", "hackbench",
                               spec="hackbench:groups=140:loops=3000",
                               kept=("140", "process", "3000"))
MEMTIER = AuthorCommand("memtier_benchmark --ratio=1:0 -t 16 -c 2", "memtier_benchmark",
                        why_not="memtier_benchmark: not installed in the lab")


def context(*commands: AuthorCommand, pairs: int | None = 10) -> ExperimentReplyContext:
    bench, _ = load_results(json.loads((RESULTS / "vmscan-bailout-take2.json").read_text()))
    return ExperimentReplyContext(bench=bench, commands=commands, pairs=pairs)


def test_the_reply_says_which_commands_ran_as_what_and_which_did_not_with_why():
    reply = compose_experiment_reply(context(RAN, NOT_IN_RESULTS, MEMTIER), OPTIONS)
    body = reply.message.get_content()
    flat = " ".join(body.split())
    assert reply.kind == "experiment" and reply.message["X-Lorelab-Kind"] == "experiment"
    assert ("It ran 1 of the 3 benchmark command lines the author stated, with the author's "
            "parameters, each for at most 10 pairs of runs, as many as the author said they "
            "made:") in flat
    assert ("  hackbench 125 process 3000\n"
            "    as hackbench groups=125 loops=3000 (the author's 125 process 3000)\n") in body
    assert "It could not run 2 of them:" in flat
    assert ("  hackbench 140 process 3000\n"
            "    mapped to hackbench:groups=140:loops=3000, but it did not run\n") in body
    assert ("  memtier_benchmark --ratio=1:0 -t 16 -c 2\n"
            "    memtier_benchmark: not installed in the lab\n") in body
    # The commands come right after what was tested, before the results it reports.
    assert body.index("lorelab tested") < body.index("It ran 1") < body.index("It could not") \
        < body.index("hackbench.time")
    for block in reply.body_blocks:
        if isinstance(block, Prose):
            assert all(len(line) <= PROSE_WIDTH for line in block.lines())


def test_without_stated_runs_nor_unmapped_commands_it_says_only_what_ran():
    blocks = experiment_body(context(RAN, pairs=None))
    text = "\n".join(line for block in blocks for line in block.lines())
    flat = " ".join(text.split())
    assert "It ran the benchmark command line the author stated, with the author's " \
           "parameters:" in flat
    assert "could not run" not in text and "pairs of runs, as many" not in text
