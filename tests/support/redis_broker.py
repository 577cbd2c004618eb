"""A Redis database of the test process's own, for tests that start real Celery workers.

Databases 8 to 15 of the Redis on 127.0.0.1:6379, one per pytest-xdist worker (gw0, gw1, ...;
the only one without xdist; scripts/test.sh starts at most 8 workers), emptied when handed
out: a stale task of an earlier, killed test or another worker's queue never reaches this
test's workers.
"""

from __future__ import annotations

import os


def private_broker() -> str:
    import redis

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    url = f"redis://127.0.0.1:6379/{8 + int(worker or 0) % 8}"
    redis.Redis.from_url(url).flushdb()
    return url
