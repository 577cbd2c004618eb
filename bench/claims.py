"""How well `lorelab claims` reads the corpus of claim mails (tests/fixtures/claims/).

For every mail the extracted measurements are matched one to one against the expected ones in the
JSON beside it, on (metric, base, patched, n, spread, direction): the metric name when the
expectation names one, values within 0.1% (means of runs are compared unrounded), the run count
exactly, each side's per-run CV within 2% of itself (or both absent), the direction exactly.
Per layout and overall it prints precision (matched / extracted), recall (matched / expected) and,
over the matched measurements, how often the judgement's verdict is the expected one. It also
prints the work units each mail cost against the per-mail budget (docs/claims.md, "Bad input").

    .venv/bin/python bench/claims.py [--corpus DIR] [--json]

Targets (issue 14): recall >= 90% and precision >= 95% overall, no layout below 75% recall.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.analysis.claims import analyse_message  # noqa: E402
from bot.analysis.claims.input import read_message_text  # noqa: E402
from bot.analysis.claims.numbers import Budget  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claims"


def _close(a: float | None, b: float | None, rel: float, absolute: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), absolute)


def matches(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Whether an extracted measurement is the expected one."""
    if want["metric"] is not None and got["metric"].strip().lower() != want["metric"].lower():
        return False
    if not (
        _close(got["base"], want["base"], 1e-3) and _close(got["patched"], want["patched"], 1e-3)
    ):
        return False
    n = None if got["n_base"] is None else min(got["n_base"], got["n_patched"] or got["n_base"])
    if n != want["n"]:
        return False
    cv = got["cv_pct"] if any(c is not None for c in got["cv_pct"]) else None
    if (cv is None) != (want["cv"] is None):
        return False
    if cv is not None and not all(
        _close(g, w, 0.02, 0.01) for g, w in zip(cv, want["cv"], strict=True)
    ):
        return False
    return got["direction"] == want["direction"]


def score_mail(path: Path) -> dict[str, Any]:
    expected = json.loads(path.with_suffix(".json").read_text())
    message = read_message_text(path.read_bytes())
    budget = Budget()
    result = analyse_message(message.subject, message.sender, message.body, budget=budget)
    extracted = [m for claim in result.to_dict()["claims"] for m in claim["measurements"]]
    unmatched = list(range(len(extracted)))
    matched, agreed = 0, 0
    misses = []
    for want in expected["measurements"]:
        hit = next((i for i in unmatched if matches(extracted[i], want)), None)
        if hit is None:
            misses.append(want)
            continue
        unmatched.remove(hit)
        matched += 1
        agreed += extracted[hit]["judgement"]["verdict"] == want["verdict"]
    return {
        "mail": path.name,
        "layout": expected["layout"],
        "expected": len(expected["measurements"]),
        "extracted": len(extracted),
        "matched": matched,
        "agreed": agreed,
        "work": budget.spent,
        "misses": misses,
        "extra": [extracted[i] for i in unmatched],
    }


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", action="store_true", help="print per-mail results as JSON")
    args = parser.parse_args()
    mails = sorted(args.corpus.glob("*.eml"))
    results = [score_mail(path) for path in mails]
    if args.json:
        print(json.dumps(results, indent=1, default=str))
        return
    by_layout: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in results:
        for key in ("expected", "extracted", "matched", "agreed"):
            by_layout[r["layout"]][key] += r[key]
        by_layout[r["layout"]]["mails"] += 1
    print(f"{len(mails)} mails, {len(by_layout)} layouts ({args.corpus})\n")
    print("| layout | mails | expected | extracted | precision | recall | judgement agrees |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    total: dict[str, int] = defaultdict(int)
    for layout, t in sorted(by_layout.items()):
        for key, value in t.items():
            total[key] += value
        print(
            f"| {layout} | {t['mails']} | {t['expected']} | {t['extracted']} | "
            f"{_pct(t['matched'], t['extracted'])} | {_pct(t['matched'], t['expected'])} | "
            f"{_pct(t['agreed'], t['matched'])} |"
        )
    print(
        f"| **all** | {total['mails']} | {total['expected']} | {total['extracted']} | "
        f"{_pct(total['matched'], total['extracted'])} | "
        f"{_pct(total['matched'], total['expected'])} | {_pct(total['agreed'], total['matched'])} |"
    )
    work = sorted(r["work"] for r in results)
    print(
        f"\nwork units per mail: median {work[len(work) // 2]:,}, max {work[-1]:,} "
        f"(budget {Budget.DEFAULT_UNITS:,}, max/budget {work[-1] / Budget.DEFAULT_UNITS:.4f})"
    )
    worst = min(_pct_value(t["matched"], t["expected"]) for t in by_layout.values())
    print(f"lowest layout recall: {worst:.1f}%")
    for r in results:
        for miss in r["misses"]:
            print(f"  missed in {r['mail']}: {miss}")
        for extra in r["extra"]:
            print(
                f"  extra in {r['mail']}: {extra['metric']} {extra['base']} -> {extra['patched']}"
            )


def _pct_value(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 100.0


if __name__ == "__main__":
    main()
