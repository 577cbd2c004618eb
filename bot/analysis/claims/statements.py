"""Claims stated in words and lines rather than tables: run counts ("Average result of 18 test
runs"), before/after lines ("Before: 44017.78 Ops/sec" over "After: 44687.08 Ops/sec (+1.5%)"),
"from X to Y" changes, and percentages in sentences that speak of performance."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.analysis.claims.benchmarks import named_before
from bot.analysis.claims.model import StatedChange
from bot.analysis.claims.numbers import normalize_text, to_float
from bot.analysis.claims.text import Block, BodyLine, Sentence

# --------------------------------------------------------------------------------------------
# Run counts

# perf stat's repeat count: "--repeat 10", "perf stat -r 5 ..."
_PERF_REPEAT = re.compile(r"--repeat[= ]\s*(\d+)\b|\bperf stat\b.*?\s-r\s*(\d+)\b")
_RUNS = [
    re.compile(
        r"\b(\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?:test\s+|benchmark\s+)?"
        r"(?:runs|iterations|trials|repetitions|rounds)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:measured|mesured|run|ran|repeated|executed|tested)\s+(\d+)\s+times\b", re.IGNORECASE
    ),
    re.compile(r"\b(\d+)\s+times\s+(?:each|per\s+\w+|average[ds]?|avg|mean)\b", re.IGNORECASE),
    # "I ran some kernel building tests for 5 times" (Nhat Pham)
    re.compile(r"\b(?:tests?|runs?|benchmarks?)\s+(?:for\s+)?(\d+)\s+times\b", re.IGNORECASE),
    re.compile(r"\b(?:averag\w*|avg|mean)\s+(?:of|over)\s+(\d+)\b", re.IGNORECASE),
    # "12 test run for each case" (Kairui Song): the singular, when "each" or "per" follows
    re.compile(
        r"\b(\d+)\s+(?:test\s+|benchmark\s+)?run\s+(?:for\s+)?(?:each|per)\b", re.IGNORECASE
    ),
    re.compile(r"\bn\s*=\s*(\d+)\b"),
    # "(36 samples each)" (Kairui Song); a profile's "10K samples" is no run count
    re.compile(r"\b(\d+)\s+samples\s+(?:each|per\b|for\s+each)", re.IGNORECASE),
    _PERF_REPEAT,
    re.compile(r"\bnumber of (?:runs|iterations|repetitions)\s*[:=]?\s*(\d+)\b", re.IGNORECASE),
    # "aggregated over 50 consecutive defconfig builds" (Johannes Weiner)
    re.compile(r"\b(\d+)\s+(?:consecutive\s+)?(?:[\w-]+\s+)?(?:builds|boots|reboots)\b",
               re.IGNORECASE),
]


@dataclass(frozen=True)
class RunCount:
    runs: int
    line: BodyLine


def find_run_counts(block: Block) -> list[RunCount]:
    """Every run count stated in the block, at most one a line."""
    found = []
    for line in block.lines:
        for pattern in _RUNS:
            match = pattern.search(line.text)
            count = next(g for g in match.groups() if g).lower() if match else "0"
            runs = int(_NUMBER_WORDS.get(count, 0) or count)
            if 2 <= runs <= 10000:
                found.append(RunCount(runs, line))
                break
    return found


def perf_repeat(text: str) -> int | None:
    """The runs a perf stat command line asks for (`perf stat -r 5 ...`), or None."""
    match = _PERF_REPEAT.search(text)
    return int(match.group(1) or match.group(2)) if match else None


def runs_for(line_number: int, counts: Sequence[RunCount]) -> RunCount | None:
    """The run count stated nearest before the claim in its block, else the first after it."""
    before = [c for c in counts if c.line.number <= line_number]
    if before:
        return before[-1]
    return counts[0] if counts else None


# --------------------------------------------------------------------------------------------
# Before/after lines and "from X to Y"

_BEFORE_WORDS = {
    "before", "base", "baseline", "vanilla", "unpatched", "old", "orig", "origin", "original",
    "without",
    "w/o", "mainline", "upstream", "stock", "unmodified", "pre-patch", "prepatch", "default",
}  # fmt: skip
_AFTER_WORDS = {
    "after", "patched", "patch", "new", "with", "w/", "this", "post-patch", "postpatch",
    "modified", "series", "+patch", "optimized", "fixed",
}  # fmt: skip
NUMBER = r"(?:\d{1,3}(?:\.\d{3})+,\d+|\d[\d,]*(?:\.\d+)?)"  # "1.234.567,5" first
_BA_LINE = re.compile(
    rf"^\s*[-*]?\s*(?P<label>w/o|w/|[A-Za-z][\w.+/-]*(?:[ \t]+(?:patch|kernel|the patch|"
    rf"\(.*?\)|(?=[\w.+-]*[A-Za-z])[\w.+-]+))?)\s*(?::|=|\s)\s*(?P<value>{NUMBER})\s*"
    rf"(?P<unit>[A-Za-z][\w/.-]*)?"
    rf"(?P<rest>.*)$"
)
_VERSION_WORD = re.compile(r"^v?\d+\.\d+(?:\.\d+)?(?:-rc\d+)?$")
# "thp swp throughput w/o patch: 2734bytes/ms" (Barry Song): a metric, then the side
_METRIC_SIDE_LINE = re.compile(
    rf"^\s*[-*]?\s*(?P<metric>[A-Za-z][\w.+/()-]*(?: [A-Za-z][\w.+/()-]*){{0,4}})\s+"
    rf"(?P<label>w/o|w/|without|with|before|after)\s*(?:the\s+)?(?:patch(?:es|set)?|series|"
    rf"change)\s*:\s*(?P<value>{NUMBER})\s*(?P<unit>[A-Za-z][\w/.-]*)?(?P<rest>.*)$",
    re.IGNORECASE,
)
# What follows a kernel's version rather than a value: "6.16-rc4", "6.8.0", "6.1-next"
_VERSION_GOES_ON = re.compile(r"^(?:-rc\d|\.\d|-next\b|-mm\b|\+)")
_PCT_IN_PARENS = re.compile(r"\(\s*([-+]?\d+(?:\.\d+)?)\s*%\s*\)|([-+]\d+(?:\.\d+)?)\s*%")
# "about", "around", "~" before a figure hedge it; the figure is still the one compared.
_ABOUT = r"(?:(?:about|around|approx\.?|approximately|roughly|nearly|~)\s*)?"
FROM_TO = re.compile(
    rf"\bfrom\s+{_ABOUT}(?P<a>{NUMBER})\s*(?P<ua>[A-Za-z][\w/.-]*)?\s+to\s+{_ABOUT}"
    rf"(?P<b>{NUMBER})\s*"
    rf"(?P<ub>[A-Za-z][\w/.-]*)?|(?P<a2>{NUMBER})\s*(?P<ua2>[A-Za-z][\w/.-]*)?\s*(?:->|→|=>)\s*"
    rf"(?P<b2>{NUMBER})\s*(?P<ub2>[A-Za-z][\w/.-]*)?"
    rf"|(?P<a3>{NUMBER})\s*(?P<ua3>[A-Za-z][\w/.-]*)?\s+(?:vs\.?|versus)\s+"
    rf"(?P<b3>{NUMBER})\s*(?P<ub3>[A-Za-z][\w/.-]*)?"
)


@dataclass(frozen=True)
class LabelledValue:
    """One side of a before/after pair: "After:  44687.08 Ops/sec (+1.5%)"."""

    line: BodyLine
    side: str  # "before" or "after"
    label: str
    value: float
    unit: str | None
    stated_pct: float | None
    sd: float | None = None  # "± 120" after the value: a standard deviation over the runs
    n: int | None = None  # "(n=10)" or "10 runs" on the line
    metric: str | None = None  # what the line names before its side ("throughput w/o patch:")


def parse_number(text: str) -> float:
    """A number as written in a claim, thousands separators allowed ("44,017.78")."""
    value = to_float(text)
    return value if value is not None else float(text.replace(",", ""))


_SD_AFTER = re.compile(rf"^\s*(?:±|\+-|\+/-)\s*(?P<sd>{NUMBER})\s*(?P<unit>[A-Za-z][\w/.-]*)?")
_N_ON_LINE = re.compile(r"\bn\s*=\s*(\d+)|\b(\d+)\s+(?:runs|iterations|trials)\b", re.IGNORECASE)


def side_of_label(label: str) -> str | None:
    """ "before" or "after" when a label's first word names a side ("Before", "w/ patch")."""
    words = label.lower().replace(":", " ").split()
    if len(words) > 1 and _VERSION_WORD.match(words[0]):
        words = words[1:]  # "5.6 vanilla", "5.6 w/ this patch": the kernel's version first
    if not words:
        return None
    first = words[0].rstrip(",;")  # "original, no patched"
    return "before" if first in _BEFORE_WORDS else "after" if first in _AFTER_WORDS else None


