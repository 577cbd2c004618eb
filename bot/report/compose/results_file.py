"""The recorded-results file: one benchmark reply's inputs as JSON (format "lorelab-results/1").

`lorelab analyze` writes it and `lorelab reply preview FILE` renders it. It holds raw per-boot
samples, not verdicts: the comparisons are recomputed here with bot.analysis.verdict (fixed n with
`compare`, or the sequential rule with `decide_after_pair`), then the false discovery rate is
controlled per benchmark run, separately for its metrics and its reclaim counters.

    {
      "format": "lorelab-results/1",
      "date": "2026-12-01T09:30:00+00:00",          # optional: the reply's Date header
      "parent": {"msgid": str, "subject": str, "from": "Name <addr>",
                 "to": [str], "cc": [str], "references": [str], "lists": [str]},
      "series": {"title": str, "version": int, "patches": int, "lore_url": str,
                 "status_url": str, "series_version_id": int | null, "anchor_msgid": str},
      "tree": {"tree": str, "branch": str, "base": str, "head": str},
      "machine": {"cpu": str, "cores": int, "threads": int, "l1d": str, "l1i": str, "l2": str,
                  "l3": str, "memory": str, "numa_nodes": int, "boot": str, "host": str},
      "build": {"config_name": str, "config_hash": str, "config_url": str, "compiler": str},
      "policy": {"runs_per_kernel": int, "order": str, "sequential": bool, "k_min": int,
                 "k_max": int, "alpha": float, "delta": float, "iterations": str},
      "benchmarks": [{
        "name": str, "parameters": {str: str | number},   # in the benchmark's order
        "metrics": [{"name": str, "unit": str, "higher_is_better": bool | null,
                     "secondary": bool, "delta": float,     # optional, else policy.delta
                     "base": [float], "patched": [float],   # per-boot values, in run order
                     "base_positions": [int], "patched_positions": [int]}]   # optional
      }],
      "claims": [{"author": str, "lines": [str], "summary": str, "benchmarks": [str],
                  "change_pct": float | null, "unit": str | null,
                  "higher_is_better": bool | null, "runs": int | null,
                  "date": str | null, "msgid": str | null}],
      "reproduce": [str]
    }

A metric whose higher_is_better is null (most vmstat counters) is reported as an increase or
decrease. A metric with a value <= 0 in some run cannot be compared as a ratio: it is listed as
not compared.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from bot.analysis.verdict import Comparison, compare, decide_after_pair, judge_metrics
from bot.report.compose.inputs import ParentMessage, Person, SeriesInfo, TreeInfo
from bot.report.compose.results import (
    BenchmarkReplyContext,
    BenchmarkResult,
    BuildInfo,
    ClaimQuote,
    Machine,
    MetricResult,
    RunPolicy,
)

FORMAT = "lorelab-results/1"


class ResultsFileError(ValueError):
    """The file does not have the shape above; the text names the key."""


def load_results(data: dict[str, Any]) -> tuple[BenchmarkReplyContext, dt.datetime | None]:
    """The reply context of a recorded-results document, and its Date if it gives one."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ResultsFileError(f'not a recorded-results file: "format" must be "{FORMAT}"')
    try:
        policy = RunPolicy(**data["policy"])
        ctx = BenchmarkReplyContext(
            parent=_parent(data["parent"]),
            series=SeriesInfo(**data["series"]),
            tree=TreeInfo(**data["tree"]),
            machine=Machine(**data["machine"]),
            build=BuildInfo(**data["build"]),
            policy=policy,
            benchmarks=tuple(
                benchmark_result(bench, policy, f"benchmarks[{i}]")
                for i, bench in enumerate(data["benchmarks"])
            ),
            claims=tuple(_claim(claim) for claim in data.get("claims", [])),
            reproduce=tuple(data.get("reproduce", [])),
        )
        date = dt.datetime.fromisoformat(data["date"]) if data.get("date") else None
    except KeyError as exc:
        raise ResultsFileError(f"missing key {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ResultsFileError(str(exc)) from None
    return ctx, date


def _parent(raw: dict[str, Any]) -> ParentMessage:
    return ParentMessage(
        msgid=raw["msgid"].strip("<>"),
        subject=raw["subject"],
        sender=Person.parse(raw["from"]),
        to=tuple(Person.parse(text) for text in raw.get("to", [])),
        cc=tuple(Person.parse(text) for text in raw.get("cc", [])),
        references=tuple(ref.strip("<>") for ref in raw.get("references", [])),
        lists=tuple(raw.get("lists", [])),
        date=dt.datetime.fromisoformat(raw["date"]) if raw.get("date") else None,
    )


def benchmark_result(raw: dict[str, Any], policy: RunPolicy, where: str) -> BenchmarkResult:
    """Judge one benchmark's metrics from their raw per-boot values (the file's `benchmarks[]`
    shape); main metrics and secondary counters are each a family for the FDR control."""
    parameters = tuple((str(k), str(v)) for k, v in raw.get("parameters", {}).items())
    judged: dict[str, tuple[dict[str, Any], Comparison]] = {}
    skipped = []
    for j, metric in enumerate(raw["metrics"]):
        base, patched = metric["base"], metric["patched"]
        if not base or not patched or not all(isinstance(v, int | float) for v in base + patched):
            raise ResultsFileError(f"{where}.metrics[{j}]: base and patched must be numbers")
        if min(base + patched) <= 0:
            skipped.append(metric["name"])
            continue
        judged[metric["name"]] = (metric, _comparison(metric, policy))
    metrics = []
    for secondary in (False, True):
        family = {
            name: comparison
            for name, (metric, comparison) in judged.items()
            if bool(metric.get("secondary", False)) is secondary
        }
        for name, comparison in judge_metrics(family).items() if family else ():
            metric = judged[name][0]
            metrics.append(
                MetricResult(
                    name=name,
                    unit=metric.get("unit", ""),
                    comparison=comparison,
                    secondary=secondary,
                    direction_known=metric.get("higher_is_better") is not None,
                )
            )
    return BenchmarkResult(raw["name"], parameters, tuple(metrics), tuple(skipped))


def _comparison(metric: dict[str, Any], policy: RunPolicy) -> Comparison:
    higher = bool(metric.get("higher_is_better"))
    delta = float(metric.get("delta", policy.delta))
    positions = {
        "base_positions": metric.get("base_positions"),
        "patched_positions": metric.get("patched_positions"),
    }
    # Secondary metrics (reclaim counters) did not decide when to stop: judged at the end.
    if policy.sequential and not metric.get("secondary", False):
        return decide_after_pair(
            metric["base"],
            metric["patched"],
            higher_is_better=higher,
            delta=delta,
            k_min=policy.k_min or 5,
            k_max=policy.k_max or 30,
            **positions,
        )
    return compare(
        metric["base"],
        metric["patched"],
        higher_is_better=higher,
        delta=delta,
        alpha=policy.alpha,
        **positions,
    )


def _claim(raw: dict[str, Any]) -> ClaimQuote:
    date = raw.get("date")
    return ClaimQuote(
        author=raw["author"],
        lines=tuple(raw["lines"]),
        summary=raw["summary"],
        benchmarks=tuple(raw.get("benchmarks", [])),
        change_pct=raw.get("change_pct"),
        unit=raw.get("unit"),
        higher_is_better=raw.get("higher_is_better"),
        runs=raw.get("runs"),
        date=dt.datetime.fromisoformat(date) if date else None,
        msgid=raw.get("msgid"),
    )
