"""How many tasks wait in each Celery queue, read from the broker.

With a Redis broker, Celery (kombu) keeps each queue as a Redis list named after the queue, so
its length is `LLEN name`. Without a broker (the embedded default) tasks run in the process that
asks for them and nothing ever waits.
"""

from __future__ import annotations

import redis

EAGER = "eager (embedded)"


def queue_lengths(broker_url: str, names: list[str]) -> dict[str, tuple[int | None, str]]:
    """Each queue's (length, note); the length is None when it cannot be known, and the note
    says why."""
    if not broker_url:
        return {name: (None, EAGER) for name in names}
    if not broker_url.startswith(("redis://", "rediss://", "unix://")):
        scheme = broker_url.split(":", 1)[0]
        return {name: (None, f"not known for a {scheme} broker") for name in names}
    client = redis.Redis.from_url(broker_url, socket_timeout=2, socket_connect_timeout=2)
    try:
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.llen(name)
        lengths = pipe.execute()
    except redis.RedisError as exc:
        return {name: (None, f"broker unreachable: {exc}") for name in names}
    finally:
        client.close()
    return {name: (int(length), "waiting") for name, length in zip(names, lengths, strict=True)}