def _labelled_value(line: BodyLine) -> LabelledValue | None:
    if len(line.text) > 500:
        return None
    text = normalize_text(line.text)
    match = _BA_LINE.match(text)
    first = match.group("label").strip().lower().split()[0] if match else ""
    if first not in _BEFORE_WORDS and first not in _AFTER_WORDS:
        match = _METRIC_SIDE_LINE.match(text)  # "thp swp throughput w/o patch: 2734bytes/ms"
        if not match:
            return None
        first = match.group("label").lower()
    label = match.group("label").strip()
    side = "before" if first in _BEFORE_WORDS else "after"
    rest = match.group("rest") or ""
    if _VERSION_GOES_ON.match(rest):
        return None  # "base  6.16-rc4 + 1-9 patches": a kernel's version, not a result
    if re.match(r"\s*[-+]?\d", rest):
        return None  # "Base  9504218.56  357366.84": a row of a table, one value a column
    # A sentence ("with 16 threads on ...") is not a result line.
    if len(re.findall(r"[A-Za-z]{3,}", rest)) > 3:
        return None
    unit = match.group("unit")
    sd = None
    if spread := _SD_AFTER.match(rest):
        sd = to_float(spread.group("sd"))
        unit = unit or spread.group("unit")
        rest = rest[spread.end() :]
    pct = _PCT_IN_PARENS.search(rest)
    stated = None
    if pct:
        stated = float(pct.group(1) or pct.group(2))
    runs = _N_ON_LINE.search(rest)
    n = int(runs.group(1) or runs.group(2)) if runs else None
    metric = match.groupdict().get("metric")
    return LabelledValue(
        line, side, label.rstrip(":"), parse_number(match.group("value")), unit, stated, sd, n,
        metric,
    )


