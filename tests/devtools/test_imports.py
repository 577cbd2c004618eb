"""The dependency rule: bot/ never imports workers/ (but `lorelab bench`), and no circles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.devtools import imports
from tests.support.paths import REPO

ROOT = REPO


def test_the_tree_keeps_the_dependency_rule() -> None:
    data = imports.report(ROOT)
    assert data["violations"] == []
    bot_to_workers = data["crossings"].get("bot -> workers", [])  # type: ignore[union-attr]
    assert {i["module"] for i in bot_to_workers} <= {"bot.cli.lab"}
    assert data["crossings"]["workers -> bot"]  # type: ignore[index]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in imports.PACKAGES:
        (root / package).mkdir(exist_ok=True)
    return root


def test_a_lazy_import_of_workers_and_a_circle_are_both_caught(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "bot/__init__.py": "",
        "bot/a.py": "def f():\n    from workers.tasks import x\n",
        "bot/b.py": "from bot.c import y\n",
        "bot/c.py": "from bot import b\n",
        "bot/d.py": ("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from bot.e import z\n"),
        "bot/e.py": "from bot.d import w\n",
        "workers/__init__.py": "",
        "workers/tasks.py": "from bot.a import f\n",
    })
    problems = imports.report(root)["violations"]
    assert any(p.startswith("bot.a:2 imports workers.tasks") for p in problems), problems
    assert "import circle: bot.b <-> bot.c" in problems
    assert not any("bot.d" in p for p in problems)  # a type checker's import runs never


def test_the_command_exits_zero_and_says_so() -> None:
    proc = subprocess.run([sys.executable, "-m", "bot.devtools.imports"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dependency rule kept" in proc.stdout
