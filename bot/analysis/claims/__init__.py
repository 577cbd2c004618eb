"""Performance claims made in a message, who made them, and what the numbers given can support.

Kernel developers post results as "Before: 44017.78 Ops/sec / After: 44687.08 Ops/sec (+1.5%)",
as "improved 17%", as tables of per-run numbers, or as the output of their tools (lkp-tests,
mmtests, perf stat, kernbench, fio, stress-ng); reviewers quote them and doubt them. This
package finds those claims in a message body (pure functions over text), reads each into
measurements (metric, base, patched, runs, spread, direction), checks the author's arithmetic,
and judges what the numbers carry (docs/claims.md): a table of per-run samples gets a verdict per
column against the first kernel's column with `bot.analysis.verdict.compare`, the columns of a
table held together by Benjamini-Hochberg; means with a spread and a run count get Welch's t; a
change stated with a run count but no spread gets the per-run CV under which it would hold, and
one with a spread but no run count the runs it would need (`bot.analysis.claim_spread`, Student's
t); a bare percentage gets "no runs or spread were given"; a percentage written just below a
table is judged by that table.

Diffs and signatures are never read for claims. Tables are rows of numbers under a header line
(and optionally a line of kernel names, each over a group of columns), with optional avg / std /
min / max rows below; the printed avg / min / max are checked against the rows read back.

Quoted text (`> `) belongs to the quoted author (named by the "On ..., X wrote:" line above it when
there is one), the unquoted text to the replier: every claim records its quote depth and speaker.
Line numbers are 1-based lines of the message body.

Entry points: `extract_claims(body)` (what was claimed), `judge_claim(claim, claims)` (what the
data supports), `analyse_message(subject, sender, body)` (both, plus benchmarks, commands and the
reviewer's doubts about noise), and `MessageClaims.to_dict()`. `bot.analysis.claims.input` reads
a message file (mail, or a body with reduced headers) into the subject, sender and body these
take.

Modules, in the order a message goes through them:

    input       reading a message file (mail, reduced headers, HTML-only; binary refused)
    numbers     numbers as typed (separators, minus signs) and the per-message work Budget
    text        body lines, quote depth, speakers, blocks, sentences
    benchmarks  benchmark names, and whether higher is better (units, metric names)
    measurement one metric for two kernels, normalized (Measurement)
    lkp         lkp-tests comparison tables
    mmtests     mmtests compare-kernels tables
    sections    tool output pasted once per kernel: perf stat, kernbench, fio, stress-ng, mean±sd
    tables      result tables read back into per-run samples (kernels as columns or rows)
    statements  run counts, before/after lines, "from X to Y", "X vs Y", percentages
    model       the claims as written (Claim and the numbers it carries)
    extract     every claim of a body, numbered in body order
    arithmetic  stated percentages recomputed from the stated numbers
    judge_measurement  what one measurement's numbers carry (Welch, runs or spread needed)
    judgement   what a judgement reports (Judgement, ColumnJudgement, JudgedClaim)
    judge_table a table judged column by column with verdict.compare, BH across its columns
    judge       one claim judged by the data given with it
    unmentioned metrics that moved but that no sentence names
    commands    benchmark command lines
    doubts      reviewers' words about noise and significance
    message     the whole message (MessageClaims, analyse_message), thread de-duplication

JSON: `MessageClaims.to_dict()` is format "lorelab-claims/2": the "lorelab-claims/1" shape below
with keys added (docs/claims.md, "JSON" lists them) and one new `kind` value, "summary".

JSON shape of "lorelab-claims/1" (keys are always present, absent values are null or empty
lists; percentages are plain numbers, 1.5 meaning +1.5%):

    {
      "format": "lorelab-claims/1",
      "subject": str, "sender": str, "msgid": str | null,
      "benchmarks": [str],                  # every benchmark named in the message, sorted
      "commands": [{"benchmark": str, "text": str, "lines": [Line], "speaker": Speaker}],
      "claims": [{
        "index": int,                       # 1-based, in body order
        "kind": "before-after" | "percentage" | "table",
        "text": str,                        # what was claimed, in one line
        "speaker": Speaker,
        "lines": [Line],                    # the body lines the claim was read from
        "runs": int | null,                 # runs per side, stated or counted from table rows
        "runs_line": Line | null,           # where the run count was stated
        "benchmarks": [str],                # named in the claim's sentence, else in its block
        "change": {"low_pct": float, "high_pct": float,   # as written: "4-5%" -> 4, 5;
                   "direction": "improvement" | "regression" | null} | null,  # before-after:
                                            # the signed change of the number, 1.5 for +1.5%
        "before_after": {"before_label": str, "before": float, "after_label": str,
                         "after": float, "unit": str | null, "stated_pct": float | null,
                         "computed_pct": float, "higher_is_better": bool | null} | null,
        "table": {"kernels": [str], "unit": str | null, "higher_is_better": bool | null,
                  "columns": [{"kernel": str, "header": str, "samples": [float],
                               "summary": {str: float}}]} | null,
        "refers_to": int | null,            # index of the table a percentage sums up
        "judgement": {
          "status": "judged" | "needs-spread" | "no-data" | "see-table" | "no-comparison",
          "summary": str,                   # one sentence a maintainer reads
          "cv_threshold_pct": float | null, # needs-spread: CV under which the change is significant
          "comparisons": [Comparison],      # judged tables: one per (kernel, column) vs the base
          "notes": [str]}
      }],
      "doubts": [{"text": str, "lines": [Line], "speaker": Speaker}]
    }
    Line = {"number": int, "text": str}     # text as in the body, quote marks included
    Speaker = {"role": "replier" | "quoted", "quote_depth": int, "name": str | null,
               "email": str | null}
    Comparison = {"label": str, "base": str, "patched": str, "n_base": int, "n_patched": int,
                  "mean_pct": float, "median_pct": float, "hl_pct": float,
                  "ci_pct": [float | null, float | null],   # null: too few runs for a bound
                  "p_value": float,
                  "verdict": str,       # "improvement (may be < 1%)", "inconclusive", ...;
                                        # "increase"/"decrease" when the direction is unknown
                  "outliers_base": [float], "outliers_patched": [float],  # modified z > 3.5,
                  "notes": [str],                                         # either direction
                  "line": str}          # e.g. "this patch 125: -2.93% [-5.47%, -0.29%] p=0.043 ..."
"""