def before_after_pairs(block: Block, skip: set[int]) -> list[tuple[LabelledValue, LabelledValue]]:
    """A "before" line followed within three lines by an "after" line in the same unit."""
    values = []
    for line in block.lines:
        if line.number in skip or not line.text.strip():
            continue
        values.append(_labelled_value(line))
    pairs = []
    i = 0
    while i < len(values) - 1:
        first, second = values[i], values[i + 1]
        if (
            first
            and second
            and first.side == "before"
            and second.side == "after"
            and second.line.number - first.line.number <= 3
            and (not first.unit or not second.unit or first.unit.lower() == second.unit.lower())
        ):
            pairs.append((first, second))
            i += 2
            continue
        i += 1
    return pairs


# --------------------------------------------------------------------------------------------
# Percentages in sentences

_PERCENT = re.compile(
    r"(?<![\w.])(?P<lo>[-+]?\d+(?:\.\d+)?)\s?%?(?:\s?[-–~]\s?|\s+to\s+~?)(?P<hi>\d+(?:\.\d+)?)\s*%"
    r"|\bbetween\s+(?P<lo2>[-+]?\d+(?:\.\d+)?)\s*%?\s+and\s+(?P<hi2>[-+]?\d+(?:\.\d+)?)\s*%"
    r"|(?<![\w.])(?P<one>[-+]?\d+(?:\.\d+)?)\s*%"
)
_IMPROVEMENT = re.compile(
    r"\b(?:improv\w*|gain\w*|faster|speed-?ups?|boost\w*|better|increas\w*|higher throughput)\b",
    re.IGNORECASE,
)
# The words that say a change is for the better on their own; "increase" is not one of them.
_BETTER = re.compile(
    r"\b(?:improv\w*|gain\w*|faster|speed-?ups?|boost\w*|better|higher throughput)\b",
    re.IGNORECASE,
)
_ROSE = re.compile(
    r"\b(?:increas\w*|rise[ns]?|rose|rising|grew|grow[sn]?|growing|higher|rais(?:es|ed|ing))\b",
    re.IGNORECASE,
)
_OF_WHAT = re.compile(r"\s+(?:in|of)\s+(?:the\s+)?([\w -]{1,40})")
_REGRESSION = re.compile(
    r"\b(?:regress\w*|degrad\w*|degress\w*|slow(?:er|down|s down)|worse|loss(?:es)?|lose|lost|"
    r"overhead|penalty)\b",
    re.IGNORECASE,
)
# A drop of nothing named is a loss ("performance dropped 3%" names it: `_LESSENED` below).
_FELL = re.compile(r"\b(?:drops?|dropped|dropping)\b", re.IGNORECASE)
# A number made smaller, by the change or on its own: better for what is better lower (a
# latency, an overhead, a slowdown), worse for a throughput; and the reverse for a number that
# rose. What moved is the head of the verb's object ("reduces the throughput regression by 5%":
# the regression), else its subject ("the lock contention is reduced by 30%", "tail latency
# drops by 12%").
_LESSENED = re.compile(
    r"\b(?:reduc\w*|decreas\w*|lower(?:s|ed|ing)?|cuts?|cutting|eliminat\w*|halv\w*|"
    r"shr[iu]nk\w*|drops?|dropped|dropping|fell|falls?|falling)\b",
    re.IGNORECASE,
)
_LESS = re.compile(r"\b(?:less|fewer)\b", re.IGNORECASE)
# The word has no object ("is reduced by 30%", "dropped significantly from 10s to 8s").
_NO_OBJECT = re.compile(r"\s*(?:\w+ly\s+)?(?:(?:by|from|to|of|at|with)\b|\d|[-+~(,.;:]|$)", re.I)
_TO_WHERE = re.compile(r"\s*(?:\w+ly\s+)?(?:(?:down|up)\s+)?to\b", re.IGNORECASE)
_PASSIVE = re.compile(r"\b(?:is|are|was|were|been|be|being|gets?|got)\s+(?:\w+ly\s+)?$", re.I)
# An object ends at a preposition, a number or punctuation: "the overhead | of memcg charging".
_OBJECT_END = re.compile(
    r"\s(?:of|by|in|for|on|from|with|when|to|at|than|and|or)\b|\s[-+~]?\d|[,;:()]|\.(?:\s|$)",
    re.IGNORECASE,
)
PERFORMANCE = re.compile(
    r"\b(?:performance|throughput|latency|benchmark\w*|ops|runtime|run time|bandwidth|score|"
    r"speed|reduc\w*|decreas\w*)\b",
    re.IGNORECASE,
)


