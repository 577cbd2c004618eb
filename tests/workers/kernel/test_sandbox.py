"""The build sandbox on its own: no network, a minimal environment, limits that bite, the
host's secrets hidden."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.paths import REPO, TESTS
from workers.kernel import sandbox
from workers.kernel.sandbox import (
    Limits,
    SandboxError,
    SandboxResult,
    hidden_paths,
    minimal_env,
    run_sandboxed,
    secret_roots,
)


def _run(tmp_path: Path, script: str, **limits: float) -> SandboxResult:
    return run_sandboxed(["sh", "-c", script], cwd=tmp_path, writable=[tmp_path],
                         limits=Limits(**{"wall_seconds": 30, **limits}),  # type: ignore[arg-type]
                         env=minimal_env(tmp_path))


def test_no_network_and_no_parent_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LORELAB_SMTP_PASSWORD", "hunter2-in-the-parent")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    result = _run(tmp_path, f"python3 -c 'import socket; socket.create_connection("
                            f"(\"127.0.0.1\", {port}), 2)' || echo BLOCKED; env; "
                            f"cat /proc/{os.getpid()}/environ || echo NO-PARENT")
    server.close()
    assert "BLOCKED" in result.output and "NO-PARENT" in result.output
    assert "hunter2" not in result.output
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert "LORELAB_SMTP_PASSWORD" not in names and names >= {"PATH", "HOME"}


def test_only_the_writable_directories_can_be_written(tmp_path):
    outside = TESTS / f"sandbox-probe-{os.getpid()}"
    result = _run(tmp_path, f"touch {outside} || echo RO; touch {tmp_path}/ok && echo RW")
    assert "RO" in result.output and "RW" in result.output
    assert not outside.exists() and (tmp_path / "ok").exists()


def test_wall_clock_limit_kills_the_whole_tree(tmp_path):
    result = _run(tmp_path, "sleep 60 & sleep 60; echo never", wall_seconds=1)
    # The sleeps it must not wait for take 60 s: it stopped the tree, not waited for it.
    assert result.timed_out and result.seconds < 60 and "never" not in result.output
    assert "wall-clock limit" in result.output


def test_output_is_capped_keeping_the_start_and_the_end(tmp_path):
    result = _run(tmp_path, "echo FIRST; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo LAST",
                  max_log_bytes=65536)
    assert result.truncated and len(result.output) < 70000
    assert result.output.startswith("FIRST") and result.output.rstrip().endswith("LAST")


def test_memory_and_cpu_limits(tmp_path):
    big = _run(tmp_path, "python3 -c 'x = bytearray(1 << 30)' || echo NOMEM", memory_mb=256)
    assert "NOMEM" in big.output
    spin = _run(tmp_path, "python3 -c 'while True: pass'; echo rc=$?", cpu_seconds=1)
    assert "rc=137" in spin.output or "rc=152" in spin.output  # SIGKILL or SIGXCPU


def test_workers_never_import_the_cli_or_a_web_module():
    code = ("import sys, workers.app, workers.tasks, workers.kernel.steps, workers.kernel.build, "
            "workers.kernel.apply; bad = [m for m in sys.modules if m.startswith(('bot.cli', "
            "'bot.web'))]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


SECRET = "lorelab-test-secret-" + uuid.uuid4().hex[:8]


def _secret(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SECRET + "\n")
    return path


def test_secret_roots_are_the_home_the_data_and_the_config_directories(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LORELAB_CONFIG", str(tmp_path / "etc" / "config.toml"))
    roots = secret_roots()
    assert {tmp_path / "home", tmp_path / "data", tmp_path / "etc",
            tmp_path / "home" / ".config" / "lorelab"} <= set(roots)
    assert {Path("/root"), Path("/home"), Path("/etc/ssh"), Path("/var")} <= set(roots)


def test_secrets_are_hidden_and_what_the_job_was_given_is_not(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LORELAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LORELAB_CONFIG", str(tmp_path / "etc" / "config.toml"))
    secrets = [
        _secret(home / ".ssh" / "id_ed25519"),
        _secret(home / "notes.txt"),  # a file beside the tree: /dev/null over it
        _secret(home / "a key\nwith a newline" / "key"),
        _secret(home / "sp ace.txt"),
        _secret(tmp_path / "data" / "lorelab.db"),
        _secret(tmp_path / "etc" / "smtp-password"),
    ]
    (tmp_path / "etc" / "config.toml").write_text('[report]\nsmtp_password_file = "x"\n')
    # A kept path with a space in it, given through a symlink.
    (home / "src dir" / "linux").mkdir(parents=True)
    (home / "src dir" / "linux" / "Makefile").write_text("all:\n")
    (home / "trees").symlink_to(home / "src dir")
    tree = home / "trees" / "linux"
    objdir = home / ".local" / "share" / "lorelab" / "build" / "obj"
    objdir.mkdir(parents=True)
    cats = "; ".join(f"cat {shlex.quote(str(p))}" for p in secrets)
    script = (f"{cats}; echo ssh=[$(ls -A {home}/.ssh)]; echo data=[$(ls -A {tmp_path}/data)]; "
              f"cat {shlex.quote(str(tree / 'Makefile'))}; touch {objdir}/built && echo WROTE")
    result = run_sandboxed(["sh", "-c", script], cwd=objdir, writable=[objdir],
                           readable=[tree], limits=Limits(wall_seconds=30),
                           env=minimal_env(objdir))
    assert SECRET not in result.output
    assert "ssh=[]" in result.output and "data=[]" in result.output
    assert "all:" in result.output and "WROTE" in result.output
    assert (objdir / "built").exists()
    assert "+secrets-hidden+no-capabilities" in result.isolation


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to write in /root")
def test_a_secret_in_the_real_root_home_is_hidden(tmp_path):
    secrets = Path(tempfile.mkdtemp(prefix="lorelab-test-", dir="/root"))
    try:
        secret = _secret(secrets / "id_rsa")
        result = _run(tmp_path, f"cat {secret}; echo root=[$(ls -A /root)]")
    finally:
        shutil.rmtree(secrets)
    assert SECRET not in result.output and "root=[]" in result.output


def test_a_job_running_as_root_cannot_undo_the_hiding(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    secret = _secret(home / ".ssh" / "id_ed25519")
    disks = [entry.path for entry in os.scandir("/dev")
             if stat.S_ISBLK(entry.stat(follow_symlinks=False).st_mode)]
    result = _run(tmp_path, f"umount {secret.parent} || echo UMOUNT-DENIED; cat {secret}; "
                            "mount -o remount,rw / || echo REMOUNT-DENIED; "
                            "[ -w /proc/sys/kernel/core_pattern ] || echo KNOBS-READ-ONLY; "
                            + "".join(f"[ -b {disk} ] && echo DISK {disk}; " for disk in disks)
                            + "true")
    assert SECRET not in result.output
    assert "UMOUNT-DENIED" in result.output and "REMOUNT-DENIED" in result.output
    assert "KNOBS-READ-ONLY" in result.output and "DISK" not in result.output


def test_a_path_gone_before_it_is_covered_is_no_error_but_one_left_readable_stops_the_job(
        tmp_path, monkeypatch):
    # Files come and go between listing and mounting (another build's temporary files): only
    # a path that still exists uncovered must stop the job.
    secret = _secret(tmp_path / "home" / "id rsa")
    table = sandbox.mount_table
    monkeypatch.setattr(sandbox, "mount_table", lambda hidden: table(hidden) + (
        f"/dev/null {tmp_path}/gone none bind,ro 0 0\n"))
    assert _run(tmp_path, "echo RAN").output == "RAN\n"
    escaped = str(secret).replace(" ", "\\040")
    monkeypatch.setattr(sandbox, "mount_table",
                        lambda hidden: f"/no/such/source {escaped} none bind,ro 0 0\n")
    result = _run(tmp_path, f"cat '{secret}'; echo RAN")
    assert result.returncode != 0 and "RAN" not in result.output
    assert SECRET not in result.output and f"cannot hide {secret}" in result.output


def _tree(root: Path) -> dict[str, Path]:
    """home/{a/{kept/x, sib/s}, b/s, f.txt, to-outside -> outside/secret, to-usr -> /usr/bin,
    alias -> a/kept, loop -> loop} and outside/{secret/k, other}, under `root`."""
    home, outside = root / "home", root / "outside"
    for path in (home / "a/kept/x", home / "a/sib/s", home / "b/s", home / "f.txt",
                 outside / "secret/k", outside / "other"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    (home / "to-outside").symlink_to(outside / "secret")
    (home / "to-usr").symlink_to("/usr/bin")
    (home / "alias").symlink_to(home / "a" / "kept")
    (home / "loop").symlink_to(home / "loop")
    return {"home": home, "outside": outside}


def test_hidden_paths_hides_all_but_the_kept_paths_and_the_directories_leading_to_them(tmp_path):
    paths = _tree(tmp_path)
    home = paths["home"]
    # Kept through a symlink: its target is what stays, and what leads to it.
    hidden = hidden_paths([home], [home / "alias"])
    assert set(hidden) == {home / "b", home / "f.txt", home / "a" / "sib",
                           paths["outside"] / "secret"}
    # The link to /usr/bin is left alone, and so is the link itself (a mount would follow it).
    assert not any(p == Path("/usr/bin") or p.is_symlink() for p in hidden)
    # Kept through a symlinked directory under another root: the link stays usable.
    outside = paths["outside"]
    assert set(hidden_paths([home, outside], [home / "to-outside" / "k"])) == {
        home / "a", home / "b", home / "f.txt", outside / "other"}
    # Nothing kept under a root: the whole root, once (the roots inside it add nothing).
    assert hidden_paths([home, home / "a", tmp_path / "nowhere"], []) == [home]


def test_hidden_paths_a_secret_root_inside_a_kept_directory_is_still_hidden(tmp_path):
    paths = _tree(tmp_path)
    home = paths["home"]
    assert hidden_paths([home / "a" / "kept"], [home]) == [home / "a" / "kept"]
    assert hidden_paths([home / "a" / "kept"], [home, home / "a" / "kept" / "x"]) == []


def test_hidden_paths_never_hides_the_system_and_caps_the_work(tmp_path):
    assert hidden_paths([Path("/")], [tmp_path]) == []  # a home of "/" is not walked
    big = tmp_path / "home"
    (big / "tree").mkdir(parents=True)
    (tmp_path / "file").touch()
    for i in range(9_999):
        os.link(tmp_path / "file", big / f"f{i}")  # entries, cheaper to make than new files
    assert len(hidden_paths([big], [big / "tree"])) == 9_999
    with pytest.raises(SandboxError, match=f"9999 of them in {big}"):
        hidden_paths([big], [big / "tree"], limit=5000)


@pytest.mark.skipif(not Path("/sys/fs/cgroup/pids").is_dir() or os.geteuid() != 0,
                    reason="needs root and a cgroup v1 pids hierarchy (this lab host's)")
def test_a_job_can_write_only_its_own_cgroup(tmp_path):
    # Elsewhere in the tree it could freeze another cgroup, raise its limits or leave them.
    # Its pids hierarchy's root is its own cgroup: moving there keeps it inside.
    result = _run(tmp_path, "echo $$ > /sys/fs/cgroup/pids/cgroup.procs; "
                            "echo 0 > /sys/fs/cgroup/memory/tasks; "
                            "mkdir /sys/fs/cgroup/freezer/lorelab-probe || echo NO-FREEZER; "
                            "mkdir /sys/fs/cgroup/cpuset/lorelab-probe || echo NO-CPUSET; "
                            "echo 1 > /sys/fs/cgroup/unified/cgroup.procs || echo NO-V2; "
                            "mkdir /sys/fs/cgroup/pids/mine && echo OWN-CGROUP; "
                            "grep -E ':(pids|memory):' /proc/self/cgroup")
    assert "NO-FREEZER" in result.output and "NO-CPUSET" in result.output
    assert "NO-V2" in result.output and "OWN-CGROUP" in result.output
    assert not Path("/sys/fs/cgroup/freezer/lorelab-probe").exists()
    cgroups = [line for line in result.output.splitlines() if line[:1].isdigit()]
    assert len(cgroups) == 2 and all("/lorelab-job-" in line for line in cgroups), cgroups
    own = next(line for line in cgroups if ":pids:" in line).split(":", 2)[2]
    assert not Path("/sys/fs/cgroup/pids" + own.split("/job/")[0]).exists()  # and it is gone
