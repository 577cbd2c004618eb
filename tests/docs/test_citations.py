"""The project carries its own documentation: every docs/ file the code or the README cites
exists, and so does every section cited by its quoted name."""

from __future__ import annotations

import re

from tests.support.paths import REPO

CITATION = re.compile(r"docs/([A-Za-z_-]+\.(?:md|png))(?:,\s*\"([^\"]+)\")?")
SOURCES = ["README.md", *(str(p.relative_to(REPO)) for folder in ("bot", "workers", "bench",
                                                                   "scripts", "docs")
                           for p in (REPO / folder).rglob("*") if p.suffix in (".py", ".md"))]


def citations() -> list[tuple[str, str, str | None]]:
    found = []
    for source in SOURCES:
        text = (REPO / source).read_text(encoding="utf-8")
        found += [(source, m[1], m[2]) for m in CITATION.finditer(re.sub(r"\s+", " ", text))]
    return found


def test_every_cited_document_and_section_exists() -> None:
    cited = citations()
    assert len({doc for _, doc, _ in cited}) >= 4  # statistics, replies, testing, ARCHITECTURE
    missing = [(source, doc) for source, doc, _ in cited if not (REPO / "docs" / doc).exists()]
    assert missing == []
    headings = {doc: (REPO / "docs" / doc).read_text(encoding="utf-8")
                for _, doc, _ in cited if doc.endswith(".md")}
    unnamed = [(source, doc, section) for source, doc, section in cited
               if section and not re.search(rf"^#+ .*{re.escape(section)}", headings[doc], re.M)]
    assert unnamed == []


def test_the_four_documents_are_there() -> None:
    for name in ("ARCHITECTURE.md", "statistics.md", "replies.md", "testing.md"):
        assert (REPO / "docs" / name).stat().st_size > 1000, name
