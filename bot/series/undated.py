"""Where mail without a Date sorts when series assembly orders by date.

Real archives hold mail with no Date header or one that does not parse (`Message.date` is then
None). Orderings put it first (the oldest: a posting's parts, releases of one version) or last
(the newest: which posting names a series, which of two holds a part); each sort says which by
the constant it uses.
"""

import datetime as dt

UNDATED_FIRST = dt.datetime.min.replace(tzinfo=dt.UTC)
UNDATED_LAST = dt.datetime.max.replace(tzinfo=dt.UTC)
