"""`lorelab analyze RESULTS`: the verdict on every metric of a benchmark run.

RESULTS is a recorded-results file (`lorelab-results/1`, see bot/report/compose/results_file.py)
or the id of a lab campaign (`lorelab bench` prints it; `lorelab runs show` lists a review
run's): the raw per-boot samples either way. The comparisons are recomputed from the samples
every time (a review run's reply shows the judgement its campaign stored when it ended).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from bot.cli.context import UserError, emit_json, stdout_console


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


def campaign_results(campaign_id: int) -> tuple[str, Any]:
    """(title, judged BenchmarkResult) of a stored lab campaign, from its samples."""
    from bot.benchmarks.registry import benchmark
    from bot.cli.database import open_database
    from bot.db.models import LabCampaign
    from bot.report.compose.campaign import judge_campaign

    with open_database().session() as session:
        campaign = session.get(LabCampaign, campaign_id)
        if campaign is None:
            raise UserError(f"no lab campaign {campaign_id} (and no such file)", 66)
        judged = judge_campaign(campaign, benchmark(campaign.benchmark, **campaign.parameters))
        title = (f"campaign {campaign.id}: {campaign.benchmark} on {campaign.host}, "
                 f"{campaign.kernel_a} against {campaign.kernel_b}")
    return title, judged


def analyze(
    results: str = typer.Argument(..., help="A recorded-results file (lorelab-results/1), or "
                                  "a lab campaign's id."),
    as_json: bool = typer.Option(False, "--json", help="Print every metric's verdict as JSON."),
) -> None:
    """Judge every metric of a benchmark run, base against patched."""
    if results.isdigit() and not Path(results).exists():
        title, judged = campaign_results(int(results))
        benchmarks = (judged,)
    else:
        context, _ = load_results_file(Path(results))
        title = f"{context.series.title} (v{context.series.version})"
        benchmarks = context.benchmarks
    rows = [{"benchmark": b.label, **m.as_dict()} for b in benchmarks for m in b.metrics]
    if as_json:
        emit_json(rows)
        return
    table = Table(title=title, title_justify="left")
    for column in ("benchmark", "metric", "change", "95% CI", "p", "verdict"):
        table.add_column(column, overflow="fold")
    for r in rows:
        style = "bold" if r["verdict"] in ("regression", "improvement") else None
        table.add_row(
            r["benchmark"],
            r["metric"],
            f"{r['change_pct']:+.2f}%",
            f"[{r['ci_pct'][0]:+.2f}%, {r['ci_pct'][1]:+.2f}%]",
            f"{r['p']:.3f}",
            r["words"] + ("".join(f"; {f}" for f in r["findings"])),
            style=style,
        )
    out = stdout_console()
    out.print(table)
    changed = sum(r["verdict"] in ("regression", "improvement") for r in rows)
    out.print(
        f"{changed} of {len(rows)} metrics changed (after controlling the false discovery rate)"
    )
    sys.stdout.flush()
