"""`lorelab bench` (compare two kernels, no series needed) and `lorelab lab hosts`.

`bench` runs one lab campaign per benchmark on a lab host, here and now, with a progress bar,
stores every sample, and prints each metric's verdict with the reclaim counters below it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bot.cli import terminal
from bot.cli.context import UserError, emit_json, settings
from bot.cli.database import open_database

lab_app = typer.Typer(help="Lab hosts: where benchmarks run.", no_args_is_help=True)

MIN_PAIRS = 4  # fewer cannot reach the overall 5% level (bot.analysis.calibration)


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
    app.add_typer(lab_app, name="lab")


def bench(
    a: Path = typer.Option(..., "--a", help="The base kernel (a bzImage, or a program for the "
                           "local runner)."),
    b: Path = typer.Option(..., "--b", help="The kernel to compare with the base."),
    benchmarks: str = typer.Option("hackbench", "--bench", help="Benchmarks, comma-separated."),
    host_name: str = typer.Option(None, "--host", help="A [[lab_hosts]] name (default: the "
                                  "first)."),
    pairs_min: int = typer.Option(None, "--pairs-min", help="Pairs before the first look "
                                  "(default: the host's)."),
    pairs_max: int = typer.Option(None, "--pairs-max", help="Most pairs to run (default: the "
                                  "host's)."),
    warmup: int = typer.Option(None, "--warmup", help="Warm-up pairs, run first and not "
                               "judged (default: the host's)."),
    seed: int = typer.Option(None, "--seed", help="Seed of the AB/BA order (default: random; "
                             "recorded either way)."),
    as_json: bool = typer.Option(False, "--json", help="Print the campaigns as JSON."),
) -> None:
    """Compare two kernels on a lab host in randomized interleaved pairs."""
    from bot.benchmarks.spec import from_spec, split_specs
    from bot.config.lab_hosts import find_host
    from bot.runs.outcome import EXIT_CODES, benchmark_finding

    # The one place the control plane imports the workers (docs/ARCHITECTURE.md): `lorelab
    # bench` is the lab's own command line, running a campaign here, on this machine's host.
    # Imported here so that no other command pays for (or depends on) the data plane.
    from workers.lab.campaign import new_campaign, run_campaign
    from workers.lab.runners import make_runner

    config = settings()
    for path in (a, b):
        if not path.exists():
            raise UserError(f"{path}: no such kernel image")
    try:
        host = find_host(config.lab_hosts, host_name)
        chosen = [from_spec(n) for n in split_specs(benchmarks)]
    except ValueError as exc:
        raise UserError(str(exc)) from None
    k_max = pairs_max or host.pairs_max
    k_min = min(pairs_min or host.pairs_min, k_max)
    warmup = host.warmup_pairs if warmup is None else warmup
    if k_max < MIN_PAIRS:
        raise UserError(f"--pairs-max {k_max}: the sequential rule needs at least {MIN_PAIRS} "
                        "pairs to reach its level")
    db = open_database()
    kernels = {"A": a.resolve(), "B": b.resolve()}
    out = terminal.stdout()
    results = []
    for definition in chosen:
        try:
            runner = make_runner(host, definition, kernels)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        with db.session() as session:
            campaign = new_campaign(definition, kernel_a=str(kernels["A"]),
                                    kernel_b=str(kernels["B"]), host=host.name,
                                    runner=host.runner,
                                    seed=seed if seed is not None
                                    else random.SystemRandom().randrange(2**31),
                                    k_min=k_min, k_max=k_max, warmup_pairs=warmup)
            session.add(campaign)
            session.flush()
            campaign_id = campaign.id
        with Progress(TextColumn("{task.description}"), BarColumn(),
                      TextColumn("{task.completed}/{task.total} boots"), TimeElapsedColumn(),
                      console=out, disable=as_json, transient=True) as progress:
            task = progress.add_task(f"{definition.name} on {host.name}",
                                     total=2 * (warmup + k_max))

            def advance(done: int, most: int, task: Any = task) -> None:
                progress.update(task, completed=done, total=most)

            done = run_campaign(db, campaign_id, definition, runner, progress=advance)
        results.append(_campaign_dict(done))
        if not as_json:
            _print_campaign(out, results[-1])
    if as_json:
        emit_json(results)
    if any(r["state"] != "done" for r in results):
        raise typer.Exit(1)
    # Exits as `lorelab review` does: 0 no change, 10 improvement, 11 regression, 15 could not
    # tell (bot.runs.outcome).
    finding, _ = benchmark_finding(m["verdict"] for r in results for m in r["metrics"]
                                   if not m["secondary"])
    raise typer.Exit(EXIT_CODES[finding])


def _campaign_dict(campaign: Any) -> dict[str, Any]:
    accel = sorted({s.accel for s in campaign.samples})
    return {
        "id": campaign.id, "benchmark": campaign.benchmark, "parameters": campaign.parameters,
        "host": campaign.host, "runner": campaign.runner, "accel": accel,
        "kernel_a": campaign.kernel_a, "kernel_b": campaign.kernel_b, "seed": campaign.seed,
        "orders": campaign.orders, "k_min": campaign.k_min, "k_max": campaign.k_max,
        "warmup_pairs": campaign.warmup_pairs, "state": campaign.state, "error": campaign.error,
        "pairs": campaign.result.get("pairs", 0),
        "stopped_early": campaign.result.get("stopped_early", False),
        "metrics": campaign.result.get("metrics", []),
        "not_compared": campaign.result.get("not_compared", []),
        "samples": len(campaign.samples),
    }


def _print_campaign(out: Any, r: dict[str, Any]) -> None:
    if r["state"] != "done":
        out.print(f"[red]{r['benchmark']} on {r['host']} failed[/]: {r['error']}")
        out.print(f"({r['samples']} samples were stored; campaign {r['id']})")
        return
    table = Table(title=f"{r['benchmark']} on {r['host']} ({r['runner']}, "
                  f"{'/'.join(r['accel'])}): {r['pairs']} pairs, seed {r['seed']}",
                  title_justify="left")
    for column in ("metric", "A median", "B median", "change", "interval", "p", "delta", "verdict"):
        table.add_column(column, overflow="fold")
    for m in sorted(r["metrics"], key=lambda m: m["secondary"]):
        table.add_row(m["metric"], terminal.number(m["base"]["median"]),
                      terminal.number(m["patched"]["median"]), f"{m['change_pct']:+.2f}%",
                      f"[{m['ci_pct'][0]:+.2f}%, {m['ci_pct'][1]:+.2f}%] "
                      f"{terminal.number(100 * m['interval_level'])}%",
                      terminal.p_value(m["p"]), f"{terminal.number(m['delta_pct'])}%",
                      m["words"], style="dim" if m["secondary"] else None)
    out.print(table)
    if r["not_compared"]:
        out.print("not compared (zero in some runs): " + ", ".join(r["not_compared"]))
    out.print(f"campaign {r['id']}; `lorelab analyze campaign:{r['id']}` judges it again")


@lab_app.command("hosts")
def lab_hosts(as_json: bool = typer.Option(False, "--json", help="Print the hosts as JSON.")
              ) -> None:
    """The configured lab hosts, their runners and what is running on them."""
    import sqlalchemy as sa

    from bot.config.lab_hosts import configured_hosts
    from bot.db.models import LabCampaign

    config = settings()
    db = open_database()
    rows = []
    with db.session() as session:
        for host in configured_hosts(config.lab_hosts):
            counts = dict(session.execute(
                sa.select(LabCampaign.state, sa.func.count()).where(LabCampaign.host == host.name)
                .group_by(LabCampaign.state)).all())
            last = session.scalar(sa.select(sa.func.max(LabCampaign.finished_at))
                                  .where(LabCampaign.host == host.name))
            rows.append({
                "name": host.name, "runner": host.runner, "cpus": host.cpus,
                "memory_mb": host.memory_mb, **_machine_and_guest(host),
                "queue": host.queue_name,
                "address": host.address or None, "accel": host.accel
                if host.runner == "qemu" else None,
                "state": "busy" if counts.get("running") else "idle",
                "campaigns": counts, "last_finished": last.isoformat() if last else None,
            })
    if as_json:
        emit_json(rows)
        return
    table = Table(title="lab hosts", title_justify="left")
    for column in ("name", "runner", "machine", "guest", "queue", "state", "campaigns"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["name"], r["runner"] + (f" ({r['address']})" if r["address"] else ""),
                      _size(r["machine"], "not measured (a remote machine)"),
                      _size(r["guest"], "none (runs on this kernel)" if r["runner"] == "local"
                            else "none (the machine itself)"),
                      r["queue"], r["state"],
                      ", ".join(f"{n} {s}" for s, n in sorted(r["campaigns"].items())) or "none")
    terminal.stdout().print(table)


def _machine_and_guest(host: Any) -> dict[str, Any]:
    """What the machine a host runs on has (this one, for local and qemu) and what a qemu
    guest is given; the configured cpus and memory_mb are a guest's, not the machine's."""
    import os

    here = {"cpus": len(os.sched_getaffinity(0)),
            "memory_mb": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20}
    guest = {"cpus": host.cpus, "memory_mb": host.memory_mb}
    return {"machine": None if host.runner == "ssh" else here,
            "guest": guest if host.runner == "qemu" else None}


def _size(size: dict[str, int] | None, missing: str) -> str:
    if size is None:
        return missing
    memory = size["memory_mb"]
    shown = f"{memory / 1024:.1f} GiB" if memory >= 4096 else f"{memory} MiB"
    return f"{size['cpus']} CPU{'' if size['cpus'] == 1 else 's'}, {shown}"
