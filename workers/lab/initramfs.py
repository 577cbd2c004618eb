"""The qemu guest's initramfs: busybox-static, lorelab's own init, and a distro kernel's modules.

Written in pure Python (a gzip'd "newc" cpio archive, the format the kernel unpacks), so no root
and no `cpio` are needed. A kernel built with 9p and virtio built in (the lab's reclaim-vm
config) needs no modules; a distro kernel (Debian's generic one) has them as modules, so the few
the guest needs to mount its shares and disks, with everything they depend on, go into
/lib/modules, and the init loads them in the order written to /lib/modules/load.

Archives are cached by a hash of everything that goes in: the same busybox, init and modules
give the same file, built once.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import shutil
import stat
import struct
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import zstandard

# What the guest init mounts: virtio PCI devices, 9p shares over virtio, ext2 (ext4 serves it
# on distro kernels) on a virtio disk; ext4 asks the crypto API for crc32c when it mounts.
GUEST_MODULES = ("virtio_pci", "virtio_blk", "9pnet_virtio", "9p", "ext4", "crc32c_generic")
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
LOAD_LIST = "lib/modules/load"  # module file names, one a line, in load order
FORMAT_VERSION = b"lorelab-initramfs/1"  # part of the cache key: bump when the layout changes

_DIRECTORIES = ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp",
                "lib", "lib/modules", "job", "host")


class InitramfsError(RuntimeError):
    """The initramfs cannot be built: no static busybox, or a module that is not there."""


@dataclass(frozen=True)
class Entry:
    """One file, directory or device node in the archive (path relative to the root)."""

    path: str
    mode: int  # file type and permission bits, as st_mode
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)  # major, minor of a device node


def cpio_newc(entries: Iterable[Entry]) -> bytes:
    """A "newc" (SVR4, no checksum) cpio archive of `entries`, as the kernel's unpacker reads it.

    Owners are root and times are 0, so that the same entries give the same bytes.
    """
    chunks: list[bytes] = []
    for ino, entry in enumerate([*entries, Entry("TRAILER!!!", 0)], start=1):
        name = entry.path.encode() + b"\0"
        fields = (ino, entry.mode, 0, 0, 1, 0, len(entry.data), 0, 0, *entry.rdev, len(name), 0)
        header = b"070701" + b"".join(b"%08X" % field for field in fields)
        chunks += [header, name, _pad(len(header) + len(name)), entry.data, _pad(len(entry.data))]
    return b"".join(chunks)


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def module_name(path: Path) -> str:
    """The kernel's name of a module file: `crc32c-intel.ko.xz` -> `crc32c_intel`."""
    name = path.name
    for suffix in MODULE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.replace("-", "_")


def module_bytes(path: Path) -> bytes:
    """The module's ELF bytes: compressed modules are unpacked here, so that busybox `insmod`
    loads them whatever decompressors the kernel was built with."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".zst"):
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    return data


def module_dependencies(elf: bytes) -> tuple[str, ...]:
    """The `depends=` list of a module, read from its ELF `.modinfo` section."""
    for field in _section(elf, b".modinfo").split(b"\0"):
        if field.startswith(b"depends="):
            return tuple(name.decode().replace("-", "_")
                         for name in field[len(b"depends="):].split(b",") if name)
    return ()


def _section(elf: bytes, wanted: bytes) -> bytes:
    """The contents of the named section of a 64-bit little-endian ELF file (a kernel module)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise InitramfsError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(index: int) -> tuple[int, int, int]:  # name offset, file offset, size
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", elf, shoff + index * shentsize)
        return name, offset, size

    _, names_at, _ = header(shstrndx)
    for index in range(shnum):
        name_offset, offset, size = header(index)
        start = names_at + name_offset
        if elf[start:elf.index(b"\0", start)] == wanted:
            return elf[offset:offset + size]
    return b""


