"""The recorded-results file: one benchmark reply's inputs as JSON (format "lorelab-results/1").

`lorelab analyze` writes it and `lorelab reply preview FILE` renders it. It holds raw per-boot
samples, not verdicts: the comparisons are recomputed here, all of a benchmark run's metrics as one
family: with the sequential rule over the pairs (bot.analysis.family, as a lab campaign is judged)
or, for a fixed number of runs, with `compare` and the false discovery rate control.

    {
      "format": "lorelab-results/1",
      "date": "2026-12-01T09:30:00+00:00",          # optional: the reply's Date header
      "parent": {"msgid": str, "subject": str, "from": "Name <addr>",
                 "to": [str], "cc": [str], "references": [str], "lists": [str]},
      "series": {"title": str, "version": int, "patches": int, "lore_url": str,
                 "status_url": str, "series_version_id": int | null, "anchor_msgid": str},
      "tree": {"tree": str, "branch": str, "base": str, "head": str},
      "machine": {"cpu": str, "cores": int, "threads": int, "l1d": str, "l1i": str, "l2": str,
                  "l3": str, "memory": str, "numa_nodes": int, "boot": str, "host": str,
                  "runner": str, "kernel": str, "host_machine": str, "lru": str},  # last 4 optional
      "build": {"config_name": str, "config_hash": str, "config_url": str, "compiler": str},
      "policy": {"runs_per_kernel": int, "order": str, "sequential": bool, "k_min": int,
                 "k_max": int, "alpha": float, "delta": float, "iterations": str},
      "benchmarks": [{
        "name": str, "parameters": {str: str | number},   # in the benchmark's order
        "metrics": [{"name": str, "unit": str, "higher_is_better": bool | null,
                     "secondary": bool, "delta": float,     # optional, else policy.delta
                     "base": [float], "patched": [float],   # per-boot values, in run order
                                                            # (sequential: per pair, null: none)
                     "base_positions": [int], "patched_positions": [int]}]   # optional
      }],
      "claims": [{"author": str, "lines": [str], "summary": str, "benchmarks": [str],
                  "change_pct": float | null, "unit": str | null,
                  "higher_is_better": bool | null, "runs": int | null,
                  "date": str | null, "msgid": str | null}],
      "reproduce": [str],
      "outcome": str                               # optional: the run's outcome word
    }

A metric whose higher_is_better is null (most vmstat counters) is reported as an increase or
decrease. Sequential: a NaN, infinite or negative value is left out with its reason, and a metric
that is zero in some run is compared on an absolute scale (bot.analysis.screen). Fixed n: a
metric with a value <= 0 in some run cannot be compared as a ratio and is listed as not compared.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from bot.analysis.family import MetricPairs, judge_pairs
from bot.analysis.verdict import Comparison, compare, judge_metrics
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
            outcome=str(data.get("outcome", "")),
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
    shape), all of them as one family. Sequential: base[i] and patched[i] are pair i (null for
    a value the boot did not give), judged by bot.analysis.family; else fixed n, unpaired."""
    parameters = tuple((str(k), str(v)) for k, v in raw.get("parameters", {}).items())
    for j, metric in enumerate(raw["metrics"]):
        values = metric["base"] + metric["patched"]
        if not metric["base"] or not metric["patched"] or not all(
                v is None or isinstance(v, int | float) for v in values):
            raise ResultsFileError(f"{where}.metrics[{j}]: base and patched must be numbers")
    if policy.sequential:
        judged, skipped = _sequential(raw["metrics"], policy), []
    else:
        judged, skipped = _fixed(raw["metrics"], policy)
    by_name = {m["name"]: m for m in raw["metrics"]}
    metrics = tuple(
        MetricResult(
            name=name,
            unit=by_name[name].get("unit", ""),
            comparison=comparison,
            secondary=bool(by_name[name].get("secondary", False)),
            direction_known=by_name[name].get("higher_is_better") is not None,
        )
        for secondary in (False, True)
        for name, comparison in judged.items()
        if bool(by_name[name].get("secondary", False)) is secondary
    )
    return BenchmarkResult(raw["name"], parameters, metrics, tuple(skipped))


def _sequential(raw: list[dict[str, Any]], policy: RunPolicy) -> dict[str, Comparison]:
    pairs = [
        MetricPairs(
            name=m["name"],
            base=tuple(m["base"]),
            patched=tuple(m["patched"]),
            higher_is_better=m.get("higher_is_better"),
            delta=float(m.get("delta", policy.delta)),
            main=not m.get("secondary", False),
            base_positions=_tuple(m.get("base_positions")),
            patched_positions=_tuple(m.get("patched_positions")),
        )
        for m in raw
    ]
    if any(len(p.base) != len(p.patched) for p in pairs):
        raise ResultsFileError("a sequential comparison needs as many base as patched values")
    judged = judge_pairs(pairs, k_min=policy.k_min or 5, k_max=policy.k_max or 30,
                         q=policy.alpha)
    return {p.name: judged.comparisons[p.name] for p in pairs}


def _fixed(raw: list[dict[str, Any]], policy: RunPolicy) -> tuple[dict[str, Comparison],
                                                                  list[str]]:
    """Unpaired fixed-n comparisons, one family; a metric with a value <= 0 or missing cannot
    be a ratio of two samples and is listed as not compared."""
    comparisons, skipped = {}, []
    for metric in raw:
        values = metric["base"] + metric["patched"]
        if any(v is None or not math.isfinite(v) or v <= 0 for v in values):
            skipped.append(metric["name"])
            continue
        comparisons[metric["name"]] = compare(
            metric["base"], metric["patched"],
            higher_is_better=bool(metric.get("higher_is_better")),
            delta=float(metric.get("delta", policy.delta)), alpha=policy.alpha,
            base_positions=metric.get("base_positions"),
            patched_positions=metric.get("patched_positions"))
    main = [m["name"] for m in raw if not m.get("secondary", False)]
    return judge_metrics(comparisons, main=main) if comparisons else {}, skipped


def _tuple(values: list[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


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
