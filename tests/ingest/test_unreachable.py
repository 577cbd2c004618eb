"""An archive that cannot be reached at all (a malformed URL, a host name that does not
resolve: no network) fails at once with one line, instead of being retried with backoff."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from bot.ingest.http import FetchError, HttpPolicy, fetch
from tests.cli import Lorelab

NOWHERE = "lore.lorelab-test.invalid"  # .invalid never resolves (RFC 6761)


class CountingSession(requests.Session):
    """A real session that counts the requests it was asked to make."""

    attempts = 0

    def request(self, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.attempts += 1
        return super().request(*args, **kwargs)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"https://{NOWHERE}/linux-mm/new.atom",
         f"cannot reach {NOWHERE}: name does not resolve (no network?)"),
        ("not-a-url", "'not-a-url' is not a URL"),
        ("ftp://example.org/x", "'ftp://example.org/x' is not a URL"),
    ],
)
def test_no_retry_when_retrying_cannot_help(url: str, message: str) -> None:
    session, waits = CountingSession(), []
    with pytest.raises(FetchError) as err:
        fetch(session, url, policy=HttpPolicy(attempts=4, sleep=waits.append))
    assert str(err.value) == message or str(err.value).startswith(message)
    assert session.attempts == 1 and waits == []


def test_a_refused_connection_is_retried_in_one_short_line() -> None:
    session, waits = CountingSession(), []
    with pytest.raises(FetchError) as err:
        fetch(session, "http://127.0.0.1:9/x", policy=HttpPolicy(attempts=3, sleep=waits.append))
    assert session.attempts == 3 and len(waits) == 2
    assert "Connection refused" in str(err.value) and len(str(err.value)) < 160
    assert "urllib3" not in str(err.value) and "Max retries" not in str(err.value)


def test_ingest_lore_without_network_says_so_in_one_line(tmp_path: Path) -> None:
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'x.db'}")
    proc = lorelab.run("ingest", "lore", f"https://{NOWHERE}/linux-mm", "--once", check=False)
    err = proc.stderr.decode()
    assert err == f"lorelab: cannot reach {NOWHERE}: name does not resolve (no network?)\n"
    assert proc.returncode == 75  # EX_TEMPFAIL: the network may come back

    proc = lorelab.run("ingest", "lore", "not-a-url", "--once", check=False)
    err = proc.stderr.decode()
    assert len(err.splitlines()) == 1 and "expected https://HOST/LIST" in err, err
    assert proc.returncode == 2  # a usage error, as for any bad argument
