"""The test machine a reply describes, from the facts the runner recorded where the samples came
from (workers/lab/machine.py): the guest and its host for a qemu lab host, the machine for an
ssh one, this host for a local one. Nothing here is assumed: a fact not recorded is not said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.report.compose.results import Machine

# A qemu host's accel mode, as its samples record it.
GUESTS = {"tcg": "QEMU guest under TCG (emulated CPU, no KVM)", "kvm": "QEMU guest under KVM"}


def machine_from_facts(facts: Mapping[str, Any], *, host: str, runner: str, accel: str,
                       cores: int) -> Machine:
    """The Machine of one kernel's boots; `cores` is the host's configured count, used only
    when the facts do not give one."""
    if not facts:
        # A campaign stored before machines were recorded: say only what is known.
        return Machine(cpu="CPU not recorded", cores=cores, boot=GUESTS.get(
            accel, f"{runner} lab host"), host=host, runner=runner)
    cpus = int(facts.get("cpus") or facts.get("vcpus") or cores)
    per_core = facts.get("threads_per_core")
    memory = _memory(facts.get("memory_kb"))
    if runner == "qemu" and facts.get("guest_memory_mb") and not memory:
        memory = _memory(int(facts["guest_memory_mb"]) * 1024)
    return Machine(
        cpu=str(facts.get("cpu") or "unknown CPU"), cores=cpus // per_core if per_core else cpus,
        threads=cpus if per_core else None, l1d=_size(facts.get("l1d")),
        l1i=_size(facts.get("l1i")), l2=_size(facts.get("l2")), l3=_size(facts.get("l3")),
        memory=memory, numa_nodes=int(facts.get("numa_nodes") or 1),
        boot=_what_ran(facts, runner, accel), host=host, runner=runner,
        kernel=str(facts.get("kernel") or ""),
        host_machine=_host_machine(facts.get("host")) if runner == "qemu" else "",
        lru=lru_words(facts.get("lru_gen")) if runner != "local" else "")


def _what_ran(facts: Mapping[str, Any], runner: str, accel: str) -> str:
    if runner == "qemu" or accel in GUESTS:
        return GUESTS.get(str(facts.get("accel") or accel), "QEMU guest")
    return _virtual_or_not(facts)


def _virtual_or_not(facts: Mapping[str, Any]) -> str:
    virt = str(facts.get("virtualization") or "")
    if virt == "none" or (not virt and facts.get("virtualized") is False):
        return "bare metal"
    return f"virtual machine ({virt})" if virt and virt != "unknown" else "virtual machine"


def _host_machine(host: Any) -> str:
    """E.g. "AMD EPYC 7B13, 2 cores, 23.5 GiB memory, a virtual machine (kvm)"."""
    if not isinstance(host, Mapping) or not host.get("cpu"):
        return ""
    cpus = int(host.get("cpus") or 0)
    per_core = host.get("threads_per_core")
    parts = [str(host["cpu"])]
    if cpus:
        parts.append(f"{cpus // per_core if per_core else cpus} cores")
    if memory := _memory(host.get("memory_kb")):
        parts.append(f"{memory} memory")
    kind = _virtual_or_not(host)
    parts.append("bare metal" if kind == "bare metal" else f"itself a {kind}")
    return ", ".join(parts)


def lru_words(lru_gen: Any) -> str:
    """/sys/kernel/mm/lru_gen/enabled's value in words; "" when it was not read."""
    text = str(lru_gen or "").strip()
    if not text:
        return ""
    try:
        enabled = int(text, 16) & 1
    except ValueError:
        return ""
    if enabled:
        return f"MGLRU (multi-gen LRU; /sys/kernel/mm/lru_gen/enabled = {text})"
    return f"the two-list active/inactive LRU (MGLRU built in but off: enabled = {text})"


def _size(kernel_size: object) -> str:
    """"32K" (as /sys says) as lscpu prints it: "32 KiB"; "16384K" -> "16 MiB"."""
    text = str(kernel_size or "")
    if not text.endswith("K") or not text[:-1].isdigit():
        return text
    kib = int(text[:-1])
    return f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib} KiB"


def _memory(kb: object) -> str:
    if not isinstance(kb, int) or kb <= 0:
        return ""
    mib = kb / 1024
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"
