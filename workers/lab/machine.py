"""What machine a benchmark ran on, as the machine (or guest) itself says: read by the job on
every boot, so the reply describes where the samples came from, not where the report was written.

`MACHINE_SCRIPT` is the part of every job script (workers/lab/job.py) that copies what the
kernel reports (/proc/cpuinfo, /proc/meminfo, the NUMA nodes and CPU caches in /sys, uname -r,
the DMI vendor and product, systemd-detect-virt where it exists, whether MGLRU is on) into the
results directory; `read_machine` turns those files into the facts a
campaign stores per kernel (`LabCampaign.machine`), and a runner keeps the facts of each
kernel's last boot in its `machine` attribute.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

MACHINE_DIR = "machine"
# What a qemu runner records of the host its guests ran on.
HOST_FACTS = ("cpu", "cpus", "threads_per_core", "memory_kb", "virtualization", "kernel")
# What the job wrote comes from the kernel under test, a stranger's code, and its text ends up in
# a public reply: each file is read up to a size, each line of text kept short and printable.
MAX_FILE_BYTES = 1 << 20
MAX_TEXT = 120

# POSIX sh and busybox both run it; every read may fail (a file /sys does not have) silently.
MACHINE_SCRIPT = """\
M="$R/machine"
mkdir -p "$M"
cat /proc/cpuinfo > "$M/cpuinfo" 2>/dev/null
cat /proc/meminfo > "$M/meminfo" 2>/dev/null
cat /sys/devices/system/cpu/online > "$M/online" 2>/dev/null
uname -r > "$M/release" 2>/dev/null
cat /sys/class/dmi/id/sys_vendor > "$M/vendor" 2>/dev/null
cat /sys/class/dmi/id/product_name > "$M/product" 2>/dev/null
command -v systemd-detect-virt >/dev/null 2>&1 && systemd-detect-virt --vm > "$M/virt" 2>/dev/null
cat /sys/kernel/mm/lru_gen/enabled > "$M/lru_gen" 2>/dev/null
for n in /sys/devices/system/node/node[0-9]*; do [ -d "$n" ] && echo "$n"; done > "$M/nodes"
for c in /sys/devices/system/cpu/cpu0/cache/index[0-9]*; do
  [ -d "$c" ] && echo "$(cat "$c/level" 2>/dev/null) $(cat "$c/type" 2>/dev/null)\
 $(cat "$c/size" 2>/dev/null)"
done > "$M/caches" 2>/dev/null
"""


@runtime_checkable
class ReportsMachine(Protocol):
    """A runner that keeps, per kernel ("A", "B"), the machine facts of its last boot."""

    machine: dict[str, dict[str, Any]]


def read_machine(directory: Path) -> dict[str, Any]:
    """The facts in the files `MACHINE_SCRIPT` wrote; {} when the job wrote none."""
    if not directory.is_dir():
        return {}
    cpuinfo = _read(directory / "cpuinfo")
    facts: dict[str, Any] = {
        "cpu": _text(_first(cpuinfo, "model name") or _first(cpuinfo, "Processor")),
        "cpus": _count_cpus(_read(directory / "online").strip())
        or len(re.findall(r"^processor\s*:", cpuinfo, re.M)),
        "threads_per_core": _threads_per_core(cpuinfo),
        "memory_kb": _memory_kb(_read(directory / "meminfo")),
        "numa_nodes": len([n for n in _read(directory / "nodes").split() if n]) or 1,
        "kernel": _text(_read(directory / "release")),
        "vendor": _text(_read(directory / "vendor")),
        "product": _text(_read(directory / "product")),
        # The CPU's own flag: set under any hypervisor (KVM, TCG, Xen, Hyper-V, ...).
        "virtualized": bool(re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M)),
        "lru_gen": _text(_read(directory / "lru_gen")),
    }
    facts["virtualization"] = virtualization(
        _text(_read(directory / "virt")), facts["vendor"], facts["product"],
        facts["virtualized"])
    facts.update(_caches(_read(directory / "caches")))
    return facts


# DMI vendors and products of virtual machines, as systemd-detect-virt knows them (its
# src/basic/virt.c), for a machine without systemd: the guest's busybox init.
_DMI_VIRT = (("QEMU", "qemu"), ("KVM", "kvm"), ("VMware", "vmware"), ("VirtualBox", "oracle"),
             ("innotek", "oracle"), ("Xen", "xen"), ("Bochs", "bochs"), ("Parallels", "parallels"),
             ("BHYVE", "bhyve"), ("Microsoft Corporation Virtual Machine", "microsoft"),
             ("Google Compute Engine", "google"), ("Amazon EC2", "amazon"))


def virtualization(detected: str, vendor: str, product: str, hypervisor_flag: bool) -> str:
    """"none" on bare metal, else the hypervisor's name as `systemd-detect-virt --vm` gives it
    (containers are not machines): its own answer when it ran, else the DMI strings, else
    "unknown" when only the CPU's hypervisor flag says so."""
    if detected and (detected != "none" or not hypervisor_flag):
        return detected
    both = f"{vendor} {product}"
    for mark, name in _DMI_VIRT:
        if mark.lower() in both.lower():
            return name
    return "unknown" if hypervisor_flag else "none"


@functools.cache
def this_machine() -> dict[str, Any]:
    """The facts of the machine this process runs on (a qemu lab host: the guests' host),
    read by the same script the jobs run."""
    with tempfile.TemporaryDirectory(prefix="lorelab-machine-") as tmp:
        subprocess.run(["sh", "-c", f'R="{tmp}"\n{MACHINE_SCRIPT}'], check=False,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        return read_machine(Path(tmp) / MACHINE_DIR)


def _read(path: Path) -> str:
    try:
        with path.open("rb") as file:
            return file.read(MAX_FILE_BYTES).decode(errors="replace")
    except OSError:
        return ""


def _text(value: str) -> str:
    """The first line of `value`, printable characters only, at most MAX_TEXT of them."""
    line = value.strip().split("\n", 1)[0]
    return "".join(c for c in line if c.isprintable())[:MAX_TEXT].strip()


def _first(cpuinfo: str, key: str) -> str:
    match = re.search(rf"^{re.escape(key)}\s*:\s*(.+)$", cpuinfo, re.M)
    return match[1].strip() if match else ""


def _count_cpus(online: str) -> int:
    """CPUs in a kernel CPU list such as "0-3,8-11"."""
    total = 0
    for part in filter(None, online.split(",")):
        first, _, last = part.partition("-")
        try:
            total += int(last or first) - int(first) + 1
        except ValueError:
            return 0
    return total


def _threads_per_core(cpuinfo: str) -> int | None:
    siblings, cores = _first(cpuinfo, "siblings"), _first(cpuinfo, "cpu cores")
    if siblings.isdigit() and cores.isdigit() and int(cores):
        return int(siblings) // int(cores)
    return None


def _memory_kb(meminfo: str) -> int | None:
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", meminfo, re.M)
    return int(match[1]) if match else None


def _caches(text: str) -> dict[str, str]:
    """{"l1d": "32K", "l1i": "32K", "l2": "512K", "l3": "16384K"} from "level type size" lines."""
    names = {("1", "Data"): "l1d", ("1", "Instruction"): "l1i", ("2", "Unified"): "l2",
             ("3", "Unified"): "l3"}
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and (parts[0], parts[1]) in names:
            found[names[(parts[0], parts[1])]] = _text(parts[2])[:16]
    return found
