"""`lorelab analyze RESULTS`: the verdict on every metric of a benchmark run.

RESULTS is a review run's id (what `lorelab review` and `lorelab runs list` print: every lab
campaign of the run), `campaign:ID` for one lab campaign (`lorelab bench` prints it), or a
recorded-results file (`lorelab-results/1`, see bot/report/compose/results_file.py): the raw
per-boot samples either way. The comparisons are recomputed from the samples every time (a
review run's reply shows the judgement its campaigns stored when they ended).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from bot.cli import terminal
from bot.cli.context import UserError, emit_json


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)


def load_results_file(path: Path) -> tuple[Any, Any]:
    """The reply context and date a recorded-results file holds, or a UserError saying why not."""
    from bot.report.compose.results_file import ResultsFileError, load_results

    if not path.is_file():
        raise UserError(
            f"{path}: no such file; give a recorded-results file (lorelab-results/1)", 66
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not JSON: {exc}") from None
    try:
        return load_results(data)
    except ResultsFileError as exc:
        raise UserError(f"{path}: {exc}") from None


CAMPAIGN = "campaign:"


def stored_results(ref: str) -> tuple[str, tuple[Any, ...]]:
    """(title, judged BenchmarkResults) of a run's campaigns ("12") or of one ("campaign:7"),
    from their samples."""

    from bot.benchmarks.registry import benchmark
    from bot.cli.database import open_database
    from bot.db.models import LabCampaign, Run
    from bot.report.compose.campaign import judge_campaign
    from bot.runs.findings import run_campaigns

    with open_database().session() as session:
        if ref.startswith(CAMPAIGN):
            campaign = session.get(LabCampaign, int(ref.removeprefix(CAMPAIGN)))
            if campaign is None:
                raise UserError(f"no lab campaign {ref.removeprefix(CAMPAIGN)}", 66)
            campaigns = [campaign]
            title = (f"campaign {campaign.id}: {campaign.benchmark} on {campaign.host}, "
                     f"{campaign.kernel_a} against {campaign.kernel_b}")
        else:
            run = session.get(Run, int(ref))
            if run is None:
                raise UserError(f"no run {ref} (and no such file); `lorelab runs list` shows "
                                f"the runs, `{CAMPAIGN}ID` names one lab campaign", 66)
            campaigns = run_campaigns(session, run, done=True)
            if not campaigns:
                raise UserError(f"run {run.id} has no finished lab campaign to analyze "
                                f"(`lorelab runs show {run.id}` says where it stands)", 66)
            title = (f"run {run.id}: {', '.join(c.benchmark for c in campaigns)} on "
                     f"{campaigns[0].host} (campaigns {', '.join(str(c.id) for c in campaigns)})")
        judged = tuple(judge_campaign(c, benchmark(c.benchmark, **c.parameters))
                       for c in campaigns)
    return title, judged


def analyze(
    results: str = typer.Argument(..., help="A review run's id, campaign:ID for one lab "
                                  "campaign, or a recorded-results file (lorelab-results/1)."),
    as_json: bool = typer.Option(False, "--json", help="Print every metric's verdict as JSON."),
) -> None:
    """Judge every metric of a benchmark run, base against patched."""
    numeric = results.removeprefix(CAMPAIGN)
    if numeric.isdigit() and not Path(results).exists():
        title, benchmarks = stored_results(results)
    else:
        context, _ = load_results_file(Path(results))
        title = f"{context.series.title} (v{context.series.version})"
        benchmarks = context.benchmarks
    rows = [{"benchmark": b.label, **m.as_dict()} for b in benchmarks for m in b.metrics]
    if as_json:
        emit_json(rows)
        return
    table = Table(title=title, title_justify="left")
    for column in ("benchmark", "metric", "change", "interval", "p", "delta", "verdict"):
        table.add_column(column, overflow="fold")
    for r in rows:
        style = "bold" if r["verdict"] in ("regression", "improvement") else None
        table.add_row(
            r["benchmark"],
            r["metric"],
            f"{r['change_pct']:+.2f}%",
            f"[{r['ci_pct'][0]:+.2f}%, {r['ci_pct'][1]:+.2f}%] "
            f"{terminal.number(100 * r['interval_level'])}%",
            terminal.p_value(r["p"]),
            f"{terminal.number(r['delta_pct'])}%",
            r["words"] + ("".join(f"; {f}" for f in r["findings"])),
            style=style,
        )
    out = terminal.stdout()
    out.print(table)
    changed = sum(r["verdict"] in ("regression", "improvement") for r in rows)
    out.print(
        f"{changed} of {len(rows)} metrics changed (after controlling the false discovery rate)"
    )
    sys.stdout.flush()
