"""`lorelab demo`: the main job on the embedded default, with nothing to set up.

For now (the foundation), it makes a small series thread with real git (v1, a review, v2),
puts it beside the three seed messages from the lists, ingests all of it into a fresh SQLite
database and returns what a maintainer would look at. Later stages grow it into a full review.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from bot.config import IngestSettings
from bot.db.session import Database, ensure_schema
from bot.demo import SEED_DIR
from bot.demo.threads import SeriesSpec, as_mbox, make_reply, make_series, make_tree
from bot.ingest.sources import iter_mbox
from bot.ingest.store import IngestSummary, ingest

SEED_FILES = (
    "lru_gen-batch-counters-reply.eml",
    "per-lruvec-lru_lock-cover-reply.txt",
    "vmscan-bailout-hackbench-reply.txt",
)


def seed_paths() -> list[Path]:
    """The three real list messages the project started from, shipped with the package."""
    return [SEED_DIR / name for name in SEED_FILES]


def demo_thread(workdir: Path) -> list[bytes]:
    """A v1 series with a review, and its v2 threaded under it, made with real git."""
    tree = make_tree(workdir / "linux")
    v1spec = SeriesSpec(
        title="mm/vmscan: batch lru_gen counter updates", patches=3, change_id="20261130-lru-batch"
    )
    v1 = make_series(tree, v1spec)
    review = make_reply(
        v1[2],
        author=("Rita Reviewer", "rita@example.org"),
        body="Assuming it's not noise, this looks good to me.",
        trailers=["Reviewed-by: Rita Reviewer <rita@example.org>"],
    )
    v2spec = SeriesSpec(
        title="mm/vmscan: batch lru_gen counter updates",
        patches=3,
        version=2,
        change_id="20261130-lru-batch",
        same_changes_as=v1spec,
        revised=(1,),
        in_reply_to=_msgid(v1[0]),
    )
    return [*v1, review, *make_series(tree, v2spec)]


def _msgid(raw: bytes) -> str:
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.lower().startswith("message-id:"):
            return line.split(":", 1)[1].strip()
    raise ValueError("generated message without Message-ID")


@dataclass
class DemoResult:
    database_url: str
    summary: IngestSummary


def run_demo(data_dir: Path) -> DemoResult:
    """Ingest the demo thread and the seeds into a fresh database under `data_dir`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db_path = data_dir / "demo.db"
    for stale in data_dir.glob("demo.db*"):
        stale.unlink()
    url = f"sqlite:///{db_path}"
    db = Database(url)
    ensure_schema(db.engine)
    summary = IngestSummary()
    with tempfile.TemporaryDirectory(prefix="lorelab-demo-") as tmp:
        mbox = Path(tmp) / "demo.mbox"
        mbox.write_bytes(as_mbox(demo_thread(Path(tmp))))
        settings = IngestSettings()
        summary.add(ingest(db, iter_mbox(mbox), settings=settings, list_name="linux-mm"))
        for seed in seed_paths():
            summary.add(ingest(db, iter_mbox(seed), settings=settings, list_name="linux-mm"))
    db.dispose()
    return DemoResult(url, summary)
