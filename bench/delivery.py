"""The delivery benchmark: CPU per mail a mail server's delivery costs, four ways.

Run as `.venv/bin/python bench/delivery.py [--deliveries 20] [--database-url URL] [--json]`.

1. `lorelab ingest stdin`, a process per mail storing it itself (`[ingest]
   delivery_agent_idle = 0`): the child's CPU from wait4, median.
2. The same command with its default settings, as `| lorelab ingest stdin` in a Postfix or Exim
   pipe transport runs it: the first delivery stores its mail and leaves an agent behind
   (bot/cli/agent_start.py), the next ones hand their mail to it. All the deliveries' CPU plus
   all the agent's (its start included, from /proc/PID/stat before it is stopped), divided by
   the number of mails; beside it the first delivery, and the steady state (a delivery that
   hands over, median, plus the agent's CPU per handed mail after its start).
3. The same command with `LORELAB_DELIVER_SOCKET` naming a `lorelab deliver` agent the
   administrator runs: the child's CPU (it only hands the mail over), and the agent's CPU for
   storing it.
4. LMTP straight to that agent (`lmtp:unix:` in Postfix): the agent's CPU per mail, read from
   /proc/PID/stat before and after the deliveries, divided by their number.
Beside them, an interpreter that does nothing (`python -c pass`), the floor of (1) to (3).

Each mail is a patch series' cover letter, patch or review reply (git format-patch output,
`bot.demo.threads`), each delivered once, into a database made beforehand (SQLite by default).
Targets (issue 15): a delivery <= 0.25 s of CPU per mail, <= 15 ms with the long-running agent.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import smtplib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import compile_lorelab, describe, machine

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET_PROCESS = 0.25
TARGET_AGENT = 0.015


def generate(count: int, workdir: Path) -> list[bytes]:
    """`count` distinct mails: series of three patches with a cover letter, and replies."""
    from bot.demo.threads import SeriesSpec, make_reply, make_series, make_tree

    tree = make_tree(workdir / "linux")
    mails: list[bytes] = []
    k = 0
    while len(mails) < count:
        series = make_series(tree, SeriesSpec(title=f"mm: delivery benchmark {k}", patches=3))
        reply = make_reply(series[1], author=("Rita Reviewer", "rita@example.org"),
                           body="Looks good.\n\nReviewed-by: Rita Reviewer <rita@example.org>\n")
        mails += [*series, reply]
        k += 1
    return mails[:count]


def process_cpu(pid: int) -> float:
    """CPU seconds a running process has used (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_cpu(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env)
    assert child.stdin is not None and child.stderr is not None
    child.stdin.write(stdin)
    child.stdin.close()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command} failed: {err.decode(errors='replace')[-500:]}")
    return usage.ru_utime + usage.ru_stime


class Agent:
    def __init__(self, lorelab: list[str], socket_path: Path, env: dict[str, str]) -> None:
        self.socket = socket_path
        self.proc = subprocess.Popen([*lorelab, "deliver", "--socket", str(socket_path)],
                                     env=env, stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        if not self.proc.stderr.readline().startswith(b"lorelab: delivering"):  # it listens
            raise RuntimeError("lorelab deliver did not start")

    def cpu(self) -> float:
        return process_cpu(self.proc.pid)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)


def left_behind(stdin: list[str], mails: list[bytes], env: dict[str, str],
                runtime: Path) -> dict[str, float]:
    """Deliveries with the default settings: the first leaves an agent, the rest hand over."""
    env = dict(env, XDG_RUNTIME_DIR=str(runtime))
    env.pop("LORELAB_INGEST_DELIVERY_AGENT_IDLE")
    first = child_cpu(stdin, mails[0], env)
    written, deadline = "", time.monotonic() + 120
    while not written.isdigit():  # the agent writes its process id once it listens
        if time.monotonic() > deadline:
            logs = "".join(f.read_text() for f in runtime.glob("lorelab/*.log"))
            raise RuntimeError(f"the agent the first delivery started did not listen: {logs}")
        time.sleep(0.05)
        written = "".join(f.read_text().strip() for f in runtime.glob("lorelab/*.sock.lock"))
    pid = int(written)
    started = process_cpu(pid)
    handed = [child_cpu(stdin, m, env) for m in mails[1:]]
    agent = process_cpu(pid)
    os.kill(pid, signal.SIGTERM)
    return {
        "per_mail": (first + sum(handed) + agent) / len(mails),
        "first_delivery": first,
        "agent_start": started,
        "steady": statistics.median(handed) + (agent - started) / len(handed),
    }


