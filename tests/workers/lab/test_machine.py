"""The machine a job ran on, read there: this host's own facts through the real job script."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from workers.lab.machine import MACHINE_DIR, MACHINE_SCRIPT, read_machine, this_machine


def test_the_job_script_reads_this_machine_as_its_kernel_reports_it(tmp_path: Path) -> None:
    subprocess.run(["sh", "-c", f'R={tmp_path}\n{MACHINE_SCRIPT}'], check=True)
    facts = read_machine(tmp_path / MACHINE_DIR)
    cpuinfo = Path("/proc/cpuinfo").read_text()
    assert facts["cpus"] == os.cpu_count()
    assert facts["kernel"] == os.uname().release
    assert facts["virtualized"] == (" hypervisor" in cpuinfo)
    # Never "none" (bare metal) on a machine whose CPU says it runs under a hypervisor.
    assert (facts["virtualization"] == "none") == (" hypervisor" not in cpuinfo) or \
        facts["virtualization"] not in ("none", "")
    if "model name" in cpuinfo:
        assert facts["cpu"] and facts["cpu"] in cpuinfo
    meminfo = Path("/proc/meminfo").read_text().split()
    assert facts["memory_kb"] == int(meminfo[meminfo.index("MemTotal:") + 1])
    assert facts["numa_nodes"] >= 1


def test_facts_from_a_lab_machines_files(tmp_path: Path) -> None:
    m = tmp_path / MACHINE_DIR
    m.mkdir()
    (m / "cpuinfo").write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\nsiblings\t: 128\n"
        "cpu cores\t: 64\nflags\t\t: fpu vme sse2\n")
    (m / "online").write_text("0-127\n")
    (m / "meminfo").write_text("MemTotal:       528000000 kB\n")
    (m / "nodes").write_text("/sys/devices/system/node/node0\n/sys/devices/system/node/node1\n")
    (m / "release").write_text("6.13.0-rc1+\n")
    (m / "caches").write_text("1 Data 32K\n1 Instruction 32K\n2 Unified 512K\n3 Unified 32768K\n")
    facts = read_machine(m)
    assert facts == {"cpu": "AMD EPYC 7763 64-Core Processor", "cpus": 128,
                     "threads_per_core": 2, "memory_kb": 528000000, "numa_nodes": 2,
                     "kernel": "6.13.0-rc1+", "vendor": "", "product": "",
                     "virtualized": False, "virtualization": "none", "lru_gen": "",
                     "l1d": "32K", "l1i": "32K", "l2": "512K", "l3": "32768K"}


def test_a_guest_without_systemd_is_named_by_its_dmi_strings(tmp_path: Path) -> None:
    m = tmp_path / MACHINE_DIR
    m.mkdir()
    (m / "cpuinfo").write_text("processor\t: 0\nmodel name\t: QEMU Virtual CPU version 2.5+\n"
                               "flags\t\t: fpu hypervisor\n")
    (m / "vendor").write_text("QEMU\n")
    (m / "product").write_text("Standard PC (i440FX + PIIX, 1996)\n")
    (m / "lru_gen").write_text("0x0007\n")
    facts = read_machine(m)
    assert (facts["virtualization"], facts["lru_gen"]) == ("qemu", "0x0007")
    # Only the CPU flag: a hypervisor of unknown name, never bare metal.
    (m / "vendor").unlink()
    (m / "product").unlink()
    assert read_machine(m)["virtualization"] == "unknown"
    (m / "virt").write_text("microsoft\n")
    assert read_machine(m)["virtualization"] == "microsoft"


def test_this_machine_is_read_once_per_process() -> None:
    assert this_machine() is this_machine()
    assert this_machine()["cpus"] == os.cpu_count()


def test_no_files_no_facts(tmp_path: Path) -> None:
    assert read_machine(tmp_path / MACHINE_DIR) == {}


def test_a_hostile_kernels_words_stay_short_and_printable(tmp_path: Path) -> None:
    m = tmp_path / MACHINE_DIR
    m.mkdir()
    (m / "cpuinfo").write_text("model name\t: Evil\x1b[2J CPU " + "x" * 5000 + "\n")
    (m / "release").write_bytes(b"6.1.0\x00\x07 and more\nSubject: spoofed\n" + b"y" * (4 << 20))
    facts = read_machine(m)
    assert facts["cpu"].startswith("Evil[2J CPU xxx") and len(facts["cpu"]) <= 120
    assert facts["kernel"] == "6.1.0 and more"
