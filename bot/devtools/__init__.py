"""Checks a developer runs on the source tree itself (not part of the bot's pipeline)."""
