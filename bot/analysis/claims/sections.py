"""Tool output pasted once per kernel, read into measurements by pairing the same metric across
the pastes: perf stat, kernbench, fio, stress-ng, and "name: mean ± sd" summaries.

Each paste is a *section*: it starts at the tool's own heading (perf stat's "Performance counter
stats for '...' (10 runs):", kernbench's "Average Optimal load -j 16 Run (std deviation):",
fio's "job: (groupid=0, jobs=1): ...", stress-ng's "stressor  bogo ops ..." line) or at a line
naming the kernel ("Before:", "v6.8-rc1 + this series:"). Sections of the same kind are paired in
body order, the first the base (or the one a "before"/"base" word names); every metric printed in
both becomes a measurement.

What each tool's numbers mean:
- perf stat -r N: the value is the mean of N runs and "( +- x% )" the standard error of that mean
  relative to it, so the per-run CV is x * sqrt(N); "+- y seconds" is that error in the unit.
- kernbench: "Elapsed Time 93.34 (0.51)" is the mean and, in brackets, the standard deviation
  over the runs of that load (the heading says "std deviation").
- fio: one run; "avg=..., stdev=..." of a latency is the spread over I/Os, not over runs, so it
  is no run-to-run spread; IOPS/BW are rates (higher is better), clat/lat times (lower).
- stress-ng --metrics: bogo ops/s of one run per stressor (higher is better).
- "name: 12345 ± 120 (n=10)": mean ± standard deviation over n runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.analysis.claims.benchmarks import higher_is_better, metric_higher_is_better
from bot.analysis.claims.measurement import Measurement
from bot.analysis.claims.numbers import NUMBER, SCALE, Budget, normalize_text, to_float
from bot.analysis.claims.statements import side_of_label
from bot.analysis.claims.text import Block, BodyLine

_PERF_HEAD = re.compile(
    r"Performance counter stats for (?P<command>.*?)\s*(?:\((\d+) runs\))?:?\s*$"
)
_PERF_ROW = re.compile(
    rf"^\s*(?P<v>{NUMBER})\s+(?:\+-\s+(?P<err>{NUMBER})\s+)?(?P<unit>msec|seconds|sec)?\s*"
    rf"(?P<name>time elapsed|user|sys|[A-Za-z][\w\-:./]*)\s*(?:#[^(]*)?"
    rf"(?:\(\s*\+-\s*(?P<sem>{NUMBER})\s*%\s*\))?\s*(?:\(\d+\.\d+%\))?\s*$"
)
_KERNBENCH_HEAD = re.compile(r"^\s*Average\s+(.*?load.*?Run)\s*\(std deviation\):?\s*$", re.I)
_KERNBENCH_ROW = re.compile(
    rf"^\s*(?P<name>[A-Z][A-Za-z ]+?)\s+(?P<v>{NUMBER})\s+\((?P<sd>{NUMBER})\)\s*$"
)
_FIO_HEAD = re.compile(r"^\s*(\S+): \(groupid=\d+, jobs=\d+\)")
_FIO_RATE = re.compile(
    rf"^\s*(?P<dir>read|write|trim)\s*:\s*IOPS=(?P<iops>{NUMBER})(?P<k>[kKM]?),\s*BW=(?P<bw>{NUMBER})"
    r"(?P<bwu>[KMG]i?B/s)"
)
_FIO_LAT = re.compile(
    rf"^\s*(?P<kind>s?c?lat)\s+\((?P<u>[nmu]sec)\):\s*min=\s*{NUMBER}[kK]?,\s*max=\s*{NUMBER}[kK]?,"
    rf"\s*avg=\s*(?P<avg>{NUMBER}),\s*stdev=\s*(?P<sd>{NUMBER})"
)
_STRESS_HEAD = re.compile(r"stressor\s+bogo ops\s+real time")
_STRESS_ROW = re.compile(
    rf"^stress-ng:\s+(?:info|metrc):\s+\[\d+\]\s+(?P<name>[\w-]+)\s+(?P<ops>{NUMBER})\s+"
    rf"{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+(?P<rt>{NUMBER})\s+(?P<ut>{NUMBER})"
)
_MEAN_SD = re.compile(
    rf"^\s*(?P<name>[A-Za-z][\w .()/%-]*?)\s*[:=]\s*(?P<v>{NUMBER})\s*(?:\+/-|\+-|±)\s*"
    rf"(?P<sd>{NUMBER})\s*(?P<pct>%)?\s*(?P<unit>[A-Za-z/µ]+)?\s*"
    r"(?:\(\s*n\s*=\s*(?P<n>\d+)\s*\)|,?\s*(?P<n2>\d+)\s+runs)?\s*$"
)
_LABELLED_PERF = re.compile(
    r"^\s*(?P<label>[A-Za-z0-9][\w.+/ -]{0,40}?)\s*:\s+(?P<row>\S.*time elapsed.*)$"
)
_SIDE_LINE = re.compile(
    r"^\s*(?:\[)?(?P<label>[\w.+/ -]{1,60}?)\s*(?:\])?\s*:\s*$"
    # "== original, no patched" (Xunlei Pang), "== patched with patch1~4 =="
    r"|^\s*==+\s*(?P<ruled>[\w.+/ ,~-]{1,60}?)\s*(?:==+)?\s*$"
)


@dataclass
class _Record:
    value: float
    line: BodyLine
    unit: str | None = None
    sd: float | None = None  # per-run standard deviation, in the unit
    cv: float | None = None  # per-run CV in percent
    n: int | None = None
    source: str | None = None
    higher: bool | None = None
    sem: float | None = None  # perf stat's "( +- x% )": the mean's standard error, percent


@dataclass
class _Section:
    kind: str
    label: str
    n: int | None
    command: str = ""  # what perf stat measured: only pastes of one command are compared
    lines: list[BodyLine] = field(default_factory=list)
    records: dict[str, _Record] = field(default_factory=dict)


def find_tool_sections(
    block: Block, runs_at: Callable[[int], int | None], budget: Budget
) -> list[tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, ...]]]:
    """(measurements, lines, kernel labels) for each pair of same-kind sections in the block;
    `runs_at(line number)` is the run count the text states above a line, for the tools that
    print none (perf stat's summary line without its "(10 runs)" heading)."""
    sections: list[_Section] = []
    pending_label: str | None = None
    current: _Section | None = None
    for line in block.lines:
        budget.charge()
        text = normalize_text(line.text)
        if not text.strip() or len(text) > 2000:
            continue
        head = _heading(text, pending_label or _repeated_side(sections, text))
        if head is not None:
            current = head
            current.lines.append(line)
            sections.append(current)
            pending_label = None
            continue
        labelled = _LABELLED_PERF.match(text)
        if labelled and _PERF_ROW.match(labelled.group("row")):
            # "mm-unstable:   146.88 +- 6.54 seconds time elapsed  ( +-  4.45% )": perf stat's
            # summary under a kernel's name; two such lines in a row are one comparison.
            previous = sections[-1] if sections else None
            paired = (previous is not None and previous.kind.startswith("perf stat line")
                      and len(previous.lines) == 1 and previous.label != labelled.group("label")
                      and line.number - previous.lines[0].number <= 2
                      and sum(s.kind == previous.kind for s in sections) == 1)  # fmt: skip
            kind = previous.kind if paired and previous else f"perf stat line {len(sections)}"
            current = _Section(kind, labelled.group("label").strip(), None)
            probe = _Section("perf stat", current.label, None)
            parsed = _record(labelled.group("row"), line, probe)
            if parsed is not None:
                current.records[parsed[0]] = parsed[1]
                current.lines.append(line)
                sections.append(current)
            current = None
            continue
        side = _SIDE_LINE.match(text)
        label = (side.group("label") or side.group("ruled")) if side else ""
        if side and (side_of_label(label) is not None
                     or re.search(r"\d\.\d|-rc\d|kernel|patch", label, re.I)):  # fmt: skip
            pending_label = label.strip()
            current = None
            continue
        parsed = _record(text, line, current)
        if parsed is None:
            continue
        name, record = parsed
        if current is None or name in current.records:
            current = _Section("mean-sd", pending_label or f"#{len(sections) + 1}", None)
            sections.append(current)
            pending_label = None
        current.records.setdefault(name, record)
        current.lines.append(line)
    return _pair(sections, runs_at)


def _repeated_side(sections: Sequence[_Section], text: str) -> str | None:
    """The side's label a tool's paste repeats under: three perf stat runs under "with this
    patchset:" are all the patched kernel's, until another side is named."""
    previous = sections[-1] if sections else None
    kind = _heading(text, None)
    if previous is None or kind is None or previous.kind != kind.kind:
        return None
    return previous.label if side_of_label(previous.label) else None


def _heading(text: str, label: str | None) -> _Section | None:
    if m := _PERF_HEAD.search(text):
        return _Section("perf stat", label or "", int(m.group(2)) if m.group(2) else None,
                        command=m.group("command"))
    if m := _KERNBENCH_HEAD.match(text):
        return _Section(f"kernbench {m.group(1)}", label or "", None)
    if _FIO_HEAD.match(text):
        return _Section("fio", label or "", 1)
    if _STRESS_HEAD.search(text):
        return _Section("stress-ng", label or "", 1)
    return None


def perf_elapsed(text: str) -> tuple[float, float] | None:
    """perf stat's summary of its runs, `6.5681 +- 0.0225 seconds time elapsed ( +- 0.34% )`:
    the mean and its error in percent of it; None for any other line."""
    m = _PERF_ROW.match(text)
    if not m or m.group("name") != "time elapsed" or m.group("unit") not in ("seconds", "sec"):
        return None
    value, sem = to_float(m.group("v")), to_float(m.group("sem") or "")
    return None if value is None or sem is None else (value, sem)


def _record(text: str, line: BodyLine, section: _Section | None) -> tuple[str, _Record] | None:
    kind = section.kind if section else ""
    if kind == "perf stat" and (m := _PERF_ROW.match(text)):
        value = to_float(m.group("v"))
        if value is None:
            return None
        n = section.n if section else None
        sem = to_float(m.group("sem")) if m.group("sem") else None
        cv = sem * math.sqrt(n) if sem is not None and n else None
        unit = m.group("unit")
        name = m.group("name").strip()
        if unit in ("seconds", "sec"):
            name = f"seconds {name}"  # perf's own words: "seconds time elapsed", "seconds user"
        higher = False if unit else None
        return name, _Record(value, line, unit, None, cv, n, "perf stat +- (sem)", higher, sem)
    if kind.startswith("kernbench") and (m := _KERNBENCH_ROW.match(text)):
        value, sd = to_float(m.group("v")), to_float(m.group("sd"))
        if value is None:
            return None
        name = m.group("name").strip()
        cv = 100.0 * sd / value if sd is not None and value else None
        return name, _Record(value, line, None, sd, cv, None, "kernbench std deviation",
                             metric_higher_is_better(name))  # fmt: skip
    if kind == "fio":
        if m := _FIO_RATE.match(text):
            scale = SCALE.get(m.group("k"), 1.0)
            iops = (to_float(m.group("iops")) or 0.0) * scale
            return f"{m.group('dir')} IOPS", _Record(iops, line, "IOPS", n=1, higher=True)
        if m := _FIO_LAT.match(text):
            avg = to_float(m.group("avg"))
            if avg is None:
                return None
            return f"{m.group('kind')} avg ({m.group('u')})", _Record(
                avg, line, m.group("u"), n=1, higher=False
            )
    if kind == "stress-ng" and (m := _STRESS_ROW.match(text)):
        rate = to_float(m.group("rt"))
        if rate is None:
            return None
        return f"{m.group('name')} bogo ops/s", _Record(rate, line, "bogo ops/s", n=1, higher=True)
    if m := _MEAN_SD.match(text):
        value, sd = to_float(m.group("v")), to_float(m.group("sd"))
        if value is None or sd is None or side_of_label(m.group("name")) is not None:
            return None
        n_text = m.group("n") or m.group("n2")
        cv = sd if m.group("pct") else (100.0 * sd / value if value else None)
        unit = m.group("unit")
        name = m.group("name").strip()
        return name, _Record(value, line, unit, None if m.group("pct") else sd, cv,
                             int(n_text) if n_text else None, "mean ± sd",
                             metric_higher_is_better(name, unit))  # fmt: skip
    return None


def _pair(
    sections: Sequence[_Section], runs_at: Callable[[int], int | None]
) -> list[tuple[list[Measurement], tuple[BodyLine, ...], tuple[str, ...]]]:
    by_kind: dict[tuple[str, str], list[_Section]] = {}
    for section in sections:
        if section.records:
            by_kind.setdefault((section.kind, section.command), []).append(section)
    found = []
    for group in by_kind.values():
        if len(group) < 2:
            continue
        for base, other in _pairs(group):
            runs = runs_at(base.lines[0].number) if base.lines else None
            measurements = [
                _measurement(name, base, other, runs)
                for name in base.records
                if name in other.records
            ]
            lines = tuple(sorted(base.lines + other.lines, key=lambda ln: ln.number))
            found.append((measurements, lines, (base.label or "base", other.label or "patched")))
    return found


def _pairs(group: Sequence[_Section]) -> list[tuple[_Section, _Section]]:
    """Which paste is compared with which: the i-th of the kernel before with the i-th of the
    patched one when the labels name both sides as often, the first before with each patched
    one when not; with no sides named, the first with each other one."""
    before = [s for s in group if side_of_label(s.label) == "before"]
    after = [s for s in group if side_of_label(s.label) == "after"]
    if before and len(before) == len(after):
        return list(zip(before, after, strict=True))
    if before and after:  # never one paste of the kernel before against another
        return [(before[0], other) for other in after]
    ordered = sorted(group, key=lambda s: side_of_label(s.label) == "after")
    return [(ordered[0], other) for other in ordered[1:]]


def _measurement(name: str, base: _Section, other: _Section, runs: int | None) -> Measurement:
    a, b = base.records[name], other.records[name]
    unit = a.unit or b.unit
    n_base, n_patched = a.n or base.n or runs, b.n or other.n or runs
    # perf stat's relative standard error of the mean, with the run count the text states
    cv_a = a.cv if a.cv is not None or a.sem is None or not n_base else a.sem * math.sqrt(n_base)
    cv_b = b.cv if b.cv is not None or b.sem is None or not n_patched else (
        b.sem * math.sqrt(n_patched))
    higher = a.higher if a.higher is not None else higher_is_better(unit)
    return Measurement(
        metric=name,
        base=a.value,
        patched=b.value,
        unit=unit,
        n_base=n_base,
        n_patched=n_patched,
        cv_base_pct=cv_a,
        cv_patched_pct=cv_b,
        spread_source=a.source if cv_a is not None or cv_b is not None else None,
        higher_is_better=higher,
        base_label=base.label or "base",
        patched_label=other.label or "patched",
        line=b.line,
    )
