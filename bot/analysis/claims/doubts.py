"""Doubts: a reviewer's words about noise and significance ("is this within the noise?")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.analysis.claims.text import BodyLine, Speaker, message_blocks, sentences

_DOUBT = re.compile(
    r"\bnois[ey]\b|\bvariance\b|\bstd ?dev\b|\bstandard deviation\b|\bsignifican\w*|"
    r"\berror bars?\b|\brun-to-run\b|\bconfidence interval\b|\bnot reproducible\b|\bflaky\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Doubt:
    text: str
    lines: tuple[BodyLine, ...]
    speaker: Speaker

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "lines": [line.to_dict() for line in self.lines],
            "speaker": self.speaker.to_dict(),
        }


def find_doubts(body: str, *, sender: str = "") -> list[Doubt]:
    """Every sentence of the message that speaks of noise, variance or significance."""
    found = []
    for block in message_blocks(body, sender):
        for sentence in sentences(block):
            if _DOUBT.search(sentence.text):
                found.append(Doubt(sentence.text, sentence.lines, block.speaker))
    return found
