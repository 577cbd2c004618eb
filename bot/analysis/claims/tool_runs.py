"""Runs of a tool's own output pasted under each kernel's heading, read into measurements.

    Without this change:                       1)Before:
        # hackbench process 10 1000 -s 100000  0.00user 13.78system 0:13.78elapsed 99%CPU
        Running in process mode with 10 ...    0.00user 5.59system 0:05.60elapsed 99%CPU
        Time: 4.401                            ...
                                               2)After
        # hackbench process 10 1000 -s 100000  0.00user 1.10system 0:01.10elapsed 99%CPU
        ...                                    ...
        Time: 4.470

    With this change:                          timings on 3.11-rc7, clean, THP on:
        ...                                    real    22m50.904s
        Time: 3.782                            ...

Each tool prints one result line per run: hackbench `Time: 4.401` (seconds), GNU time's one-line
summary (`0.00user 13.78system 0:13.78elapsed 99%CPU`: user, system and elapsed seconds; the CPU
share is no result), the `time` builtin's `real`/`user`/`sys` lines, and bcc funclatency's
`avg = 410 nsecs, total: ..., count: 4096` (the mean of the calls traced: one value, not runs),
and perf stat's `6.5681 +- 0.0225 seconds time elapsed ( +- 0.34% )` with the `-r N` of its
command in the block (the mean of N runs and its error: per-run CV 0.34% times sqrt(N)).
The lines between them (the command, the tool's banner, a histogram) are skipped. A heading is a
side's name on a line of its own, after a list mark or not, with or without a colon (`1)Before:`,
`2)After`, `Without this change:`), or followed by a remark that holds no number (`Without
series: the sane sendmsg() needs to wait gc unreasonably.`), or a sentence ending in a colon
whose words name one side only (`the timings with my modified kernel, THP on:`, `on 3.11-rc7,
clean, THP on:`). A side's block ends at the next heading, at two blank lines, or at a blank
line followed by prose no further indented than the heading. Two headings of opposite sides in
a row make a pair, whichever comes first; every run is a sample (Imran Khan's hackbench,
linux-mm 2021; Kirill Tkhai's drop_caches timings, 2018; Alex Thorlton's THP faults, 2013;
Kuniyuki Iwashima's sendmsg latencies, netdev 2023: each read as nothing before).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bot.analysis.claims.measurement import Measurement, cv_pct
from bot.analysis.claims.numbers import Budget, minutes_seconds, normalize_text, to_float
from bot.analysis.claims.sections import perf_elapsed
from bot.analysis.claims.side_pairs import Found, pair_sides, scan_sides
from bot.analysis.claims.statements import perf_repeat, side_of_label
from bot.analysis.claims.text import Block, BodyLine

_LABEL = re.compile(r"^\s*(?:\d{1,2}[.)]\s*|[-*]\s+)?(?P<label>[A-Za-z][\w/ .+-]{0,40}?)\s*:?\s*$")
# "Without series: the sane sendmsg() needs to wait gc unreasonably." (a remark, no value)
_REMARKED = re.compile(r"^\s*(?P<label>[A-Za-z][\w/ .+-]{0,30}?):\s+(?=[A-Za-z])[^\d]*$")
_SENTENCE_BEFORE = re.compile(
    r"\b(?:without|before|vanilla|unpatched|baseline|clean|mainline|stock|original|unmodified)\b",
    re.IGNORECASE,
)
_SENTENCE_AFTER = re.compile(r"\b(?:with|patched|modified|after)\b", re.IGNORECASE)
_HACKBENCH = re.compile(r"^\s*Time:\s*(?P<time>\d+(?:\.\d+)?)\s*$")
_GNU_TIME = re.compile(
    r"^\s*(?P<user>\d+(?:\.\d+)?)user\s+(?P<system>\d+(?:\.\d+)?)system\s+"
    r"(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)elapsed\b"
)
# bcc's funclatency summary: "avg = 410 nsecs, total: 1680510 nsecs, count: 4096"
_FUNCLATENCY = re.compile(r"^\s*avg\s*=\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[num])secs\b")
_TIME_BUILTIN = re.compile(
    r"^\s*(?P<name>real|user|sys)\s+(?P<value>\d+m\d+(?:\.\d+)?s|\d+\.\d+)\s*$"
)
_Runs = dict[tuple[str, str], list[float]]  # (metric, unit) -> one value a run
_LONGEST_LINE = 300
_BLOCK_LINES = 80  # lines a side's runs span at most


@dataclass(frozen=True)
class _Read:
    """What a side's block holds: runs by metric, and perf stat's summary of its repeats."""

    runs: _Runs
    summaries: dict[str, tuple[float, float]]  # metric -> (mean, +- of the mean in percent)
    repeat: int | None  # perf stat's -r N in the block


@dataclass(frozen=True)
class _Side:
    side: str  # "before" or "after"
    label: str
    read: _Read
    lines: tuple[BodyLine, ...]


def find_tool_runs(block: Block, budget: Budget) -> list[Found]:
    """(measurements, lines, (before, after) labels) for every pair of sides' runs."""

    def read(lines: Sequence[BodyLine], i: int) -> tuple[_Side | None, int] | None:
        heading = _heading(lines[i].text)
        if heading is None:
            return None
        read, end = _block(lines, i)
        found = read.runs or read.summaries
        return (_Side(*heading, read, tuple(lines[i:end])) if found else None), end

    return pair_sides(scan_sides(block.lines, budget, read), _compare)


