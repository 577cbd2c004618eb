"""Lab hosts: the machines benchmarks run on, as configured in `[[lab_hosts]]` tables.

Each host has a runner (`local`: this machine's own kernel; `qemu`: boots each kernel in a VM
here; `ssh`: a real machine reached over SSH) and its own Celery queue `lab.<name>`, served by
one worker with concurrency 1, so that two benchmarks never share a machine. With no host
configured there is one, `local`, so that the embedded default can run the stand-in tree.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field

RUNNERS = ("local", "qemu", "ssh")
LRU_CHOICES = ("series", "mglru", "classic", "kernel")


@dataclass
class LabHostSettings:
    name: str
    runner: str = "local"  # local, qemu or ssh
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)  # given to the guest (qemu)
    memory_mb: int = 256  # guest memory (qemu); informative for ssh and local
    queue: str = ""  # empty: lab.<name>
    iterations: int = 1  # benchmark runs per boot; their median is the boot's value
    # The sequential rule's bounds (docs/statistics.md): the first look after pairs_min pairs,
    # inconclusive after pairs_max. Fewer than 4 cannot reach the overall 5% level.
    pairs_min: int = 5
    pairs_max: int = 30
    warmup_pairs: int = 1
    timeout: int = 900  # seconds per boot (qemu, ssh) or per run (local)
    # Which LRU the booted kernel runs (qemu, ssh): "series" (MGLRU when the series changes
    # lru_gen code, else the kernel's own default), "mglru", "classic", or "kernel" (its
    # default, untouched). Switched through /sys/kernel/mm/lru_gen/enabled at boot.
    lru: str = "series"
    # qemu
    accel: str = "auto"  # auto (KVM if a probe boot works, else TCG), kvm or tcg
    qemu: str = "qemu-system-x86_64"
    initramfs_modules: str = ""  # a distro kernel's lib/modules/<version> dir, for 9p/virtio
    scratch_mb: int = 1024  # the ext2 scratch disk for page-cache benchmarks
    swap_mb: int = 512
    # What the guest may read; never /. Exported read-only and mounted at the guest's /usr,
    # where the benchmark's programs and their libraries are found (a merged-usr host has all
    # of them there); the benchmark's own files are copied into the job share instead.
    guest_usr: str = "/usr"
    # ssh
    address: str = ""  # host name or IP
    user: str = "root"
    port: int = 22
    key: str = ""  # private key file
    kernel_dir: str = "/boot/lorelab"  # where the kernel is copied on the machine
    job_dir: str = "/tmp"  # where each run's job directory is made, and removed, on the machine
    # Boots the copied kernel; {kernel} is its path there. Default: kexec, then reboot into it.
    boot_command: str = "kexec -l {kernel} --reuse-cmdline && systemctl kexec"
    boot_id_command: str = "cat /proc/sys/kernel/random/boot_id"

    def __post_init__(self) -> None:
        if self.runner not in RUNNERS:
            raise ValueError(f"lab host {self.name!r}: runner {self.runner!r} is not one of "
                             f"{', '.join(RUNNERS)}")
        if self.runner == "ssh" and not self.address:
            raise ValueError(f"lab host {self.name!r}: an ssh host needs an address")
        if not posixpath.isabs(self.guest_usr) or os.path.realpath(self.guest_usr) == "/":
            raise ValueError(f"lab host {self.name!r}: guest_usr must be an absolute path "
                             f"other than /, not {self.guest_usr!r}: the guest may read it")
        if self.accel not in ("auto", "kvm", "tcg"):
            raise ValueError(f"lab host {self.name!r}: accel must be auto, kvm or tcg")
        if self.lru not in LRU_CHOICES:
            raise ValueError(f"lab host {self.name!r}: lru must be one of "
                             f"{', '.join(LRU_CHOICES)}, not {self.lru!r}")
        if self.iterations < 1:
            raise ValueError(f"lab host {self.name!r}: iterations must be at least 1")
        if not self.pairs_max >= 4 or not 1 <= self.pairs_min <= self.pairs_max:
            raise ValueError(f"lab host {self.name!r}: need 1 <= pairs_min <= pairs_max and "
                             "pairs_max >= 4")

    @property
    def queue_name(self) -> str:
        return self.queue or f"lab.{self.name}"


DEFAULT_HOST = LabHostSettings(name="local", runner="local")


def configured_hosts(hosts: list[LabHostSettings]) -> list[LabHostSettings]:
    """The configured hosts, or the built-in `local` one when none is."""
    return list(hosts) or [DEFAULT_HOST]


def find_host(hosts: list[LabHostSettings], name: str | None) -> LabHostSettings:
    """The host called `name` (the first one if None); ValueError naming the known ones."""
    known = configured_hosts(hosts)
    if name is None:
        return known[0]
    for host in known:
        if host.name == name:
            return host
    raise ValueError(f"no lab host {name!r}; configured: {', '.join(h.name for h in known)}")


def queue_names(hosts: list[LabHostSettings]) -> list[str]:
    """Every Celery queue a deployment serves: `git` (apply, report), `build`, and each lab
    host's own."""
    return ["git", "build", *(h.queue_name for h in configured_hosts(hosts))]
