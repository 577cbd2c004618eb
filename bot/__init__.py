"""lorelab: a patch-series review and regression bot for the Linux kernel mailing lists.

The control plane: reading list mail, keeping state, deciding and writing replies.
Stages follow the data: ingest -> mail -> series -> plan -> (workers) -> analysis -> report.
"""

__version__ = "0.1.0"
