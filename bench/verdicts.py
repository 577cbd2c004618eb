"""Simulate lab campaigns through the real pair loop and judge the judging (docs/statistics.md).

Each campaign runs `workers.lab.pairs.run_pairs` (one warm-up pair, k_min 5, k_max 30 or
--pairs-max, seeded AB/BA order) on simulated boots: a boot of kernel A or B gives a run time
(lower is better) with the cell's noise, the patched kernel's multiplied by 1 + effect, and the
machine's drift applied to the boot's place in the session. Per noise, CV and effect it reports:
- lorelab: how often a change is called (A/A: false alarms; else power, in the right direction),
  mean and 95th percentile pairs, coverage of the reported 95% interval and the bias of the
  reported estimate among the campaigns that called the change, alone and, for a change,
  also as the main metric of a whole reply (below): the family's share of the level is what
  the early-stop correction must simulate;
- on the same first 10 pairs: the lkp-tests range rule (lib/stats.rb, lib/changed_stat.rb: the
  middle value, disjoint ranges, ratio of the middles > 1%) and Student's t at p <= 0.05;
- for A/A cells, a whole reply: 1 main metric + its seconds-beside-rate secondary (an exact
  reciprocal) + 10 reclaim counters (log-normal, CV 5%, independent), the share of campaigns
  with any change anywhere in the reply.
Noise: normal, lognormal, t3 (Student's t, 3 d.f.), 5% of boots x1.5, drift +0.1%/boot
(lognormal around it), bimodal (two modes 2 CV apart), values rounded to 1% steps.

Run: .venv/bin/python bench/verdicts.py [--campaigns 500] [--reply-campaigns 200] [--seed 1]
     [--noises normal,drift] [--cvs 0.02] [--effects 0,0.05] [--pairs-max 30] [--no-half-delta]
(the filters pick cells; a cell's campaigns have the same seeds whatever else runs; seeds of
--seed s and s + 1 overlap, so take seeds far apart for independent repeats).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from machine import describe
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.analysis.verdict import Verdict  # noqa: E402
from bot.benchmarks.definition import Metric  # noqa: E402
from workers.lab.pairs import Sample, run_pairs  # noqa: E402

NOISES = ("normal", "lognormal", "t3", "outliers", "drift", "bimodal", "rounded")
CVS = (0.01, 0.02, 0.05)
EFFECTS = (0.0, 0.01, 0.02, 0.05, 0.10)
FIXED_RUNS = 10
COUNTERS = 10
TIME = Metric("sim.time", "s", higher_is_better=False, delta=0.01)
RATE = Metric("sim.rate", "ops/s", higher_is_better=True, delta=0.01, main=False)
WHEN = datetime(2026, 12, 1, tzinfo=UTC)


def boot_value(rng: np.random.Generator, noise: str, cv: float, slot: int) -> float:
    """One boot's multiplicative noise around 1 (slot: the boot's place in the session)."""
    sigma = math.sqrt(math.log1p(cv * cv))
    if noise == "normal":
        return max(1e-6, 1.0 + cv * rng.standard_normal())
    if noise == "t3":  # scaled to the same standard deviation (t3 has variance 3)
        return max(1e-6, 1.0 + cv * rng.standard_t(3) / math.sqrt(3))
    if noise == "bimodal":
        return math.exp(sigma * (rng.standard_normal() * 0.5 + (1 if rng.random() < 0.5 else -1)
                                 * 0.866))
    value = math.exp(sigma * rng.standard_normal())
    if noise == "outliers" and rng.random() < 0.05:
        value *= 1.5
    if noise == "drift":
        value *= 1.001**slot
    if noise == "rounded":
        step = math.log(1.01)
        value = math.exp(round(math.log(value) / step) * step)
    return value


@dataclass
class Campaign:
    """The boots a campaign ran and what the judgement said."""

    verdict: Verdict
    changed_anywhere: bool
    pairs: int
    estimate_pct: float
    low_pct: float
    high_pct: float


def campaign(seed: int, noise: str, cv: float, effect: float, whole_reply: bool,
             k_max: int = 30) -> Campaign:
    rng = np.random.default_rng(seed)

    def run_one(kernel: str, pair_index: int, position: int) -> list[Sample]:
        slot = 2 * pair_index + position
        value = boot_value(rng, noise, cv, slot) * (1 + effect if kernel == "B" else 1.0)
        samples = [Sample(TIME.name, value, "s", kernel, pair_index, position, "sim",
                          f"b{slot}", "none", WHEN)]
        if whole_reply:
            samples.append(Sample(RATE.name, 1.0 / value, "ops/s", kernel, pair_index,
                                  position, "sim", f"b{slot}", "none", WHEN))
            samples += [Sample(f"pgscan_{i}", 1000 * math.exp(0.05 * rng.standard_normal()),
                               "pages", kernel, pair_index, position, "sim", f"b{slot}", "none",
                               WHEN) for i in range(COUNTERS)]
        return samples

    metrics = [TIME, RATE] if whole_reply else [TIME]
    result = run_pairs(run_one, metrics, seed=seed, warmup_pairs=1, k_min=5, k_max=k_max)
    main = result.comparisons[TIME.name]
    return Campaign(
        verdict=main.verdict,
        changed_anywhere=any(c.changed for c in result.judgement.values()),
        pairs=result.pairs,
        estimate_pct=main.change_pct,
        low_pct=main.ci_low_pct,
        high_pct=main.ci_high_pct,
    )


def lkp_changed(base: np.ndarray, patched: np.ndarray) -> bool:
    """lkp-tests' range rule at 10 runs a side (no trimming below 32 samples)."""
    a, b = np.sort(base), np.sort(patched)
    mid_a, mid_b = a[a.size // 2], b[b.size // 2]
    ratio = max(mid_a, mid_b) / min(mid_a, mid_b)
    disjoint = (b[0] > mid_a and mid_b > a[-1]) or (a[0] > mid_b and mid_a > b[-1])
    return bool(disjoint and ratio > 1.01)


def student_changed(base: np.ndarray, patched: np.ndarray) -> bool:
    return bool(stats.ttest_ind(patched, base).pvalue <= 0.05)


@dataclass
class Cell:
    noise: str
    cv: float
    effect: float
    called: float  # share of campaigns that called a change (in the right direction if any)
    no_change: float  # share that ended "no change" before pairs_max
    mean_pairs: float
    p95_pairs: float
    coverage: float  # reported interval contains the true change
    bias_pct: float  # mean reported estimate - true change, among the campaigns that called it
    reply_bias_pct: float  # the same, the main metric of whole replies (nan: none run)
    lkp: float
    student: float
    reply_alarms: float | None = None


def run_cell(noise: str, cv: float, effect: float, campaigns: int, reply_campaigns: int,
             seed: int, k_max: int = 30) -> Cell:
    # Each cell its own block of seeds: cells with similar noise must not share their luck.
    seed = seed + 10_000_000 * (NOISES.index(noise) + 1) + 100_000 * round(1000 * cv) \
        + 1_000 * round(100 * effect)
    results = [campaign(seed + i, noise, cv, effect, False, k_max) for i in range(campaigns)]
    truth = 100 * effect
    right = Verdict.REGRESSION if effect > 0 else None
    if right is None:
        called = [r.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) for r in results]
    else:
        called = [r.verdict is right for r in results]
    pairs = np.array([r.pairs for r in results])
    found = [r.estimate_pct - truth for r, c in zip(results, called, strict=True) if c]
    first = []  # the fixed-n rules: 10 interleaved runs a side with the same noise
    for i in range(campaigns):
        rng = np.random.default_rng(10_000_000 + seed + i)
        a = np.array([boot_value(rng, noise, cv, 2 * j) for j in range(FIXED_RUNS)])
        b = np.array([boot_value(rng, noise, cv, 2 * j + 1) for j in range(FIXED_RUNS)])
        first.append((a, b * (1 + effect)))
    cell = Cell(
        noise=noise, cv=cv, effect=effect,
        called=float(np.mean(called)),
        no_change=float(np.mean([r.verdict is Verdict.NO_CHANGE and r.pairs < k_max
                                 for r in results])),
        mean_pairs=float(pairs.mean()),
        p95_pairs=float(np.percentile(pairs, 95)),
        coverage=float(np.mean([r.low_pct <= truth <= r.high_pct for r in results])),
        bias_pct=float(np.mean(found)) if found else math.nan,
        reply_bias_pct=math.nan,
        lkp=float(np.mean([lkp_changed(a, b) for a, b in first])),
        student=float(np.mean([student_changed(a, b) for a, b in first])),
    )
    replies = [campaign(seed + 500_000 + i, noise, cv, effect, True, k_max)
               for i in range(reply_campaigns)]
    if effect == 0 and replies:
        cell.reply_alarms = float(np.mean([r.changed_anywhere for r in replies]))
    elif replies:
        found = [r.estimate_pct - truth for r in replies if r.verdict is right]
        cell.reply_bias_pct = float(np.mean(found)) if found else math.nan
    return cell