# "higher is better" explains a metric; it claims nothing.
_EXPLAINS = re.compile(r"\b(?:higher|lower|more|less|smaller|larger|bigger)\s+is\s+better\b", re.I)
# Clauses: a direction word speaks of the numbers of its own clause only.
_CLAUSE = re.compile(r"[;,]\s+|\s+(?:but|while|whereas|although|and)\s+", re.IGNORECASE)


def _direction(text: str) -> str | None:
    text = _EXPLAINS.sub(" ", text)
    # "an increase in memory usage" is no improvement: what moved says which it is
    moved = [(m.start(), m, fell) for pattern, fell in ((_LESSENED, True), (_ROSE, False),
                                                        (_LESS, True))
             if (m := pattern.search(text))]  # fmt: skip
    for _, word, fell in sorted(moved, key=lambda found: found[0]):
        higher = _moved(text, word, object_only=word.re is _LESS)
        if higher is not None:
            return "regression" if higher == fell else "improvement"
    better, worse = bool(_BETTER.search(text)), bool(_REGRESSION.search(text))
    worse = worse or bool(_FELL.search(text))  # a drop of nothing named is a loss
    if better == worse:
        return None
    return "improvement" if better else "regression"


def _moved(text: str, word: re.Match[str], *, object_only: bool = False) -> bool | None:
    """Whether the quantity a word of rise or fall speaks of is better higher; None if unnamed,
    or if the number is where it got to ("the regression is reduced to ~3.9%": still a loss).
    `object_only`: the quantity must follow the word ("10% less overhead"; "the overhead is
    less than 1%" is a level)."""
    if _TO_WHERE.match(text, word.end()):
        return None
    end = _OBJECT_END.search(text, word.end())
    phrase = text[word.end() : end.start() if end else len(text)]
    in_object = named_before(phrase, len(phrase))
    if object_only:
        return in_object
    subject = named_before(text, word.start())
    of_what = _OF_WHAT.match(text, word.end())  # "a 5% decrease in throughput"
    named = named_before(of_what.group(1), len(of_what.group(1))) if of_what else None
    if named is not None:
        return named
    if _NO_OBJECT.match(text, word.end()) or _PASSIVE.search(text, 0, word.start()):
        return subject
    return in_object if in_object is not None else subject


