"""A real kernel (opt-in: `pytest -m kernel`, 10-13 minutes cold): scripts/kernel-e2e applies a
two-patch mm/vmscan.c series to linux-source-6.1 and builds base and patched in the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # end to end: CI, not the fast loop

SCRIPT = REPO / "scripts" / "kernel-e2e"


@pytest.mark.kernel
def test_real_kernel_series_applies_and_builds_base_and_patched(tmp_path_factory):
    if os.geteuid() != 0 and subprocess.run(["dpkg", "-s", "linux-source-6.1"],
                                            capture_output=True).returncode != 0:
        pytest.skip("linux-source-6.1 is not installed and we cannot install it (not root)")
    work = os.environ.get("LORELAB_KERNEL_E2E_DIR") or str(tmp_path_factory.mktemp("kernel"))
    proc = subprocess.run(["bash", str(SCRIPT), work], capture_output=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    run = json.loads(proc.stdout)
    steps = {s["name"]: s for s in run["steps"]}
    assert steps["apply"]["result"]["applied"] == 2
    assert run["base_reason"].startswith("the series' base-commit")
    for name in ("build-base", "build-patched"):
        assert steps[name]["state"] == "done"
        assert Path(steps[name]["result"]["artifact_dir"], "bzImage").stat().st_size > 500_000
    # the patched build reused the base's O= directory: far quicker than the base (when this
    # run built them; a reused LORELAB_KERNEL_E2E_DIR may answer both from the artifact cache)
    if not steps["build-base"]["result"]["cached"]:
        assert steps["build-patched"]["seconds"] < steps["build-base"]["seconds"] / 3
    else:
        assert steps["build-patched"]["result"]["cached"]
