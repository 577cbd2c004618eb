"""Composing replies: pure functions from what a run found (and the thread it answers) to the
bytes of a reply: its text, tables, threading headers and Message-ID (docs/replies.md)."""
