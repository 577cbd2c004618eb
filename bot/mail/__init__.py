"""Raw list mail to a normalized message record: parsing, subject rules, diffs, trailers, kinds.

Everything later stages need from a message comes from `parse_message(raw) -> ParsedMessage`.
"""

from bot.mail.parse import parse_message
from bot.mail.record import MessageKind, ParsedMessage, UnparseableMessage

__all__ = ["MessageKind", "ParsedMessage", "UnparseableMessage", "parse_message"]
