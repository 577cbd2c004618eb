"""Where the tests find the repository and their fixtures, wherever a test file lives."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
