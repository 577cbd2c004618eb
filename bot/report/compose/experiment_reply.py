"""The experiment reply: the author's own benchmark commands, run as the author ran them.

A follow-up of the review (kind "experiment", bot/benchmarks/author_commands.py): which of the
command lines in the author's own words lorelab reproduced, each with the lab benchmark and the
author's parameters it ran, and which it could not, each with why ("memtier_benchmark: not
installed in the lab"). Then the benchmark reply's own content for what ran (benchmark_reply.py:
verdicts, tables, claims, machine, runs, how to reproduce), so that every number is said the
same way, with the same caveats. A command counts as reproduced only when a finished campaign
of its benchmark, at its parameters, is among the results. See docs/replies.md, "Follow-ups:
the author's experiment".
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.benchmarks.author_commands import AuthorCommand
from bot.benchmarks.spec import parse_spec
from bot.report.compose import kinds
from bot.report.compose.benchmark_reply import benchmark_body
from bot.report.compose.inputs import ReplyOptions
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.results import BenchmarkReplyContext, BenchmarkResult
from bot.report.compose.text import Block, Preformatted, Prose, indent

KIND = kinds.EXPERIMENT


@dataclass(frozen=True)
class ExperimentReplyContext:
    bench: BenchmarkReplyContext  # what ran, as the benchmark reply shows it
    commands: tuple[AuthorCommand, ...]  # every command line of the author's, mapped or not
    pairs: int | None = None  # the runs the author said they made, the campaigns' most pairs


def compose_experiment_reply(ctx: ExperimentReplyContext,
                             options: ReplyOptions) -> ComposedReply:
    bench = ctx.bench
    return compose_reply(
        kind=KIND,
        parent=bench.parent,
        author=bench.parent.sender,
        options=options,
        blocks=experiment_body(ctx),
        series_version_id=bench.series.series_version_id,
        version=bench.series.version,
        run_id=bench.series.run_id,
        anchor=bench.series.anchor_msgid or bench.parent.msgid,
    )


def experiment_body(ctx: ExperimentReplyContext) -> list[Block]:
    # The benchmark reply opens with what was tested; the author's commands come right after.
    tested, *rest = benchmark_body(ctx.bench)
    return [tested, *command_blocks(ctx), *rest]


def command_blocks(ctx: ExperimentReplyContext) -> list[Block]:
    """Which of the author's commands ran (as which benchmark, with which of their parameters)
    and which did not, with why."""
    ran = [c for c in ctx.commands if reproduced(c, ctx.bench.benchmarks)]
    not_ran = [c for c in ctx.commands if c not in ran]
    total = len(ctx.commands)
    lines = "command line" if total == 1 else "command lines"
    blocks: list[Block] = []
    if ran:
        runs = (f", each for at most {ctx.pairs} pairs of runs, as many as the author said "
                "they made" if ctx.pairs else "")
        which = ("the" if total == 1 else f"all {total}") if len(ran) == total else \
            f"{len(ran)} of the {total}"
        blocks.append(Prose(f"It ran {which} benchmark {lines} the author stated, with the "
                            f"author's parameters{runs}:"))
        rows: list[str] = []
        for command in ran:
            rows += [command.text, f"  as {_label(command)}"]
        blocks.append(Preformatted(indent(rows)))
    if not_ran:
        blocks.append(Prose(f"It could not run {len(not_ran)} of them:" if ran else
                            f"It could not run any of the {total} benchmark {lines} the "
                            "author stated:"))
        rows = []
        for command in not_ran:
            rows += [command.text, f"  {_why_not(command)}"]
        blocks.append(Preformatted(indent(rows)))
    return blocks


def reproduced(command: AuthorCommand, results: tuple[BenchmarkResult, ...]) -> bool:
    """Whether a finished campaign ran the command's benchmark at its parameters."""
    if command.spec is None:
        return False
    name, parameters = parse_spec(command.spec)
    wanted = {key: str(value) for key, value in parameters.items()}
    return any(r.name == name and all(dict(r.parameters).get(k) == v for k, v in wanted.items())
               for r in results)


def _label(command: AuthorCommand) -> str:
    """E.g. "hackbench groups=125 loops=3000 pipe=0 (the author's 125 process 3000)"."""
    name, parameters = parse_spec(str(command.spec))
    label = " ".join([name, *(f"{k}={v}" for k, v in parameters.items())])
    if command.kept:
        label += f" (the author's {' '.join(command.kept)})"
    return label


def _why_not(command: AuthorCommand) -> str:
    if command.spec is not None:  # mapped, but no finished campaign of it is in the results
        return f"mapped to {command.spec}, but it did not run"
    return command.why_not or "no such benchmark in the lab"