def _heading(text: str) -> tuple[str, str] | None:
    """(side, label) of a line that names one kernel, or None."""
    text = normalize_text(text)
    if len(text) > _LONGEST_LINE:
        return None
    short = _LABEL.match(text) or _REMARKED.match(text)
    side = side_of_label(short.group("label")) if short else None
    if short and side:
        return side, short.group("label").strip()
    stripped = text.strip()
    if not stripped.endswith(":") or len(stripped) > 160:
        return None
    before, after = _SENTENCE_BEFORE.search(stripped), _SENTENCE_AFTER.search(stripped)
    if bool(before) == bool(after):
        return None  # "numbers with and without this change": both, or neither
    return ("before" if before else "after"), stripped.rstrip(":").strip()


def _block(lines: Sequence[BodyLine], i: int) -> tuple[_Read, int]:
    """The tool's result lines under heading `i`, and the index after the block."""
    indent = len(lines[i].text) - len(lines[i].text.lstrip())
    runs: _Runs = {}
    summaries: dict[str, tuple[float, float]] = {}
    repeat: int | None = None
    end = j = i + 1
    blanks = 0
    while j < len(lines) and j - i <= _BLOCK_LINES:
        text = normalize_text(lines[j].text)
        if not text.strip():
            blanks += 1
            if blanks == 2:
                break
            j += 1
            continue
        if _heading(text) is not None:
            break
        results = _results(text)
        summary = perf_elapsed(text)
        if blanks and not (results or summary) and len(text) - len(text.lstrip()) <= indent:
            break  # prose after the block
        blanks = 0
        for name, value, unit in results:
            runs.setdefault((name, unit), []).append(value)
        if summary:
            summaries.setdefault("seconds time elapsed", summary)
        repeat = perf_repeat(text) or repeat
        if results or summary:
            end = j + 1
        j += 1
    return _Read(runs, summaries, repeat), end


def _results(text: str) -> list[tuple[str, float, str]]:
    """(metric, value, unit) of one result line of a tool, or none."""
    if len(text) > _LONGEST_LINE:
        return []
    if match := _HACKBENCH.match(text):
        return [("Time", float(match.group("time")), "s")]
    if match := _GNU_TIME.match(text):
        elapsed = 3600 * int(match.group("h") or 0) + 60 * int(match.group("m"))
        return [("user", float(match.group("user")), "s"),
                ("system", float(match.group("system")), "s"),
                ("elapsed", elapsed + float(match.group("s")), "s")]  # fmt: skip
    if match := _TIME_BUILTIN.match(text):
        token = match.group("value")
        value = minutes_seconds(token) if token.endswith("s") else to_float(token)
        return [(match.group("name"), value, "s")] if value is not None else []
    if match := _FUNCLATENCY.match(text):
        return [("avg latency", float(match.group("value")), match.group("unit") + "s")]
    return []


def _compare(before: _Side, after: _Side) -> list[Measurement]:
    measurements = [_summarised(name, before, after) for name in before.read.summaries
                    if name in after.read.summaries]  # fmt: skip
    for (name, unit), base in before.read.runs.items():
        patched = after.read.runs.get((name, unit))
        if not patched:
            continue
        runs = len(base) >= 2 and len(patched) >= 2
        measurements.append(Measurement(
            metric=name, base=statistics.fmean(base), patched=statistics.fmean(patched),
            unit=unit, n_base=len(base) if runs else None, n_patched=len(patched) if runs else None,
            cv_base_pct=cv_pct(tuple(base)) if runs else None,
            cv_patched_pct=cv_pct(tuple(patched)) if runs else None,
            spread_source="samples" if runs else None, higher_is_better=False,
            samples_base=tuple(base) if runs else (),
            samples_patched=tuple(patched) if runs else (),
            base_label=before.label, patched_label=after.label, line=after.lines[-1],
        ))  # fmt: skip
    return measurements


def _summarised(name: str, before: _Side, after: _Side) -> Measurement:
    """perf stat's summary on each side: the mean of -r N runs, and the error of that mean in
    percent of it, so that the per-run CV is that times sqrt(N) (docs/claims.md, perf stat)."""
    base, base_pct = before.read.summaries[name]
    patched, patched_pct = after.read.summaries[name]
    n_base, n_patched = before.read.repeat, after.read.repeat
    known = n_base is not None and n_patched is not None
    return Measurement(
        metric=name, base=base, patched=patched, unit="s", n_base=n_base, n_patched=n_patched,
        cv_base_pct=base_pct * math.sqrt(n_base) if known and n_base else None,
        cv_patched_pct=patched_pct * math.sqrt(n_patched) if known and n_patched else None,
        spread_source="perf stat +- (sem)" if known else None, higher_is_better=False,
        base_label=before.label, patched_label=after.label, line=after.lines[-1],
    )  # fmt: skip
