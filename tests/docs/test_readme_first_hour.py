"""What a new user reads first in the README is true: one table of every exit status a
command can end with (found in bot/cli, not remembered), where every setting is explained, and
what a fresh machine needs for the demo."""

from __future__ import annotations

import ast
import re

from bot.runs.outcome import EXIT_CODES
from tests.support.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _exit_table() -> dict[int, str]:
    """{status: its row} of the README's table of exit statuses."""
    part = README.split("### Exit statuses", 1)[1]
    rows = {}
    for line in part.splitlines()[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(r"[\d, ]+", cells[0]):
            rows.update({int(code): line for code in cells[0].split(",")})
    return rows


def _codes_used() -> dict[int, list[str]]:
    """Every exit status some path in bot/cli can end with: {status: where}."""
    modules = {p: ast.parse(p.read_text(encoding="utf-8")) for p in (REPO / "bot/cli").glob("*.py")}
    names = {t.id: node.value.value for tree in modules.values() for node in tree.body
             if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, int)
             for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("EX_")}
    used: dict[int, list[str]] = {2: ["click: a bad argument or option"],
                                  **{code: ["bot.runs.outcome.EXIT_CODES"]
                                     for code in EXIT_CODES.values()}}

    def value(node: ast.expr) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return names.get(node.id)
        return None  # EXIT_CODES[...], outcome.exit_code: the outcome table above

    for path, tree in modules.items():
        for node in ast.walk(tree):
            found: list[int | None] = []
            if isinstance(node, ast.Call):
                callee = ast.unparse(node.func)
                codes = [k.value for k in node.keywords if k.arg == "exit_code"]
                if callee == "UserError":
                    codes += node.args[1:2]
                    found += [1] if not codes else []
                if callee in ("typer.Exit", "sys.exit", "raise typer.Exit"):
                    codes += node.args[:1]
                found += [value(c) for c in codes]
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name) \
                    and node.value.id.startswith("EX_"):
                found.append(value(node.value))
            for code in found:
                if code is not None:
                    used.setdefault(code, []).append(f"{path.name}:{node.lineno}")
    return used


def test_one_table_holds_every_exit_status_the_commands_use() -> None:
    table, used = _exit_table(), _codes_used()
    assert {75, 78, 66, 130, 1, 2, 10} <= set(used)  # the scan finds what is there
    assert {code: where for code, where in used.items() if code not in table} == {}
    assert sorted(table) == sorted(set(used) | {0})  # and the table holds nothing made up


def test_settings_are_documented_where_a_user_looks() -> None:
    config = README.split("### Configuration", 1)[1].split("\n## ", 1)[0]
    assert "bot/config/starter.toml" in config and "lorelab init" in config
    assert "[ingest] lore_url" in config
    assert "allowed_lists" in config and "[[lists]]" in config


def test_a_fresh_machine_knows_what_the_demo_needs() -> None:
    top = README.split("## What works today", 1)[0]
    for package in ("git", "gcc", "make", "libc6-dev", "python3-venv"):
        assert re.search(rf"\b{re.escape(package)}\b", top), package
    assert ".venv/bin" in top and "source .venv/bin/activate" in top


def header_rows_repeated(text: str) -> list[str]:
    """Header rows of a Markdown table that follow another header row (one table, two heads:
    the ingest performance table had "| | result | target |" twice)."""
    rows = text.splitlines()
    separators = {i for i, row in enumerate(rows) if re.fullmatch(r"\|( *-+ *\|)+", row.strip())}
    return [rows[i + 1] for i in sorted(separators) if i + 2 in separators]


def test_each_table_has_one_header_row() -> None:
    assert header_rows_repeated(README) == []
