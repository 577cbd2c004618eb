"""Ingest: reading raw mail from sources (mbox, maildir, stdin, ...) and storing it durably."""
