"""`lorelab lab hosts`: what the machine behind each host has (this one, read from the kernel,
for local and qemu hosts) apart from what a qemu guest is given."""

from __future__ import annotations

import os
import re
from pathlib import Path

from bot.cli.terminal import number, p_value
from tests.cli import Lorelab


def test_hosts_show_this_machine_and_what_a_guest_gets(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[[lab_hosts]]\nname = "here"\n\n'
                      '[[lab_hosts]]\nname = "vm1"\nrunner = "qemu"\ncpus = 1\n'
                      'memory_mb = 384\n\n'
                      '[[lab_hosts]]\nname = "box"\nrunner = "ssh"\naddress = "10.0.0.2"\n')
    lorelab = Lorelab(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    lorelab.env["LORELAB_CONFIG"] = str(config)
    hosts = {h["name"]: h for h in lorelab.json("lab", "hosts")}
    total_kb = int(re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(),
                             re.M)[1])
    here = {"cpus": len(os.sched_getaffinity(0)), "memory_mb": total_kb // 1024}
    assert hosts["here"]["machine"]["cpus"] == here["cpus"]
    assert abs(hosts["here"]["machine"]["memory_mb"] - here["memory_mb"]) <= 1
    assert hosts["here"]["guest"] is None  # benchmarks run on this kernel
    assert hosts["vm1"]["machine"] == hosts["here"]["machine"]  # qemu runs here
    assert hosts["vm1"]["guest"] == {"cpus": 1, "memory_mb": 384}
    assert hosts["box"]["machine"] is None and hosts["box"]["guest"] is None
    table = lorelab.run("lab", "hosts").stdout.decode()
    vm1 = next(line for line in table.splitlines() if " vm1 " in line)
    assert "1 CPU, 384 MiB" in vm1 and f"{here['cpus']} CPU" in vm1


def test_numbers_are_printed_in_plain_notation() -> None:
    assert number(15208812.4) == "15208812"
    assert number(1.52088e7) == "15208800"
    assert number(0.000123456) == "0.000123456"
    assert number(2.5) == "2.5" and number(95.0) == "95" and number(0) == "0"
    assert p_value(0.0312) == "0.0312" and p_value(3e-7) == "<0.0001"
