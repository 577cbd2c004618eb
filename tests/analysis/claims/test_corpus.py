"""The corpus of claim mails (tests/fixtures/claims/): every layout read and judged as expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.claims import matches, score_mail
from tests.support.paths import REPO

CORPUS = REPO / "tests" / "fixtures" / "claims"
MAILS = sorted(CORPUS.glob("*.eml"))


def test_corpus_has_forty_mails_in_ten_layouts() -> None:
    layouts = {json.loads(m.with_suffix(".json").read_text())["layout"] for m in MAILS}
    assert len(MAILS) >= 40 and len(layouts) >= 10


@pytest.mark.parametrize("mail", MAILS, ids=[m.stem for m in MAILS])
def test_mail_gives_its_expected_measurements_and_verdicts(mail: Path) -> None:
    result = score_mail(mail)
    assert result["misses"] == [], result["misses"]
    assert result["extra"] == [], [e["metric"] for e in result["extra"]]
    assert result["agreed"] == result["matched"]


def test_a_wrong_value_does_not_match() -> None:
    want = json.loads((CORPUS / "01-lkp-1.json").read_text())["measurements"][0]
    got = {
        "metric": want["metric"], "base": want["base"], "patched": want["patched"] * 1.01,
        "n_base": want["n"], "n_patched": want["n"], "cv_pct": want["cv"] or [None, None],
        "direction": want["direction"],
    }  # fmt: skip
    assert not matches(got, want)
    assert matches({**got, "patched": want["patched"]}, want)