# The words that say which way a clause's numbers went, or that a clause has a verb of its own.
_VERB = re.compile(
    rf"{_LESSENED.pattern}|{_ROSE.pattern}|{_BETTER.pattern}|{_REGRESSION.pattern}|\b(?:is|are|"
    r"was|were|has|have|had|shows?|showed|gives?|gave|sees?|saw|got|gets?)\b",
    re.IGNORECASE,
)


# "Went from losses of around 2% to gains of around 1%": a figure named "a loss of" or "a gain
# of" right before it is that, whatever else its clause says.
_CHANGE_OF = re.compile(
    r"\b(?P<word>[A-Za-z-]+)\s+of\s+(?:of\s+)?(?:about|around|roughly|up\s+to|between|~)?\s*"
    r"[-+]?$",
    re.IGNORECASE,
)


def _change_of(before: str) -> str | None:
    """ "improvement" or "regression" when the words right before a figure name it one."""
    match = _CHANGE_OF.search(before)
    if match is None:
        return None
    word = match.group("word")
    better, worse = bool(_BETTER.fullmatch(word)), bool(_REGRESSION.fullmatch(word))
    return "improvement" if better and not worse else "regression" if worse else None


# "... it was between 7% and 21% regression though so it's still an improvement": the word
# right after a figure ("21% regression", "3% throughput improvement") says what it is.
_WORD_AFTER = re.compile(r"\s*(?:[A-Za-z-]+\s+)?(?P<word>[A-Za-z-]+)")
_COMPARATIVE = re.compile(r"less|more|fewer|lower|higher|smaller|larger|bigger", re.IGNORECASE)


def _change_after(text: str, end: int) -> str | None:
    """ "improvement" or "regression" when the word right after a figure names it one."""
    match = _WORD_AFTER.match(text, end)
    if match is None or text.startswith("/", match.end()):
        return None  # "+/- 30% performance gains/losses": either way
    first = text[match.start():match.end()].split()[0]
    if _COMPARATIVE.fullmatch(first):
        return None  # "10% less overhead": the overhead is what moved, not what the 10% is
    for word in (match.group("word"), first):
        better, worse = bool(_BETTER.fullmatch(word)), bool(_REGRESSION.fullmatch(word))
        if better != worse:
            return "improvement" if better else "regression"
    return None


def _clause_direction(sentence: str, start: int) -> str | None:
    """The direction the words of the clause holding position `start` give: "improved by 4%,
    but latency is 2% worse" is one improvement and one regression, not two of neither."""
    clauses = _clauses(sentence)
    k = bisect.bisect_right([lo for lo, _, _ in clauses], start) - 1
    if k < 0:
        return None
    lo, hi, verb = clauses[k]
    return _direction(f"{verb} {sentence[lo:hi]}" if verb else sentence[lo:hi])


