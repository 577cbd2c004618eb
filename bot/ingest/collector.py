"""The garbage collector during ingest: what exists before it starts is frozen, and no
collection runs in the middle of storing a batch.

A profile of a 20,000-message ingest found 17-22% of the main process in about 2,000
collections, most of them walking objects that live as long as the process (modules, ORM
mappers, settings) or the ORM objects of a batch still being loaded. Frozen objects are left
out of every collection; a batch's garbage is collected after its commit, as soon as the
collector runs again, so memory stays flat.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# The first generation's threshold while batches are stored (the default: 700). Between two
# batches the rows of the next are unpickled, and every 700 new objects ran a collection over
# the young rows: 20-35 collections in a 20,000-message ingest, which freed nothing.
STORE_GC_THRESHOLD = 100_000


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Leave every object that exists now out of collections until the block ends, and collect
    the young generation only once `STORE_GC_THRESHOLD` more objects exist than were freed."""
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(STORE_GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


@contextmanager
def no_collection() -> Iterator[None]:
    """No collection while the block runs (storing one batch); the collector runs after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