def _pct(share: float | None) -> str:
    return "" if share is None or math.isnan(share) else f"{100 * share:.1f}"


def _points(bias: float) -> str:
    return "" if math.isnan(bias) else f"{bias:+.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=500, help="per cell")
    parser.add_argument("--reply-campaigns", type=int, default=200,
                        help="per cell, whole replies (12 metrics each)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--noises", default=",".join(NOISES))
    parser.add_argument("--cvs", default=",".join(f"{c:g}" for c in CVS))
    parser.add_argument("--effects", default=",".join(f"{e:g}" for e in EFFECTS))
    parser.add_argument("--pairs-max", type=int, default=30, help="k_max of every campaign")
    parser.add_argument("--no-half-delta", action="store_true",
                        help="skip the A/A cells at CV = delta / 2")
    args = parser.parse_args(argv)
    if args.campaigns < 1:
        parser.error("--campaigns must be at least 1 (whole replies run beside them)")
    started = time.perf_counter()
    noises = args.noises.split(",")
    cells = [run_cell(noise, float(cv), float(effect), args.campaigns, args.reply_campaigns,
                      args.seed, args.pairs_max)
             for noise in noises for cv in args.cvs.split(",")
             for effect in args.effects.split(",")]
    # A/A at CV = delta / 2 (0.5% for delta 1%): does "no change" come before pairs_max?
    if not args.no_half_delta:
        cells += [run_cell(noise, 0.005, 0.0, args.campaigns, 0, args.seed, args.pairs_max)
                  for noise in noises]
    elapsed = time.perf_counter() - started
    print(f"machine: {describe()}, numpy {np.__version__}")
    print(f"{args.campaigns} campaigns per cell ({args.reply_campaigns} whole replies per "
          f"cell), seed {args.seed}; run_pairs: 1 warm-up pair, k 5..{args.pairs_max}, delta 1%")
    print()
    print("| noise | CV % | effect % | lorelab called % | no change early % | pairs mean / p95 "
          "| 95% interval covers % | bias when called (pts) | in a whole reply (pts) "
          "| lkp 10 runs % | t 10 runs % | A/A whole reply % |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in cells:
        print(f"| {c.noise} | {100 * c.cv:g} | {100 * c.effect:g} | {_pct(c.called)} | "
              f"{_pct(c.no_change)} | {c.mean_pairs:.1f} / {c.p95_pairs:.0f} | "
              f"{_pct(c.coverage)} | {_points(c.bias_pct)} | {_points(c.reply_bias_pct)} | "
              f"{_pct(c.lkp)} | {_pct(c.student)} | {_pct(c.reply_alarms)} |")
    print()
    for label, ok in targets(cells):
        print(f"target {label}: {'met' if ok else 'MISSED'}")
    for line in false_alarm_errors(cells, args.campaigns, args.reply_campaigns):
        print(line)
    print(f"run time: {elapsed:.0f} s")
    return 0


def false_alarm_errors(cells: list[Cell], campaigns: int, replies: int) -> list[str]:
    """A/A rates pooled over the cells, and the worst cell in Monte Carlo standard errors above
    5%: a cell whose true rate is 5% shows more than 5% in half of the runs, so one figure above
    5% is evidence only when it is several standard errors above."""
    lines = []
    for label, rates, n in (
        ("main metric", [c.called for c in cells if c.effect == 0], campaigns),
        ("whole reply", [c.reply_alarms for c in cells if c.reply_alarms is not None], replies),
    ):
        if not rates or n < 1:
            continue
        pooled = float(np.mean(rates))
        se = math.sqrt(0.05 * 0.95 / n)
        worst = max(rates)
        lines.append(f"A/A {label}: {100 * pooled:.2f}% pooled over {len(rates)} cells "
                     f"(+-{100 * math.sqrt(pooled * (1 - pooled) / (n * len(rates))):.2f}); "
                     f"highest cell {100 * worst:.1f}% = 5% + {(worst - 0.05) / se:.1f} "
                     f"standard errors of {100 * se:.2f} points at {n} campaigns")
    return lines


def targets(cells: list[Cell]) -> list[tuple[str, bool]]:
    """The issue's targets, each over the cells that bear on it."""
    def pick(**where: object) -> list[Cell]:
        return [c for c in cells if all(math.isclose(getattr(c, k), v) if isinstance(v, float)
                                         else getattr(c, k) == v for k, v in where.items())]

    aa = pick(effect=0.0)
    checks = [
        ("main-metric A/A false alarms <= 5% in every cell",
         bool(aa) and all(c.called <= 0.05 for c in aa)),
        ("whole-reply A/A false alarms <= 5% in every cell",
         bool(aa) and all(c.reply_alarms is not None and c.reply_alarms <= 0.05 for c in aa)),
        ("5% at CV 2% found >= 95% with <= 8 pairs mean",
         bool(pick(cv=0.02, effect=0.05)) and all(c.called >= 0.95 and c.mean_pairs <= 8
                                                  for c in pick(cv=0.02, effect=0.05))),
        ("5% at CV 5% found >= 95% in <= 20 pairs mean",
         bool(pick(cv=0.05, effect=0.05)) and all(c.called >= 0.95 and c.mean_pairs <= 20
                                                  for c in pick(cv=0.05, effect=0.05))),
        ("+1% at CV 1% under drift found >= 85%",
         all(c.called >= 0.85 for c in pick(noise="drift", cv=0.01, effect=0.01))),
        ("coverage of the 95% interval >= 93% in every cell",
         all(c.coverage >= 0.93 for c in cells)),
    ]
    checks.append(("A/A at CV = delta/2 ends 'no change' before pairs_max in >= 80%",
                   all(c.no_change >= 0.80 for c in pick(cv=0.005, effect=0.0))))
    return checks


if __name__ == "__main__":
    raise SystemExit(main())
