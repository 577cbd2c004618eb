"""`lorelab demo`: the main job on the embedded default, from a generated thread to a reply."""

from __future__ import annotations

import typer

from bot.cli import terminal
from bot.cli.context import UserError, emit_json
from bot.config import data_dir


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON.")) -> None:
    """Review a generated series on the stand-in tree end to end, and print the reply."""
    import shutil

    from bot.cli.review import _progress, print_outcome
    from bot.demo.run import run_demo

    missing = [tool for tool in ("make", "gcc") if shutil.which(tool) is None]
    if missing:  # the stand-in tree is built like a kernel: it needs both
        raise UserError(f"lorelab demo builds its stand-in kernel tree with make and gcc; "
                        f"install {' and '.join(missing)} (Debian: make gcc libc6-dev)")
    out = terminal.stdout()
    with _progress(out, quiet=as_json) as on_ingested:
        result = run_demo(data_dir(), on_ingested=on_ingested)
    outcome = result.review
    if as_json:
        emit_json({"database": result.database_url, "config": str(result.config),
                   "seeds": result.seeds.to_dict(), "ingest": outcome.ingest.to_dict(),
                   "run": outcome.run_id, "series_version": outcome.series_version_id,
                   "title": outcome.title, "verdict": outcome.verdict_class,
                   "steps": outcome.steps, "reply_state": outcome.reply_state,
                   "reply": outcome.reply.decode("utf-8", "replace") if outcome.reply else None})
        return
    print_outcome(out, outcome, exit_status=False, config=result.config)
    out.print()
    out.print(f"everything is in {result.database_url}; `lorelab serve` shows it (while you "
              "have no config and no mail of your own), and so does -c with any command:",
              soft_wrap=True, markup=False)
    out.print(f"  lorelab -c {result.config} serve      # the status page", soft_wrap=True)
    out.print(f"  lorelab -c {result.config} runs show {outcome.run_id}", soft_wrap=True)
