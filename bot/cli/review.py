"""`lorelab review THREAD --tree PATH`: the main job, one thread from mail to reply.

Progress is printed per stage as it happens; the reply is printed at the end (and is in the
outbox); the exit status says what was found (bot.runs.review.EXIT_CODES). With `--follow-ups`
the follow-ups the review calls for (bisect, align, compare, experiment) run next, in this
process on the embedded default, and each one's reply is printed; the exit status stays the
review's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from bot.cli import terminal
from bot.cli.context import UserError, emit_json, settings
from bot.cli.database import open_database

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from bot.db.session import Database
    from bot.runs.review import ReviewOutcome


def register(app: typer.Typer) -> None:
    app.command("review")(review)


def review(
    thread: str = typer.Argument(..., help="An mbox file, a lore URL, or a message-id."),
    tree: str = typer.Option(None, "--tree", help="The kernel tree to apply to: a [[trees]] "
                             "name, as `apply` takes, or a git checkout's path (default: the "
                             "first [[trees]] entry)."),
    bench: str = typer.Option(None, "--bench", help="Benchmarks, comma-separated "
                              "(default: the suite watching the touched files)."),
    runner: str = typer.Option(None, "--runner", help="The lab host to run on "
                               "(a [[lab_hosts]] name; default: the first)."),
    base: str = typer.Option(None, "--base", help="Apply on this revision instead of choosing."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
    follow_ups: bool = typer.Option(False, "--follow-ups", help="Then run the follow-ups the "
                                    "review calls for ([follow_ups]: bisect, align, compare, "
                                    "experiment) and print each one's reply; without it they "
                                    "wait, queued, for `lorelab run`."),
) -> None:
    """Review one thread end to end: fetch, apply, build, benchmark, decide, reply."""
    from bot.runs.review import ReviewError, review_thread, run_follow_ups, run_outcome

    config = settings()
    db = open_database()
    _check_fetchable(db, config.ingest.lore_url, thread)
    out = terminal.stdout()
    with _progress(out, quiet=as_json) as on_ingested:
        try:
            outcome = review_thread(db, config, thread, tree_path=tree,
                                    benchmarks=_names(bench), runner=runner, base=base,
                                    on_ingested=on_ingested)
            if not as_json:
                print_outcome(out, outcome)
            if follow_ups:
                followed = run_follow_ups(db, config, outcome.run_id, on_start=lambda run, kind: (
                    None if as_json else out.print(f"follow-up run {run}: {kind}")))
            else:  # queued, for `lorelab run`
                followed = [run_outcome(db, run_id) for run_id in outcome.follow_ups]
        except ReviewError as exc:
            raise UserError(str(exc)) from None
    if as_json:
        emit_json(_as_json(outcome) | {"follow_ups": [_as_json(f) for f in followed]})
    else:
        for follow_up in followed if follow_ups else ():
            print_outcome(out, follow_up, exit_status=False)
        if outcome.follow_ups and not follow_ups:
            out.print(f"follow-ups queued: runs {', '.join(map(str, outcome.follow_ups))} "
                      "(`lorelab run` sends them; `lorelab review --follow-ups` runs them here)",
                      markup=False, highlight=False)
    raise typer.Exit(outcome.exit_code)


def _as_json(outcome: ReviewOutcome) -> dict[str, object]:
    """A run's outcome as `lorelab review --json` prints it (a follow-up's without an exit
    status: the command's is its review's)."""
    return {"run": outcome.run_id, "kind": outcome.kind,
            "series_version": outcome.series_version_id, "title": outcome.title,
            "version": outcome.version, "state": outcome.state,
            "verdict": outcome.verdict_class,
            **({"exit_code": outcome.exit_code} if outcome.kind == "review" else {}),
            "reply_state": outcome.reply_state, "reply_notes": outcome.reply_notes,
            "headline": [h.as_dict() for h in outcome.headline], "why": outcome.outcome.why,
            "steps": outcome.steps,
            "reply": outcome.reply.decode("utf-8", "replace") if outcome.reply else None}


def print_outcome(out: Console, outcome: ReviewOutcome, exit_status: bool = True,
                  config: Path | None = None) -> None:
    """The run's outcome, headline and reply; `config`: the settings file the commands it
    suggests must be given (`-c`), as after the demo."""
    status = f" (exit status {outcome.exit_code})" if exit_status else ""
    kind = f" ({outcome.kind})" if outcome.kind != "review" else ""
    out.print(f"run {outcome.run_id}{kind}: {outcome.verdict_class}{status}")
    for change in outcome.headline:
        out.print(f"  {change.line()}", markup=False, highlight=False)
    if outcome.reply is None:
        out.print("no reply: " + (next((s["error"] for s in outcome.steps if s["error"]), "")
                                  or outcome.outcome.why), markup=False, highlight=False)
        return
    for note in outcome.reply_notes:
        out.print(note, markup=False, highlight=False)
    listing = f"lorelab -c {config} outbox list" if config else "lorelab outbox list"
    out.print(f"this run's reply ({outcome.reply_state}; `{listing}` shows it):", soft_wrap=True,
              markup=False)
    out.print("-" * 72)
    sys.stdout.flush()
    sys.stdout.buffer.write(outcome.reply)
    sys.stdout.flush()


def _names(text: str | None) -> list[str]:
    from bot.benchmarks.spec import split_specs

    return split_specs(text or "")


@contextmanager
def _progress(out, quiet: bool) -> Iterator:  # type: ignore[no-untyped-def, type-arg]
    """Print each stage as it starts and ends (eager mode runs them in this process)."""
    from bot.cli.step_lines import StepLines
    from bot.runs import steps

    def ingested(summary, title: str) -> None:  # type: ignore[no-untyped-def]
        if not quiet:
            out.print(f"ingest: {summary.read} mails, {summary.stored} new; reviewing {title}")

    lines = StepLines(lambda line: out.print(line, markup=False, highlight=False))

    def listener(run: int, name: str, state: str) -> None:
        boot = re.search(r"boot (\d+) of", state)
        # Every boot is a notification; every tenth is enough to show progress.
        if not quiet and (boot is None or int(boot[1]) % 10 == 0):
            lines(run, name, state)

    steps.LISTENERS.append(listener)
    try:
        yield ingested
    finally:
        steps.LISTENERS.remove(listener)


def _check_fetchable(db: Database, lore_url: str, thread: str) -> None:
    """A message-id that is not stored must come from [ingest] lore_url, a URL from its own
    host: say at once when there is no archive, or its host cannot be reached, rather than
    after retries (exit 75: try again with a network)."""
    import os

    import sqlalchemy as sa

    from bot.db.models import Message
    from bot.ingest.http import unreachable

    if os.path.exists(thread):
        return
    if thread.startswith(("https://", "http://")):
        if problem := unreachable(thread):
            raise UserError(f"{problem}; check the URL, or give an mbox file", exit_code=75)
        return
    if "@" not in thread or "/" in thread:
        return  # neither a URL nor a message-id: review_thread says what it expected
    msgid = thread.strip().strip("<>")
    with db.session() as session:
        if session.scalar(sa.select(Message.id).where(Message.msgid == msgid)) is not None:
            return
    if not lore_url:
        raise UserError(f"<{msgid}> is not stored here, and no archive is configured to fetch it "
                        "from: set [ingest] lore_url (e.g. https://lore.kernel.org/all), or "
                        "give an mbox file", exit_code=66)
    if problem := unreachable(lore_url):
        raise UserError(f"<{msgid}> is not stored here, and {problem}; check [ingest] lore_url, "
                        "or give an mbox file", exit_code=75)
