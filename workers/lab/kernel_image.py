"""Kernel images for the qemu runner: Debian's kernel without building one, and the uncompressed
kernel inside a bzImage, which boots about 4 s sooner under TCG.

Debian's kernel, for the qemu runner's tests and benchmarks: `linux-image-amd64` is a
metapackage; the kernel package it depends on (`linux-image-6.1.0-57-amd64`, ...) is downloaded
with `apt-get download` and unpacked with `dpkg-deb -x` (no root, nothing installed) into a cache
directory, once per package version. Its modules are loose in lib/modules/<version>, without the
modules.dep that depmod writes at install time: workers.lab.initramfs reads the dependencies from
the modules.

Direct boot: a bzImage is a decompressor and the compressed kernel (an ELF file). Under TCG the
decompressor is emulated and takes seconds (Debian's xz kernel: about 4 s of a 7 s boot to the
init); a kernel built with CONFIG_PVH has an ELF note that lets qemu start the ELF file itself.
`direct_boot_image` unpacks it here, in a fraction of a second, once per bzImage. The running
kernel is the same code; only its entry differs, and it is not relocated at random (no KASLR),
which if anything removes a source of noise between boots.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import zstandard

METAPACKAGE = "linux-image-amd64"
XEN_ELFNOTE_PHYS32_ENTRY = 18  # the PVH entry point note ("Xen" owner) qemu looks for


class KernelImageError(RuntimeError):
    """No kernel package could be found, downloaded or unpacked; the message says why."""


@dataclass(frozen=True)
class DistroKernel:
    """An unpacked distro kernel: what qemu boots and the modules its initramfs needs."""

    package: str
    vmlinuz: Path
    modules: Path  # lib/modules/<version>

    @property
    def version(self) -> str:
        return self.modules.name


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/lorelab (~/.cache/lorelab): kernels and initramfs archives."""
    return Path(platformdirs.user_cache_dir("lorelab"))


def kernel_package(metapackage: str = METAPACKAGE) -> str:
    """The versioned kernel package the metapackage depends on, from `apt-cache depends`."""
    try:
        out = subprocess.run(["apt-cache", "depends", metapackage], capture_output=True,
                             text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise KernelImageError("apt-cache is not installed: this needs a Debian system") from None
    match = re.search(r"^\s*Depends:\s*(linux-image-\S+)\s*$", out.stdout, re.M)
    if not match:
        raise KernelImageError(f"apt-cache knows no kernel package behind {metapackage} "
                               f"(run apt-get update?): {out.stderr.strip() or out.stdout}")
    return match.group(1)


def unpacked(package: str, root: Path) -> DistroKernel | None:
    """The kernel unpacked in `root`, or None if it holds none."""
    images = sorted((root / "boot").glob("vmlinuz-*"))
    if not images:
        return None
    version = images[-1].name.removeprefix("vmlinuz-")
    return DistroKernel(package, images[-1], root / "lib" / "modules" / version)


def debian_kernel(cache_dir: Path | None = None, metapackage: str = METAPACKAGE
                  ) -> DistroKernel:
    """Debian's current generic kernel, downloaded and unpacked on first use, then cached."""
    package = kernel_package(metapackage)
    kernels = (cache_dir or default_cache_dir()) / "kernels"
    target = kernels / package
    found = unpacked(package, target)
    if found:
        return found
    kernels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=kernels, prefix=".download-") as tmp:
        work = Path(tmp)
        # apt's download sandbox user may not be able to write here; root then downloads
        # itself, with a warning on stderr that is not an error.
        _run(["apt-get", "download", package], work, f"downloading {package}")
        debs = list(work.glob("*.deb"))
        if len(debs) != 1:
            raise KernelImageError(f"apt-get download {package} left {len(debs)} .deb files")
        _run(["dpkg-deb", "-x", str(debs[0]), str(work / "root")], work, f"unpacking {package}")
        if unpacked(package, work / "root") is None:
            raise KernelImageError(f"{package} holds no boot/vmlinuz-*")
        try:
            # Renamed into place whole: a concurrent caller sees all of it or none.
            os.rename(work / "root", target)
        except OSError:
            if unpacked(package, target) is None:  # not a concurrent winner: a real failure
                raise
    found = unpacked(package, target)
    assert found is not None
    return found


def _run(argv: list[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900,
                              check=False)
    except FileNotFoundError:
        raise KernelImageError(f"{argv[0]} is not installed: this needs a Debian system") from None
    if done.returncode != 0:
        raise KernelImageError(f"{what} failed ({argv[0]} exited {done.returncode}): "
                               f"{done.stderr.strip()[-1000:]}")


def direct_boot_image(bzimage: Path, cache_dir: Path) -> Path | None:
    """The uncompressed kernel of `bzimage` if qemu can boot it directly (an ELF file with a PVH
    entry note), unpacked once into `cache_dir`; None if it cannot (no PVH, not a bzImage, a
    compression other than gzip, xz or zstd)."""
    data = bzimage.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:20]
    target, unusable = cache_dir / f"{digest}.elf", cache_dir / f"{digest}.no-pvh"
    if target.exists():
        return target
    if unusable.exists():
        return None
    elf = _payload(data)
    cache_dir.mkdir(parents=True, exist_ok=True)
    if elf is None or not _has_pvh_note(elf):
        unusable.touch()  # remembered: the next boot does not unpack it again to find out
        return None
    with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".tmp", delete=False) as out:
        out.write(elf)
    os.replace(out.name, target)
    return target


def is_kernel_image(path: Path) -> bool:
    """Whether `path` is an x86 kernel image (the boot protocol's "HdrS" header)."""
    try:
        with path.open("rb") as file:
            head = file.read(0x206)
    except OSError:
        return False
    return head[0x202:0x206] == b"HdrS"


def _payload(bzimage: bytes) -> bytes | None:
    """The decompressed kernel of a bzImage (x86 boot protocol 2.08+), or None."""
    if len(bzimage) < 0x250 or bzimage[0x202:0x206] != b"HdrS":
        return None
    version = struct.unpack_from("<H", bzimage, 0x206)[0]
    if version < 0x208:
        return None
    setup_sectors = bzimage[0x1F1] or 4
    offset, length = struct.unpack_from("<II", bzimage, 0x248)
    start = (setup_sectors + 1) * 512 + offset
    payload = bzimage[start:start + length]
    try:
        if payload.startswith(b"\x1f\x8b"):
            # The kernel appends the uncompressed size after the gzip stream: ignored.
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(payload)
        if payload.startswith(b"\xfd7zXZ\x00"):
            return lzma.LZMADecompressor().decompress(payload)
        if payload.startswith(b"\x28\xb5\x2f\xfd"):
            return zstandard.ZstdDecompressor().decompressobj().decompress(payload)
    except (zlib.error, lzma.LZMAError, zstandard.ZstdError):
        return None
    return None


def _has_pvh_note(elf: bytes) -> bool:
    """Whether a 64-bit ELF file has the Xen PHYS32_ENTRY note in a PT_NOTE segment."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return False
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for index in range(phnum):
        kind, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", elf, phoff + index * phentsize)
        if kind != 4:  # PT_NOTE
            continue
        at, end = offset, offset + size
        while at + 12 <= end:
            name_size, desc_size, note_type = struct.unpack_from("<III", elf, at)
            name = elf[at + 12:at + 12 + name_size].rstrip(b"\0")
            if name == b"Xen" and note_type == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            at += 12 + (name_size + 3) // 4 * 4 + (desc_size + 3) // 4 * 4
    return False
