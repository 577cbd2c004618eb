"""Runs: what lorelab decides to test, how a run moves through its steps, and what it found.

The planner and the suites pick series versions; `base` chooses the commit to apply them to;
`lifecycle` makes, cancels, retests and supersedes runs; `taskqueue` sends their steps to the
workers by task name; `steps` records each step's start and end; `outcome` turns the recorded
steps into the one answer every reader shows (exit status, reply, web page, `runs show`).
"""
