"""Metrics that moved but are not mentioned (bot/analysis/claims/unmentioned.py)."""

from __future__ import annotations

import textwrap

from bot.analysis.claims import analyse_message


def test_a_regression_in_a_column_the_text_never_names_is_listed() -> None:
    rows = "\n".join(
        f"run{i}  {20.0 + i * 0.01:.2f}  {3.00 + i * 0.01:.2f}  {16.0 + i * 0.01:.2f}  "
        f"{3.45 + i * 0.01:.2f}" for i in range(1, 7)
    )  # fmt: skip
    body = textwrap.dedent(
        "            vanilla                patched\n"
        "      elapsed(s)  user(s)   elapsed(s)  user(s)\n" + rows + "\n\n"
        "The elapsed time went down by 20%.\n"
    )
    result = analyse_message("s", "a <a@b.c>", body)
    assert [(u.metric, u.verdict) for u in result.unmentioned] == [("user(s)", "regression")]


def test_a_change_the_heading_of_a_side_block_states_is_mentioned() -> None:
    # Kairui Song's swap allocator cover letter: the changes are in the "After:" line's words.
    body = textwrap.dedent("""\
        Before:
        Sys time: 73578.30, Real time: 864.05, User time: 3000.10
        After: (-54.7% sys time, -49.3% real time)
        Sys time: 33314.76, Real time: 437.67, User time: 3400.20
        """)
    result = analyse_message("s", "a <a@b.c>", body)
    assert [u.metric for u in result.unmentioned] == ["User time"]
