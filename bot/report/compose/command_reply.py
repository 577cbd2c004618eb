"""Answers to `#lorelab ...` commands: short, bottom-posted under the command line they answer.

A queued request says what will run and its place in the queue (a follow-up: which question it
answers, after which review); one asked for and done already says what it found; a command that
was not understood says which part was not, and how to get help; `help` lists the commands;
`stop` confirms what it stopped; a refused command says who may ask, or why it cannot be done;
a rate-limited one says when the next is taken. The commands module decides the outcome; this
only writes it down.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.report.compose import kinds
from bot.report.compose.inputs import ParentMessage, ReplyOptions
from bot.report.compose.message import ComposedReply, compose_reply
from bot.report.compose.text import Block, Preformatted, Prose, Quote, indent

KIND = kinds.COMMAND
OUTCOMES = ("queued", "not-understood", "help", "stopped", "refused", "limited", "done")


@dataclass(frozen=True)
class CommandAnswer:
    parent: ParentMessage  # the message that carried the command
    command: str  # the command line as written, e.g. "#lorelab test hackbench"
    outcome: str  # one of OUTCOMES
    # queued: what will run; stopped: what was stopped; refused, limited, done: the whole answer
    detail: str = ""
    queue_position: int | None = None  # 1: next to run
    status_url: str = ""
    problems: tuple[str, ...] = ()  # not-understood: each part that was not understood
    commands: tuple[tuple[str, str], ...] = ()  # help: (syntax, what it does)
    series_version_id: int | None = None
    # The command's line, when it is not the first command of its mail: each command of a
    # mail gets its own answer, so each needs its own Message-ID.
    line: int | None = None


def compose_command_reply(answer: CommandAnswer, options: ReplyOptions) -> ComposedReply:
    if answer.outcome not in OUTCOMES:
        raise ValueError(f"unknown command outcome {answer.outcome!r}; known: {OUTCOMES}")
    anchor = answer.parent.msgid
    if answer.line is not None:
        anchor = f"{anchor}#{answer.line}"
    return compose_reply(
        kind=KIND,
        parent=answer.parent,
        author=answer.parent.sender,
        options=options,
        blocks=command_body(answer),
        series_version_id=answer.series_version_id,
        # Keyed on the command's own message: one answer per command, however often retried.
        anchor=anchor,
    )


def command_body(answer: CommandAnswer) -> list[Block]:
    who = answer.parent.sender.name or answer.parent.sender.email
    blocks: list[Block] = [Quote(f"{who} wrote:", (answer.command,))]
    if answer.outcome == "queued":
        place = ""
        if answer.queue_position is not None:
            place = (
                " It runs next."
                if answer.queue_position == 1
                else f" It is number {answer.queue_position} in the queue."
            )
        text = f"Queued: {answer.detail}.{place} The results will be posted in this thread."
        if answer.status_url:
            text += f" Progress: {answer.status_url}"
        blocks.append(Prose(text))
    elif answer.outcome == "not-understood":
        what = "; ".join(answer.problems) if answer.problems else "the command"
        blocks.append(Prose(f"lorelab did not understand this: {what}. Nothing was queued."))
        blocks.append(Prose('Reply with "#lorelab help" for the commands lorelab knows.'))
    elif answer.outcome == "help":
        blocks.append(Prose("lorelab knows these commands, each on a line of its own in a reply:"))
        width = max((len(syntax) for syntax, _ in answer.commands), default=0)
        rows = tuple(f"{syntax:<{width}}  {what}" for syntax, what in answer.commands)
        blocks.append(Preformatted(indent(rows)))
    elif answer.outcome == "stopped":
        blocks.append(Prose(f"Stopped: {answer.detail}."))
    else:
        blocks.append(Prose(answer.detail))
    return blocks
