"""Which programs a lab host has, as the experiment's mapping asks (bot/runs/experiment_plan.py):
a qemu guest sees only the host's guest_usr, a local host its own PATH."""

from __future__ import annotations

import os
import shutil

from bot.benchmarks.author_commands import map_command
from bot.config.lab_hosts import LabHostSettings
from bot.runs.experiment_plan import lab_programs


def test_a_qemu_guest_has_only_the_programs_of_its_guest_usr(tmp_path):
    usr = tmp_path / "usr"
    (usr / "bin").mkdir(parents=True)
    (usr / "bin" / "hackbench").write_text("#!/bin/sh\n")
    os.chmod(usr / "bin" / "hackbench", 0o755)
    (usr / "bin" / "memtier_benchmark").write_text("not executable\n")
    has = lab_programs(LabHostSettings(name="vm", runner="qemu", guest_usr=str(usr)))
    assert has("hackbench") and not has("memtier_benchmark") and not has("fio")
    assert map_command("hackbench 125 process 3000", has).spec == \
        "hackbench:groups=125:loops=3000:pipe=0"
    assert map_command("memtier_benchmark --ratio=1:0", has).why_not == \
        "memtier_benchmark: not installed in the lab"


def test_a_local_host_has_the_programs_on_its_path():
    has = lab_programs(LabHostSettings(name="here"))
    assert has("sh") and not has("no-such-program-lorelab")
    assert has("hackbench") == (shutil.which("hackbench") is not None)
