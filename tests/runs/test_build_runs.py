"""`lorelab apply` / `lorelab build` on the stand-in simulator tree, end to end.

Real git (worktrees, am -3), real make and gcc, the real sandbox (network and PID namespaces,
read-only mounts), on the embedded default (Celery eager, SQLite) and on a real Celery worker
with Redis.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.config import IngestSettings
from bot.db.models import Run, RunStep
from bot.db.session import Database, ensure_schema
from bot.demo.simtree import BATCH_COUNTERS, batch_series_spec, make_sim_tree, ops_per_second
from bot.demo.threads import Change, make_series
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from tests.cli import Lorelab
from tests.conftest import redis_reason
from tests.support.gitrepo import git
from tests.support.paths import REPO
from tests.support.redis_broker import private_broker

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

SECRET = "s3cret-smtp-password-" + uuid.uuid4().hex[:8]


class Lab:
    """A simulator tree, one series ingested, and `lorelab` configured to build it."""

    def __init__(self, root: Path, changes: tuple[Change, ...] = BATCH_COUNTERS,
                 broker_url: str = "") -> None:
        self.root = root
        self.tree = make_sim_tree(root / "linux")
        spec = batch_series_spec(changes=changes, patches=len(changes))
        messages = make_series(self.tree, spec)
        self.db_url = f"sqlite:///{root / 'lorelab.db'}"
        self.db = Database(self.db_url)
        ensure_schema(self.db.engine)
        ingest(self.db, [RawMail(m, f"t{i}") for i, m in enumerate(messages)],
               settings=IngestSettings(parse_workers=0), list_name="linux-mm")
        self.work = root / "work"
        self.config = root / "config.toml"
        self.config.write_text(
            f'[[trees]]\nname = "sim"\npath = "{self.tree}"\n\n'
            f'[build]\nwork_dir = "{self.work}"\nbase_config = "defconfig"\nfragments = []\n'
            'jobs = 2\n\n'
            f'[celery]\nbroker_url = "{broker_url}"\n'
        )
        self.cli = Lorelab(root / "home", self.db_url)
        self.cli.env["LORELAB_CONFIG"] = str(self.config)

    def run_row(self, run_id: int) -> dict[str, dict]:
        with self.db.session() as session:
            steps = session.scalars(sa.select(RunStep).where(RunStep.run_id == run_id))
            return {s.name: {"state": s.state, "result": s.result, "log": s.log_excerpt,
                             "error": s.error, "host": s.host} for s in steps}


def _step(run: dict, name: str) -> dict:
    return next(s for s in run["steps"] if s["name"] == name)


def _simulate(artifact_dir: str) -> float:
    out = subprocess.run([str(Path(artifact_dir) / "bzImage"), "300000"], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return ops_per_second(out)


def test_build_applies_in_a_worktree_and_builds_base_then_patched_incrementally(tmp_path):
    lab = Lab(tmp_path)
    head_before = git(lab.tree, "rev-parse", "HEAD")
    proc = lab.cli.run("build", "1", "--json")
    import json

    run = json.loads(proc.stdout)
    assert run["state"] == "done", run
    assert run["base_commit"] == head_before.strip()
    assert "base-commit" in run["base_reason"]
    apply, base, patched = (_step(run, n) for n in ("apply", "build-base", "build-patched"))
    assert apply["result"]["applied"] == 2 and apply["host"]
    # the maintainer's checkout is untouched and no run worktree is left behind
    assert git(lab.tree, "rev-parse", "HEAD") == head_before
    assert git(lab.tree, "status", "--porcelain") == ""
    assert list((lab.work / "worktrees" / "sim").iterdir()) == []
    # both "kernels" run; the patched build recompiled only what the series touched
    assert _simulate(base["result"]["artifact_dir"]) > 0
    assert _simulate(patched["result"]["artifact_dir"]) > 0
    log = lab.run_row(run["id"])["build-patched"]["log"]
    assert "mm/vmscan.c" in log and "init/main.c" not in log
    assert base["result"]["isolation"].startswith(("netns", "userns"))
    assert base["result"]["objdir"] == patched["result"]["objdir"]


def test_second_build_of_the_same_base_comes_from_the_cache(tmp_path):
    lab = Lab(tmp_path)
    first = lab.cli.json("build", "1")
    objdir = Path(_step(first, "build-base")["result"]["objdir"])
    vmscan_o = objdir / "mm/vmscan.o"
    stamp = vmscan_o.stat().st_mtime_ns
    second = lab.cli.json("build", "1")
    assert second["state"] == "done"
    for name in ("build-base", "build-patched"):
        assert _step(second, name)["result"]["cached"] is True
        assert _step(second, name)["result"]["cache_key"] == _step(first, name)["result"][
            "cache_key"]
    assert vmscan_o.stat().st_mtime_ns == stamp  # nothing was compiled again
    shown = lab.cli.run("runs", "show", str(second["id"])).stdout.decode()
    assert "(cached)" in shown


def test_conflict_records_the_failing_patch_and_the_conflicting_hunks(tmp_path):
    lab = Lab(tmp_path)
    vmscan = lab.tree / "mm/vmscan.c"
    vmscan.write_text(vmscan.read_text().replace("#define VM_EVENT_BATCH\t\t1",
                                                 "#define VM_EVENT_BATCH\t\t8"))
    git(lab.tree, "commit", "-q", "-am", "mm/vmscan: batch by 8")
    proc = lab.cli.run("apply", "1", "--base", "master", "--json", check=False)
    assert proc.returncode == 1
    import json

    run = json.loads(proc.stdout)
    apply = _step(run, "apply")
    assert run["state"] == apply["state"] == "failed"
    assert apply["result"]["failed_patch"].startswith("0001 mm/vmscan: batch reclaim event")
    assert [c["path"] for c in apply["result"]["conflicts"]] == ["mm/vmscan.c"]
    assert "VM_EVENT_BATCH" in apply["result"]["conflicts"][0]["hunks"]
    assert "does not apply" in apply["error"]
    assert list((lab.work / "worktrees" / "sim").iterdir()) == []
    assert "rebase-apply" not in os.listdir(lab.tree / ".git")
    text = lab.cli.run("runs", "show", str(run["id"])).stdout.decode()
    assert "conflict in mm/vmscan.c" in text
    assert "outcome: does not apply (the series does not apply: patch 0001" in text


def test_build_error_records_the_first_compiler_errors(tmp_path):
    broken = Change("mm/vmscan.c", "\t\tsc->nr_reclaimed++;", ("\t\tsc->nr_reclaimed++ oops;",),
                    "mm/vmscan: count reclaimed folios", "Count them.")
    lab = Lab(tmp_path, changes=(broken,))
    proc = lab.cli.run("build", "1", "--json", check=False)
    assert proc.returncode == 1
    import json

    run = json.loads(proc.stdout)
    assert _step(run, "build-base")["state"] == "done"
    patched = _step(run, "build-patched")
    assert patched["state"] == "failed"
    first = patched["result"]["errors"][0]
    line = next(i for i, text in enumerate((lab.tree / "mm/vmscan.c").read_text().splitlines(),
                                           start=1) if text == "\t\tsc->nr_reclaimed++;")
    assert first["location"].startswith(f"mm/vmscan.c:{line}:")
    assert any("oops" in x for x in first["excerpt"])
    assert f"mm/vmscan.c:{line}" in patched["error"]


class _Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def settled(self) -> int:
        """The count once pending connections were accepted."""
        deadline = time.monotonic() + 3
        count = self.accepted
        while time.monotonic() < deadline:
            time.sleep(0.1)
            if self.accepted == count and count:
                break
            count = self.accepted
        return self.accepted


def test_sandbox_keeps_a_patched_makefile_off_the_network_and_away_from_secrets(tmp_path):
    # The worker's home holds the tree, the build directory, the database and an SSH key: the
    # tree still builds, and the key and the database cannot be read.
    home = tmp_path / "home"
    key = home / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_text(f"PRIVATE KEY {SECRET}\n")
    server = _Listener()
    probe = (f"\t@python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "
             f"{server.port}), 3)' && echo NET-REACHED || echo NET-BLOCKED\n"
             "\t@echo \"secret=[$$LORELAB_SMTP_PASSWORD]\"\n"
             "\t@cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c SMTP_PASSWORD"
             " || echo no-environ-leak\n"
             "\t@touch $(srctree)/pwned 2>/dev/null || echo SRC-READONLY\n"
             f"\t@cat {key} {home}/lorelab.db 2>&1 | head -c 200 || true\n"
             f"\t@echo \"ssh=[$$(ls -A {key.parent})]\"")
    # bzImage is phony: its recipe runs on every build
    evil = Change("Makefile", "bzImage: $(IMAGE)", ("bzImage: $(IMAGE)\n" + probe,),
                  "kbuild: say when the image is ready", "Friendlier.")
    lab = Lab(home, changes=(evil,))
    lab.cli.env["HOME"] = str(home)
    # on a non-loopback-only host the probe is also reachable: prove the server answers here
    socket.create_connection(("127.0.0.1", server.port), 3).close()
    assert server.settled() == 1
    proc = lab.cli.run("build", "1", "--json", LORELAB_SMTP_PASSWORD=SECRET)
    import json

    run = json.loads(proc.stdout)
    assert run["state"] == "done"
    log = lab.run_row(run["id"])["build-patched"]["log"]
    assert "NET-BLOCKED" in log and "NET-REACHED" not in log
    assert server.settled() == 1
    assert SECRET not in log and "secret=[]" in log and "no-environ-leak" in log
    assert "SRC-READONLY" in log and not list(lab.work.rglob("pwned"))
    assert "SQLite format" not in log and "ssh=[]" in log


def test_sandbox_refuses_paths_outside_the_tree():
    from workers.kernel.apply import UnsafePatch, check_patch_paths

    def mbox(path: str) -> bytes:
        return (f"From x\nSubject: [PATCH] x\n\n---\ndiff --git a/{path} b/{path}\n"
                f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n").encode()

    check_patch_paths(mbox("mm/vmscan.c"))
    for bad in ("../etc/passwd", ".git/hooks/post-checkout", "mm/../../x", "/etc/shadow"):
        with pytest.raises(UnsafePatch):
            check_patch_paths(mbox(bad).replace(b"a//", b"/").replace(b"b//", b"/"))


def test_stale_worktree_of_a_killed_run_is_pruned(tmp_path):
    lab = Lab(tmp_path)
    stale = lab.work / "worktrees" / "sim" / "run-77"
    stale.parent.mkdir(parents=True)
    git(lab.tree, "worktree", "add", "--detach", "-q", str(stale), "master")
    (stale / "mm/vmscan.c").write_text("half-applied")
    run = lab.cli.json("apply", "1")
    assert run["state"] == "done"
    assert not stale.exists()
    assert "run-77" not in git(lab.tree, "worktree", "list")


def test_a_crashed_step_is_shown_and_resumed(tmp_path):
    lab = Lab(tmp_path)
    run = lab.cli.json("apply", "1", "--no-wait")
    with lab.db.session() as session:  # as a worker killed mid-step leaves it
        step = session.scalar(sa.select(RunStep).where(RunStep.run_id == run["id"]))
        step.state, step.host = "running", "gone-host:4242"
        session.get(Run, run["id"]).state = "running"
    listed = lab.cli.json("runs", "list")
    assert listed[0]["steps"][0]["state"] == "running"
    assert listed[0]["steps"][0]["host"] == "gone-host:4242"
    # Another machine's worker cannot be checked from here; this machine's can: a dead pid
    # (a child that has exited) is a worker killed mid-step, and `runs show` says what to do.
    assert listed[0]["steps"][0]["worker_gone"] is False
    child = subprocess.Popen(["true"])
    child.wait()
    with lab.db.session() as session:
        step = session.scalar(sa.select(RunStep).where(RunStep.run_id == run["id"]))
        step.host = f"{socket.gethostname()}:{child.pid}"
    shown = lab.cli.run("runs", "show", str(run["id"])).stdout.decode()
    assert f"is gone, killed mid-step: `lorelab runs resume {run['id']}`" in shown
    resumed = lab.cli.json("runs", "resume", str(run["id"]))
    assert resumed["state"] == "done"
    assert _step(resumed, "apply")["attempts"] == 2
    again = lab.cli.run("runs", "resume", str(run["id"]), check=False)
    assert again.returncode == 1 and b"nothing to resume" in again.stderr


@pytest.mark.redis
def test_build_on_a_real_celery_worker_with_redis(tmp_path):
    reason = redis_reason()
    if reason:
        pytest.skip(reason)
    broker = private_broker()  # no other test's worker takes its tasks
    lab = Lab(tmp_path, broker_url=broker)
    queue_suffix = uuid.uuid4().hex[:8]
    env = {**lab.cli.env, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", "git,build",
         "-c", "1", "--without-heartbeat", "--without-gossip", "--without-mingle",
         "-n", f"test-{queue_suffix}@%h", "--loglevel", "INFO"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        import redis

        client = redis.Redis.from_url(broker)
        client.delete("git", "build")  # stale tasks of an earlier, killed test
        proc = lab.cli.run("build", "1", "--json")
        assert time.monotonic() < deadline + 240
        import json

        run = json.loads(proc.stdout)
        assert run["state"] == "done", run
        assert [s["state"] for s in run["steps"]] == ["done"] * 3
        # the worker (its prefork child), not the CLI, ran every step
        for step in run["steps"]:
            pid = int(step["host"].rsplit(":", 1)[1])
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            assert worker.pid in (pid, ppid)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
