"""The replies of follow-up runs, one module per kind, each read from the database for
`workers/report_step.py` (FOLLOW_UP_REPLIES)."""
