"""`lorelab demo`: the main job on the embedded default, with nothing to set up.

It makes the stand-in kernel tree (the reclaim simulator of bot.demo.simtree, built by make like
a kernel), posts a two-patch series that batches the simulator's reclaim counter updates (which
really makes it faster) as a linux-mm thread made with real git, and reviews that thread end to
end: ingest, apply, build base and patched, run the simulator in interleaved pairs on the local
runner, decide, and write the reply to the outbox. The three seed messages from the lists are
ingested beside it. Everything lives in a fresh SQLite database and work directory under
`data_dir/demo`, so the status page (`lorelab serve`) can show the run afterwards.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.config import Settings
from bot.config.lab_hosts import LabHostSettings
from bot.db.session import open_database
from bot.demo import SEED_DIR
from bot.demo.simtree import batch_series_spec, make_sim_tree
from bot.demo.threads import as_mbox, make_series
from bot.ingest.sources import iter_mbox
from bot.ingest.store import IngestSummary, ingest
from bot.runs.review import ReviewOutcome, review_thread

SEED_FILES = (
    "lru_gen-batch-counters-reply.eml",
    "per-lruvec-lru_lock-cover-reply.txt",
    "vmscan-bailout-hackbench-reply.txt",
)
BENCHMARK = "reclaim-sim"
# Operations per CPU per run: about a quarter of a second, long enough that the batching
# series' gain stands out of the run-to-run noise on a shared machine.
OPS = 3_000_000


def seed_paths() -> list[Path]:
    """The three real list messages the project started from, shipped with the package."""
    return [SEED_DIR / name for name in SEED_FILES]


@dataclass
class DemoResult:
    database_url: str
    config: Path  # settings that point `lorelab` at the demo's database and outbox
    seeds: IngestSummary
    review: ReviewOutcome


def demo_settings(root: Path) -> Settings:
    settings = Settings()
    settings.database.url = f"sqlite:///{root / 'demo.db'}"
    settings.build.work_dir = str(root / "build")
    settings.build.base_config = "defconfig"
    settings.build.fragments = []  # the stand-in tree has no Kconfig
    settings.lab_hosts = [LabHostSettings(name="local", runner="local")]
    return settings


def run_demo(data_dir: Path, on_ingested: Callable[[IngestSummary, str], None] | None = None
             ) -> DemoResult:
    """Review the demo series in a fresh database under `data_dir/demo`."""
    root = data_dir / "demo"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    settings = demo_settings(root)
    db = open_database(settings.database.url)
    seeds = IngestSummary()
    for seed in seed_paths():
        seeds.add(ingest(db, iter_mbox(seed), settings=settings.ingest, list_name="linux-mm"))
    tree = make_sim_tree(root / "linux")
    mbox = root / "series.mbox"
    mbox.write_bytes(as_mbox(make_series(tree, batch_series_spec())))
    outcome = review_thread(db, settings, str(mbox), tree_path=str(tree),
                            benchmarks=[f"{BENCHMARK}:ops={OPS}"], on_ingested=on_ingested)
    config = root / "config.toml"
    # The settings the demo ran with, so that `lorelab -c config.toml ...` sees the same run.
    config.write_text(f'[database]\nurl = "{settings.database.url}"\n\n'
                      f'[build]\nwork_dir = "{settings.build.work_dir}"\n'
                      f'base_config = "{settings.build.base_config}"\nfragments = []\n\n'
                      '[[lab_hosts]]\nname = "local"\nrunner = "local"\n')
    db.dispose()
    return DemoResult(settings.database.url, config, seeds, outcome)
