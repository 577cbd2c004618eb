"""How many wrong admin tokens a client address may try: a bounded number a minute, then none.

The admin token is the only secret between a reader and the admin actions, so guessing it must
be slow: each address may present `limit` wrong tokens within `window` seconds; after that its
admin requests are refused (429, with the seconds to wait) without the token being compared at
all, so a guess made while refused learns nothing. Only wrong tokens count; a right one and a
request with no token do not. The addresses tracked are bounded (`max_addresses`): a flood from
many addresses forgets its oldest, never grows without end.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

WRONG_TOKENS_PER_MINUTE = 10


class TokenThrottle:
    """Wrong-token attempts per client address, over a sliding window of `window` seconds."""

    def __init__(self, limit: int = WRONG_TOKENS_PER_MINUTE, window: float = 60.0,
                 max_addresses: int = 10_000, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.limit = limit
        self.window = window
        self.max_addresses = max_addresses
        self.clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()  # the sync routes run in a thread pool

    def __len__(self) -> int:
        """How many addresses are tracked."""
        return len(self._failures)

    def _recent(self, address: str, now: float) -> deque[float]:
        failures = self._failures.get(address, deque())
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        return failures

    def wait(self, address: str) -> int:
        """Whole seconds until `address` may try a token again; 0: it may now."""
        with self._lock:
            now = self.clock()
            failures = self._recent(address, now)
            if len(failures) < self.limit:
                return 0
            return max(1, math.ceil(failures[-self.limit] + self.window - now))

    def failed(self, address: str) -> None:
        """Count one wrong token from `address`."""
        with self._lock:
            now = self.clock()
            failures = self._recent(address, now)
            failures.append(now)
            self._failures[address] = failures
            self._failures.move_to_end(address)
            while len(self._failures) > self.max_addresses:
                self._failures.popitem(last=False)
