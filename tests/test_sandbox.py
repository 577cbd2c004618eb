"""The build sandbox on its own: no network, a minimal environment, limits that bite."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from workers.sandbox import Limits, SandboxResult, minimal_env, run_sandboxed


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
    outside = Path(__file__).parent / f"sandbox-probe-{os.getpid()}"
    result = _run(tmp_path, f"touch {outside} || echo RO; touch {tmp_path}/ok && echo RW")
    assert "RO" in result.output and "RW" in result.output
    assert not outside.exists() and (tmp_path / "ok").exists()


def test_wall_clock_limit_kills_the_whole_tree(tmp_path):
    result = _run(tmp_path, "sleep 60 & sleep 60; echo never", wall_seconds=1)
    assert result.timed_out and result.seconds < 15 and "never" not in result.output
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
    code = ("import sys, workers.app, workers.tasks, workers.pipeline, workers.build, "
            "workers.apply; bad = [m for m in sys.modules if m.startswith(('bot.cli', "
            "'bot.web'))]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
