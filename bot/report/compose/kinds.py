"""The kinds of reply lorelab writes (its X-Lorelab-Kind header, the outbox's `kind`).

Here, apart from the composers, so that what names a reply's kind (a run's outcome, `runs
list`) does not import them: the benchmark reply's module pulls in numpy and scipy.
"""

BENCHMARK = "benchmark"
BUILD_FAILURE = "build-failure"
DOES_NOT_APPLY = "does-not-apply"
COMMAND = "command"
# The follow-ups' replies (docs/replies.md, "Follow-ups"), one more on the thread each.
BISECT = "bisect"
ALIGNMENT = "alignment"
ALTERNATIVE = "alternative"
EXPERIMENT = "experiment"