def module_load_order(modules_dir: Path, wanted: Sequence[str] = GUEST_MODULES
                      ) -> list[tuple[str, bytes]]:
    """(file name, ELF bytes) of `wanted` and all they depend on, each after its dependencies.

    `modules_dir` is a kernel's lib/modules/<version> directory; a wanted module that is built
    into that kernel (listed in its modules.builtin) is skipped, one that is neither raises.
    """
    files = {module_name(p): p for suffix in MODULE_SUFFIXES
             for p in modules_dir.rglob(f"*{suffix}")}
    builtin_list = modules_dir / "modules.builtin"
    builtin = ({module_name(Path(line)) for line in builtin_list.read_text().split()}
               if builtin_list.exists() else set())
    ordered: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name in builtin:
            return
        seen.add(name)
        if name not in files:
            raise InitramfsError(f"module {name} is neither in {modules_dir} nor built in")
        elf = module_bytes(files[name])
        for dependency in module_dependencies(elf):
            visit(dependency)
        ordered.append((f"{name}.ko", elf))

    for name in wanted:
        visit(name)
    return ordered


def static_busybox() -> Path:
    """The installed busybox if it is statically linked (it runs with no libraries in the
    initramfs); InitramfsError saying what to install otherwise."""
    found = shutil.which("busybox") or "/bin/busybox"
    path = Path(found)
    if not path.exists():
        raise InitramfsError("no busybox: install the busybox-static package")
    if _is_dynamic(path.read_bytes()):
        raise InitramfsError(f"{path} is dynamically linked: install the busybox-static package")
    return path


def _is_dynamic(elf: bytes) -> bool:
    """Whether a 64-bit ELF executable has a PT_INTERP program header (asks for a loader)."""
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    return any(struct.unpack_from("<I", elf, phoff + i * phentsize)[0] == 3 for i in range(phnum))


def guest_init() -> str:
    """The text of the guest's /init (workers/lab/guest-init.sh)."""
    return resources.files("workers.lab").joinpath("guest-init.sh").read_text()


def initramfs_entries(busybox: bytes, init: str, modules: Sequence[tuple[str, bytes]]
                      ) -> list[Entry]:
    """Everything in the archive: the directories, /dev/console (the kernel opens it for init's
    output before devtmpfs is mounted), busybox, /init, and the modules with their load list."""
    directory, executable = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755
    entries = [Entry(path, directory) for path in _DIRECTORIES]
    entries += [
        Entry("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)),
        Entry("bin/busybox", executable, busybox),
        Entry("init", executable, init.encode()),
    ]
    if modules:
        entries += [Entry(f"lib/modules/{name}", stat.S_IFREG | 0o644, elf)
                    for name, elf in modules]
        load = "".join(f"{name}\n" for name, _ in modules)
        entries.append(Entry(LOAD_LIST, stat.S_IFREG | 0o644, load.encode()))
    return entries


def build_initramfs(cache_dir: Path, modules_dir: Path | None = None,
                    busybox: Path | None = None, init: str | None = None) -> Path:
    """The gzip'd cpio initramfs for a guest, built once per content and kept in `cache_dir`.

    `modules_dir`: a distro kernel's lib/modules/<version> directory, or None for a kernel with
    what the guest needs built in.
    """
    busybox_bytes = (busybox or static_busybox()).read_bytes()
    init_text = guest_init() if init is None else init
    modules = module_load_order(modules_dir) if modules_dir else []
    key = hashlib.sha256(FORMAT_VERSION)
    for part in (busybox_bytes, init_text.encode(), *(n.encode() + e for n, e in modules)):
        key.update(hashlib.sha256(part).digest())
    target = cache_dir / f"initramfs-{key.hexdigest()[:20]}.cpio.gz"
    if target.exists():
        return target
    archive = cpio_newc(initramfs_entries(busybox_bytes, init_text, modules))
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a concurrent reader never sees half an archive.
    with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".tmp", delete=False) as out:
        out.write(gzip.compress(archive, compresslevel=6, mtime=0))
    os.replace(out.name, target)
    return target

