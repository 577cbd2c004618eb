"""The kernel configs the status page serves: the exact .config a run's kernels were built with.

A reply's "To reproduce" section fetches it (`curl -o .config .../runs/ID/config`), so it is
served byte for byte from the build's artifacts, which live on this machine when the web page
and the build workers share it (the embedded default and a one-machine deployment).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from bot.db.models import Run
from bot.runs.records import BuildRecord


def built_config(session: Session, run_id: int) -> str | None:
    """The .config of a run's base build (None: the run built none that is here)."""
    run = session.get(Run, run_id)
    step = next((st for st in run.steps if st.name == "build-base"), None) if run else None
    artifacts = BuildRecord.from_step(step).artifact_dir if step is not None else None
    config = Path(artifacts) / "config" if artifacts else None
    if config is None or not config.is_file():
        return None
    return config.read_text(errors="replace")