def run(deliveries: int, database_url: str | None, workdir: Path) -> dict[str, object]:
    mails = generate(4 * deliveries, workdir)
    url = database_url or f"sqlite:///{workdir / 'delivery.db'}"
    env = dict(os.environ, LORELAB_DATABASE_URL=url, LORELAB_DATA_DIR=str(workdir),
               LORELAB_INGEST_DELIVERY_AGENT_IDLE="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("LORELAB_DELIVER_SOCKET", None)
    lorelab = [sys.executable, "-c", "from bot.cli import main; main()"]
    subprocess.run([*lorelab, "db", "upgrade"], env=env, check=True, capture_output=True)
    stdin = [*lorelab, "ingest", "stdin", "--list", "linux-mm"]
    floor = statistics.median(child_cpu([sys.executable, "-c", "pass"], b"", env)
                              for _ in range(5))
    alone = [child_cpu(stdin, m, env) for m in mails[:deliveries]]
    left = left_behind(stdin, mails[3 * deliveries:], env, workdir / "run")

    socket_path = workdir / "lmtp.sock"
    agent = Agent(lorelab, socket_path, env)
    try:
        handing = dict(env, LORELAB_DELIVER_SOCKET=str(socket_path))
        before = agent.cpu()
        handed = [child_cpu(stdin, m, handing) for m in mails[deliveries: 2 * deliveries]]
        agent_handed = (agent.cpu() - before) / deliveries
        lmtp = smtplib.LMTP(str(socket_path))
        before = agent.cpu()
        for mail in mails[2 * deliveries:]:
            lmtp.sendmail("bench@example.org", ["linux-mm@lists.example.org"], mail)
        agent_lmtp = (agent.cpu() - before) / deliveries
        lmtp.quit()
    finally:
        agent.stop()
    per_process = statistics.median(alone)
    return {
        "machine": describe(machine()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "database": url.split(":", 1)[0],
        "deliveries_each": deliveries,
        "python_pass_cpu_s": round(floor, 3),
        "ingest_stdin_cpu_s": round(per_process, 3),
        "left_behind_agent_cpu_per_mail_s": round(left["per_mail"], 3),
        "left_behind_first_delivery_cpu_s": round(left["first_delivery"], 3),
        "left_behind_agent_start_cpu_s": round(left["agent_start"], 3),
        "left_behind_steady_cpu_per_mail_s": round(left["steady"], 3),
        "ingest_stdin_handing_over_cpu_s": round(statistics.median(handed), 3),
        "agent_cpu_per_handed_mail_s": round(agent_handed, 4),
        "agent_cpu_per_lmtp_mail_s": round(agent_lmtp, 4),
        "targets": {
            "ingest_stdin_storing_itself_<=0.25s": per_process <= TARGET_PROCESS,
            "ingest_stdin_default_<=0.25s": left["per_mail"] <= TARGET_PROCESS,
            "handing_over_<=0.25s": statistics.median(handed) + agent_handed <= TARGET_PROCESS,
            "agent_<=15ms": agent_lmtp <= TARGET_AGENT,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=20)
    parser.add_argument("--database-url", help="a migrated-or-empty database (default: SQLite)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    compile_lorelab()
    with tempfile.TemporaryDirectory(prefix="lorelab-delivery-") as tmp:
        report = run(args.deliveries, args.database_url, Path(tmp))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