from bot.analysis.claims.benchmarks import benchmarks_in, higher_is_better
from bot.analysis.claims.command_lines import Command, find_all_commands, find_commands
from bot.analysis.claims.doubts import Doubt, find_doubts
from bot.analysis.claims.extract import extract_claims
from bot.analysis.claims.judge import judge_claim
from bot.analysis.claims.judge_table import MEAN_MISLEADS_PP
from bot.analysis.claims.judgement import ColumnJudgement, JudgedClaim, Judgement
from bot.analysis.claims.message import (
    FORMAT,
    MessageClaims,
    analyse_message,
    drop_repeated_quotes,
)
from bot.analysis.claims.model import BeforeAfter, Claim, ResultTable, StatedChange, TableColumn
from bot.analysis.claims.statements import RunCount, find_run_counts
from bot.analysis.claims.text import (
    Block,
    BodyLine,
    Sentence,
    Speaker,
    parse_attribution,
    parse_sender,
    sentences,
    split_blocks,
    split_body,
)

__all__ = [
    "FORMAT",
    "MEAN_MISLEADS_PP",
    "BeforeAfter",
    "Block",
    "BodyLine",
    "Claim",
    "ColumnJudgement",
    "Command",
    "Doubt",
    "JudgedClaim",
    "Judgement",
    "MessageClaims",
    "ResultTable",
    "RunCount",
    "Sentence",
    "Speaker",
    "StatedChange",
    "TableColumn",
    "analyse_message",
    "benchmarks_in",
    "drop_repeated_quotes",
    "extract_claims",
    "find_all_commands",
    "find_commands",
    "find_doubts",
    "find_run_counts",
    "higher_is_better",
    "judge_claim",
    "parse_attribution",
    "parse_sender",
    "sentences",
    "split_blocks",
    "split_body",
]
