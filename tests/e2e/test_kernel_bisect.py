"""A real kernel's bisection (opt-in: `pytest -m kernel`; about 15 minutes for a cold base
build, then some 20 minutes under TCG): scripts/kernel-bisect reviews a three-patch mm/vmscan.c
series whose patch 2 is the known-slow change on linux-source-6.1, then bisects the regression
the review found to 2/3."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # end to end: CI, not the fast loop

SCRIPT = REPO / "scripts" / "kernel-bisect"


@pytest.mark.kernel
@pytest.mark.usefixtures("one_real_kernel_at_a_time")
def test_a_real_kernel_series_is_bisected_to_its_slow_patch(tmp_path_factory):
    if os.geteuid() != 0 and subprocess.run(["dpkg", "-s", "linux-source-6.1"],
                                            capture_output=True).returncode != 0:
        pytest.skip("linux-source-6.1 is not installed and we cannot install it (not root)")
    work = os.environ.get("LORELAB_KERNEL_REVIEW_DIR") or str(tmp_path_factory.mktemp("kernel"))
    proc = subprocess.run(["bash", str(SCRIPT), work], capture_output=True, timeout=4 * 3600)
    summary = json.loads((Path(work).resolve() / "bisect.json").read_text())
    assert summary["checks"] and all(summary["checks"].values()), summary["checks"]
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    bisect = summary["bisect"]
    assert bisect["found"] == "2/3" and bisect["ended"] == "found"
    # Each step within its budget; the whole series' kernel came from the review's build.
    assert all(p["boots"] <= bisect["boots_per_step"] for p in bisect["probes"])
    assert bisect["prefix_builds"][-1]["cached"]
