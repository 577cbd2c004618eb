"""`lorelab analyze RESULTS`: the verdict on every metric of a benchmark run.

RESULTS is a recorded-results file (`lorelab-results/1`, see bot/report/results_file.py): the raw
per-boot samples of a run. Lab runs stored by the bench stage will be accepted by id as well once
that stage exists. The comparisons are recomputed from the samples every time, never stored.
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
    from bot.report.results_file import ResultsFileError, load_results

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


def analyze(
    results: Path = typer.Argument(..., help="A recorded-results file (lorelab-results/1)."),
    as_json: bool = typer.Option(False, "--json", help="Print every metric's verdict as JSON."),
) -> None:
    """Judge every metric of a benchmark run, base against patched."""
    context, _ = load_results_file(results)
    rows = [{"benchmark": b.label, **m.as_dict()} for b in context.benchmarks for m in b.metrics]
    if as_json:
        emit_json(rows)
        return
    table = Table(title=f"{context.series.title} (v{context.series.version})", title_justify="left")
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