@functools.lru_cache(maxsize=16)
def _clauses(sentence: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, borrowed verb) of each clause: a clause with no verb of its own has the last
    one before it ("reduces system CPU usage by 69% and total build time by 27%"). Cached: each
    percentage of a sentence asks for its clause."""
    bounds = [0, *[m.end() for m in _CLAUSE.finditer(sentence)], len(sentence) + 1]
    found, verb = [], ""
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        own = _VERB.search(sentence, lo, hi)
        found.append((lo, hi, "" if own else verb))
        verb = own.group(0) if own else verb
    return tuple(found)


def percentages(sentence: Sentence) -> list[StatedChange]:
    """The percentages of a sentence that speaks of performance, with the direction its words
    give; none for a row of numbers that only looks like a sentence."""
    if not (
        _IMPROVEMENT.search(sentence.text)
        or _REGRESSION.search(sentence.text)
        or _FELL.search(sentence.text)
        or PERFORMANCE.search(sentence.text)
    ):
        return []
    # Rows of numbers (compare-kernels output and the like) are tables, not sentences.
    words = len(re.findall(r"[A-Za-z]{3,}", sentence.text))
    if len(re.findall(NUMBER, sentence.text)) > 4 and words < 4:
        return []
    found = []
    text = normalize_text(sentence.text)
    for match in _PERCENT.finditer(text):
        before = text[max(0, match.start() - 40) : match.start()]
        if _INSIDE_INTERVAL.search(before[-30:]):
            continue  # the bounds of a stated interval are not changes
        if _PARAMETER_BEFORE.search(before) or _PARAMETER_AFTER.match(text, match.end()):
            continue  # "performance-process-100%-page_fault3", "nr_threads: 100%": a setting
        if _SETUP_AFTER.match(text, match.end()):
            continue  # "threads of 25%, 50% and 100% of number of CPUs": the size of a setup
        if (_PART_OF.match(text, match.end()) and not _OF_BASE.match(text, match.end())
                and not _BY_OR_OF.search(before)):
            continue  # "90% of the stalls are comparable": a share of something, not a change
        if _SPREAD_BEFORE.search(before):
            continue  # "(stddev < 1%)": the noise of the runs, not a change
        if _CONFIDENCE_AFTER.match(text, match.end()):
            continue  # "95% CI does not overlap", "at 95% confidence": a level of confidence
        if (match.group("one") is not None and _OF_BASE.match(text, match.end())
                and _TO_LEVEL.search(text, max(0, match.start() - 8), match.start())):
            found.append(_level(text, float(match.group("one")), match.start()))
            continue
        if (match.group("one") is not None and (_REACHED.search(before) or _SHARE.search(before))
                and not _A_CHANGE.search(before)):
            continue  # "contention dropped to 4%", "vanilla stays at 70%": a level, no change
        if (match.group("one") is None and _FROM.search(before)) or _FROM_TO.search(before):
            continue  # "lock contention rose from 2% to 33%": two levels, not a range of changes
        if match.group("one") is not None:
            low = high = float(match.group("one"))
        else:
            low, high = (float(match.group(g) or match.group(f"{g}2")) for g in ("lo", "hi"))
        # "between 7% and 21% regression": the clause of the range's end, past its "and"
        at = match.end() - 1 if match.group("hi2") else match.start()
        direction = (_change_of(before) or _change_after(text, match.end())
                     or _clause_direction(text, at))
        found.append(StatedChange(min(low, high), max(low, high), direction))
    for match in TIMES.finditer(text):
        word = match.group("x").lower()
        factor = float(_NUMBER_WORDS.get(word, 0) or word)  # "it's nine times faster"
        if factor > 1:
            pct = round(100.0 * (factor - 1.0), 4)
            word = "improvement" if match.group("way").lower() in _FASTER else "regression"
            found.append(StatedChange(pct, pct, word))
    return found


# A row of a table: three or more cells apart by two blanks or more, two of them numbers.
_CELL = re.compile(r"\S+(?: \S+)*")
_NUMERIC_CELL = re.compile(rf"^[-+~]?{NUMBER}")  # "9219349", "2461133 -73.3%", "54.46%(...)"
# An unsigned percentage: a value of the table unless its heading names a change; a signed one
# ("-73.3%" after a value) is a change whatever is above it.
_LEVEL = re.compile(r"(?<![\w.+-])\d+(?:\.\d+)?\s*%")
_RULE = re.compile(r"^[\s\-=_+|*~]*$")
# A column heading that makes its percentages changes: "%change", "delta", "[ vs. v3.7]".
_CHANGE_HEADING = re.compile(
    r"change|chg|diff|delta|\bvs\b|gain|improv|speed-?up|regress|slow|fast", re.IGNORECASE
)


def level_rows(lines: Sequence[BodyLine]) -> set[int]:
    """The numbers of the lines that are rows of a table no reader took, with a percentage under
    a column heading that names no change: such percentages are values of the table (Waiman
    Long's `Overhead %age`, `100.0%` with no patch applied), not changes stated in prose. A
    percentage under no heading, or under `%change` or `[ vs. v3.7]`, stays a change."""
    found: set[int] = set()
    table: list[BodyLine] = []
    for at, line in enumerate([*lines, None]):
        row = line is not None and _table_row(line.text)
        if row and (not table or line.number == table[-1].number + 1):  # type: ignore[union-attr]
            table.append(line)  # type: ignore[arg-type]
            continue
        if len(table) >= 2:
            first = at - len(table)
            heading = [ln.text for ln in lines[max(0, first - 3):first]
                       if ln.number >= table[0].number - 3 and not _RULE.match(ln.text)]
            found.update(ln.number for ln in table if _levels_under(ln.text, heading))
        table = [line] if row else []  # type: ignore[list-item]
    return found


def _table_row(text: str) -> bool:
    if len(text) > 500:
        return False
    cells = [c for c in re.split(r" {2,}|\t", text.strip()) if c]
    return len(cells) >= 3 and sum(1 for c in cells if _NUMERIC_CELL.match(c)) >= 2


def _levels_under(row: str, heading: Sequence[str]) -> bool:
    """Whether an unsigned percentage of the row stands under heading words that name no
    change (Aaron Lu's `zone lock contention` column: `76.99%`, a share of the cycles)."""
    for cell in _LEVEL.finditer(row):
        above = " ".join(
            word.group(0) for line in heading for word in _CELL.finditer(line)
            if word.start() < cell.end() and cell.start() < word.end()
        )
        if above.strip(" |[]") and not _CHANGE_HEADING.search(above):
            return True
    return False


def _level(text: str, level: float, start: int) -> StatedChange:
    """"latency reduces to 60% of the original": a level, the change -40%; better or worse as
    the quantity named before it is better lower or higher."""
    change = level - 100.0
    higher = named_before(text, start)
    if higher is None or change == 0:
        return StatedChange(change, change, None)
    return StatedChange(change, change, "improvement" if (change > 0) == higher else "regression")


# A percentage joined to words by "-", "/" or "_", or the value of a key_name: a setting of the
# test (lkp's "performance-process-100%-page_fault3", "nr_threads: 100%").
# A share of the machine a function or task takes: "ptep_clear_flush() takes 5.36% CPU".
_SHARE = re.compile(
    r"\b(?:takes?|took|taking|uses?|used|using|consum\w*|spends?|spent|accounts?\s+for|"
    r"occup\w*)\s*(?:about|around|roughly|~)?\s*$",
    re.IGNORECASE,
)
# ... unless what reached it is itself a change: "the regression is reduced to ~3.9%".
_A_CHANGE = re.compile(
    r"\b(?:regression|improvement|gain|slowdown|speed-?up|overhead|degradation)s?\b[^.;,]*$",
    re.IGNORECASE,
)
_FROM = re.compile(r"\bfrom\s*(?:about|around|~)?\s*$", re.IGNORECASE)
# ... and where it went: "reduces the slowdown from 17~18% to 4~5%"
_FROM_TO = re.compile(
    r"\bfrom\s*(?:about|around|~)?\s*[\d.]+\s*%?(?:\s*[-~–]\s*[\d.]+)?\s*%\s+to\s*"
    r"(?:about|around|~)?\s*$",
    re.IGNORECASE,
)
_PARAMETER_BEFORE = re.compile(r"(?:\w[-/_]|\b[a-z]+_[a-z_]+:\s*)$")
_PARAMETER_AFTER = re.compile(r"[-/_]\w")
# A level a quantity reached or stays at, not a change: "lock contention dropped to 4%", "the
# success rate will drop to 36% while vanilla could maintain at about 70%".
_REACHED = re.compile(
    r"\b(?:(?:drop\w*|fell|fall\w*|decreas\w*|reduc\w*|increas\w*|rose|rise[ns]?|rising|grew|"
    r"grow\w*|went|goes|climb\w*|jump\w*|cut|brought|lower\w*|rais\w*)\s+(?:down\s+|up\s+)?to"
    r"|(?:maintain\w*|stay\w*|remain\w*|keeps?|kept|stuck|sits?|holds?)\s+at)"
    r"\s*(?:about|around|roughly|approximately|~)?\s*$",
    re.IGNORECASE,
)
# "reduce to 60% of origial algorithm", "runs at 95% of the baseline": a level, not a change;
# "fills up to 90% of memory" is neither.
_TO_LEVEL = re.compile(r"\b(?:to|at)\s*~?\s*$", re.IGNORECASE)
_OF_BASE = re.compile(
    r"\s*of\s+(?:the\s+|an?\s+)?(?:orig\w*|baseline|base|vanilla|unpatched|mainline|upstream|"
    r"old|previous|before|without|stock|default|current)\b",
    re.IGNORECASE,
)
# "2x faster", "1.5 times slower", "3x the throughput".
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}  # fmt: skip
TIMES = re.compile(
    r"(?<![\w.])(?P<x>\d+(?:\.\d+)?|" + "|".join(_NUMBER_WORDS) + r")\s*(?:x|times|×)\s+"
    r"(?P<way>faster|quicker|better|higher|slower|worse|lower)\b",
    re.IGNORECASE,
)
_FASTER = {"faster", "quicker", "better", "higher"}
# "(95% CI: 1.2% to 3.0%)", "[+1.2%, +3.0%]": the percentages inside are an interval's bounds.
_SETUP_AFTER = re.compile(
    r"(?:\s*(?:,|and|or)\s*\d+(?:\.\d+)?%)*\s*of\s+(?:the\s+)?(?:number\s+of\s+|total\s+|all\s+)?"
    r"(?:CPUs?|cores?|threads|memory|RAM|nodes?|the\s+machine)\b|\s+(?:test\s+)?cases?\b",
    re.IGNORECASE,
)
# ... but "an improvement of 20%-50% of fastpath latency" is a change of the latency
_BY_OR_OF = re.compile(r"\b(?:by|of)\s*(?:about|around|roughly|up\s+to|~)?\s*$", re.IGNORECASE)
_PART_OF = re.compile(r"\s*of\s+(?:the\s+|all\s+|its\s+|their\s+)?[A-Za-z]", re.IGNORECASE)
_SPREAD_BEFORE = re.compile(
    r"\b(?:std\.?\s*dev\w*|stdev|deviation|variance|cv|noise|jitter|variation)\s*"
    r"(?:is\s+|of\s+|was\s+)?(?:<|<=|>|~|=|:|below|under|within|about|around)?\s*[~±]?\s*$",
    re.IGNORECASE,
)
# "95% CI", "with 80% and 95% confidence"
_CONFIDENCE_AFTER = re.compile(
    r"(?:\s*(?:,|and|or)\s*\d+(?:\.\d+)?%)*"
    r"\s*(?:CI\b|C\.I\.|confidence|conf\b|significance\b|credible)", re.IGNORECASE
)
_INSIDE_INTERVAL = re.compile(
    r"(?:\bCI\b|confidence interval|interval)[^%]*$|\[\s*[-+]?\d[^\]]*$", re.I
)
STATED_CI = re.compile(
    rf"(?:(?P<level>\d+(?:\.\d+)?)%\s*)?(?:CI|confidence interval)\s*[:=]?\s*[\[(]?\s*"
    rf"(?P<lo>[-+]?{NUMBER})\s*%?\s*(?:,|to|\.\.|-(?=\s*[-+]?\d))\s*(?P<hi>[-+]?{NUMBER})\s*%",
    re.IGNORECASE,
)
STATED_P = re.compile(r"\bp\s*(?:-value)?\s*(?:=|<|<=)\s*(?P<p>\d*\.?\d+(?:e-?\d+)?)", re.I)


def stated_interval(text: str) -> tuple[float, float] | None:
    """An interval of the change the author gave ("95% CI: +1.2% to +3.0%"), in percent."""
    match = STATED_CI.search(normalize_text(text))
    if not match:
        return None
    lo, hi = to_float(match.group("lo")), to_float(match.group("hi"))
    return None if lo is None or hi is None else (min(lo, hi), max(lo, hi))


def stated_pvalue(text: str) -> float | None:
    match = STATED_P.search(normalize_text(text))
    return float(match.group("p")) if match else None
