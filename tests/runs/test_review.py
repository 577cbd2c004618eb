"""`lorelab review`, `lorelab bench`, `lorelab lab hosts`, retest/cancel, the planner, and
campaigns that resume: the main job on the stand-in tree, the local runner and real git."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.benchmarks.simulator import simulator
from bot.config import load_settings
from bot.db.models import LabCampaign, LabSample, OutboxReply, Run
from bot.db.session import Database, ensure_schema
from bot.demo.simtree import BATCH_COUNTERS, batch_series_spec, make_sim_tree
from bot.demo.threads import Change, SeriesSpec, as_mbox, make_series
from bot.ingest.sources import RawMail
from bot.ingest.store import ingest
from bot.runs.planner import plan_new_versions
from tests.cli import Lorelab
from tests.support.gitrepo import git
from workers.lab.campaign import new_campaign, run_campaign
from workers.lab.job import RunFailed
from workers.lab.local import LocalRunner

pytestmark = [
    pytest.mark.slow,  # end to end: CI, not the fast loop
    pytest.mark.sqlite_only,  # the stages' SQL is tested on both; tests/e2e runs on PostgreSQL
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

BENCH = "reclaim-sim:ops=3000000"


class Review:
    """A simulator tree, a series thread in an mbox, and `lorelab` configured for both."""

    def __init__(self, root: Path, db_url: str, changes: tuple[Change, ...] = BATCH_COUNTERS,
                 blurb: str | None = None, base_config: str = "defconfig"):
        self.root = root
        self.tree = make_sim_tree(root / "linux")
        self.messages = make_series(self.tree, batch_series_spec(changes=changes,
                                                                 patches=len(changes),
                                                                 blurb=blurb))
        self.mbox = root / "thread.mbox"
        self.mbox.write_bytes(as_mbox(self.messages))
        self.config = root / "config.toml"
        self.config.write_text(
            f'[build]\nwork_dir = "{root / "work"}"\nbase_config = "{base_config}"\n'
            'fragments = []\n\n'
            # Few pairs: these tests check the pipeline, not the statistics' power.
            '[[lab_hosts]]\nname = "here"\npairs_max = 6\n'
        )
        self.db_url = db_url
        self.cli = Lorelab(root / "home", db_url)
        self.cli.env["LORELAB_CONFIG"] = str(self.config)
        self.cli.env["LORELAB_DATA_DIR"] = str(root / "data")

    def review(self, *extra: str) -> tuple[int, dict]:
        proc = self.cli.run("review", str(self.mbox), "--tree", str(self.tree), "--bench", BENCH,
                            "--json", *extra, check=False)
        assert proc.stdout, proc.stderr.decode()
        return proc.returncode, json.loads(proc.stdout)


def test_review_of_a_faster_series_exits_with_its_verdict_and_prints_the_reply(tmp_path, db_url):
    review = Review(tmp_path, db_url)
    code, outcome = review.review()
    assert [s["state"] for s in outcome["steps"]] == ["done"] * 5, outcome["steps"]
    assert outcome["verdict"] in ("improvement", "no change", "inconclusive")
    assert code == {"improvement": 10, "no change": 0, "inconclusive": 15}[outcome["verdict"]] \
        == outcome["exit_code"]
    assert outcome["reply"].count("reclaim-sim.throughput") >= 1
    # The machine is the one the benchmark ran on (the local runner: this host), as read there.
    cpuinfo = Path("/proc/cpuinfo").read_text()
    machine = next(line for line in outcome["reply"].splitlines()
                   if line.startswith("Test machine:"))
    kind = "virtual machine" if " hypervisor" in cpuinfo else "bare metal"
    assert machine.startswith(f"Test machine: {kind}"), machine
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    assert model is None or model[1].strip() in machine
    # The human form shows each stage as it happens, then the reply itself.
    proc = review.cli.run("review", str(review.mbox), "--tree", str(review.tree), "--bench",
                          BENCH, check=False)
    text = proc.stdout.decode()
    for stage in ("apply: done", "build-base: done", "build-patched: done", "bench: done",
                  "report: done"):
        assert stage in text
    assert "Subject: Re: [PATCH 0/2] mm/vmscan: batch reclaim event counter updates" in text
    # The second review is a run of its own: it prints its own reply (its own Message-ID, this
    # run's numbers), says the version was answered already, and holds its reply for approval
    # so that the list does not get the version's reply twice.
    first_id = re.search(r"^Message-ID: <(.+)>$", outcome["reply"], re.M)[1]
    second_id = re.search(r"^Message-ID: <(.+)>$", text, re.M)[1]
    assert first_id != second_id and f".r{outcome['run']}." in first_id
    assert f"earlier benchmark reply for this version: <{first_id}> (queued)" in text
    listed = {r["message_id"]: r["state"] for r in review.cli.json("outbox", "list")}
    assert listed == {first_id: "queued", second_id: "pending-approval"}
    # (not outcome["run"] + 1: the first review's follow-ups may have been queued in between)
    second_run = int(re.search(r"^run (\d+): ", text, re.M)[1])
    shown = review.cli.json("runs", "show", str(second_run))
    assert shown["outcome"] in ("improvement", "no change", "inconclusive")
    assert shown["reply"]["message_id"] == second_id
    assert [h["metric"] for h in shown["headline"]] == ["reclaim-sim.throughput"]
    # A v1 series: the Message-ID names the posted version, not a database row.
    assert ".v1." in first_id
    # `lorelab analyze RUN` judges the run's campaigns again from their samples.
    analyzed = review.cli.json("analyze", str(outcome["run"]))
    assert {m["metric"] for m in analyzed} >= {"reclaim-sim.throughput"}
    assert review.cli.run("analyze", "999", check=False).returncode == 66


def test_a_series_that_does_not_apply_gets_the_does_not_apply_reply(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    vmscan = review.tree / "mm/vmscan.c"
    vmscan.write_text(vmscan.read_text().replace("#define VM_EVENT_BATCH\t\t1",
                                                 "#define VM_EVENT_BATCH\t\t8"))
    git(review.tree, "commit", "-q", "-am", "mm/vmscan: batch by 8")
    code, outcome = review.review("--base", "master")
    assert code == 12 and outcome["verdict"] == "does not apply"
    for wrong, said in ((("--runner", "nowhere"), b"no lab host 'nowhere'"),
                        (("--bench", "hackbnech"), b"no benchmark 'hackbnech'")):
        proc = review.cli.run("review", str(review.mbox), "--tree", str(review.tree), *wrong,
                              check=False)
        assert proc.returncode not in (0, 10, 11) and said in proc.stderr, proc.stderr
    assert [s["state"] for s in outcome["steps"]][:1] == ["failed"]
    assert "mm/vmscan.c" in outcome["reply"] and "X-Lorelab-Kind: does-not-apply" in \
        outcome["reply"]


def test_bench_compares_a_kernel_with_itself_and_stores_every_sample(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    code, outcome = review.review()  # builds the base: the A/A kernel
    db = Database(review.db_url)
    with db.session() as session:
        run = session.get(Run, outcome["run"])
        base = next(s for s in run.steps if s.name == "build-base").result["artifact_dir"]
    kernel = str(Path(base) / "bzImage")
    proc = review.cli.run("bench", "--a", kernel, "--b", kernel, "--bench", BENCH,
                          "--pairs-max", "8", "--seed", "7", "--json", check=False)
    assert proc.returncode in (0, 10, 11, 15), proc.stderr.decode()
    (campaign,) = json.loads(proc.stdout)
    assert campaign["state"] == "done" and campaign["seed"] == 7
    assert campaign["accel"] == ["none"] and campaign["host"] == "here"
    assert 4 <= campaign["pairs"] <= 8 and len(campaign["orders"]) == campaign["pairs"]
    assert campaign["k_max"] == 8  # --pairs-max over the host's own
    throughput = campaign["metrics"][0]
    assert throughput["metric"] == "reclaim-sim.throughput"
    # The same kernel on both sides, as many boots each. How far its estimate strays from zero
    # depends on what else this machine runs, and whether the rule calls it a change is a 5%
    # chance by design: bench/verdicts.py measures those rates, not this test.
    assert throughput["base"]["n"] == throughput["patched"]["n"] == campaign["pairs"]
    with db.session() as session:
        stored = session.scalars(sa.select(LabSample).where(
            LabSample.campaign_id == campaign["id"])).all()
        boots = {(s.kernel, s.pair_index, s.position) for s in stored}
        assert len(boots) == 2 * (campaign["pairs"] + 1)  # one warm-up pair, kept apart
        assert sum(s.warmup for s in stored) == sum(1 for s in stored if s.pair_index == 0)
    # `lorelab analyze campaign:ID` judges the stored samples again: the same verdict.
    analyzed = review.cli.json("analyze", f"campaign:{campaign['id']}")
    again = next(m for m in analyzed if m["metric"] == "reclaim-sim.throughput")
    assert (again["verdict"], again["change_pct"]) == (throughput["verdict"],
                                                       throughput["change_pct"])
    hosts = review.cli.json("lab", "hosts")
    assert [(h["name"], h["runner"], h["queue"]) for h in hosts] == [
        ("here", "local", "lab.here")]
    assert hosts[0]["campaigns"]["done"] >= 2
    refused = review.cli.run("bench", "--a", kernel, "--b", kernel, "--pairs-max", "2",
                             check=False)
    assert refused.returncode != 0 and b"at least 4" in refused.stderr


def test_a_campaign_killed_midway_resumes_without_repeating_stored_boots(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    review.review()
    db = Database(review.db_url)
    with db.session() as session:
        run = session.scalars(sa.select(Run).where(Run.kind == "review")).one()
        kernels = {k: Path(next(s for s in run.steps if s.name == n).result["artifact_dir"])
                   / "bzImage" for k, n in (("A", "build-base"), ("B", "build-patched"))}
    bench = simulator(ops_per_cpu=1_000_000)
    with db.session() as session:
        campaign = new_campaign(bench, kernel_a="a", kernel_b="b", host="here", runner="local",
                                seed=3, k_min=5, k_max=6)
        session.add(campaign)
        session.flush()
        campaign_id = campaign.id
    runner = LocalRunner(bench, kernels)
    calls: list[tuple[str, int, int]] = []

    def dies_after_five(kernel: str, pair: int, position: int):  # noqa: ANN202
        if len(calls) == 5:
            raise RunFailed("the lab machine lost power")
        calls.append((kernel, pair, position))
        return runner(kernel, pair, position)

    failed = run_campaign(db, campaign_id, bench, dies_after_five)
    assert failed.state == "failed" and "lost power" in (failed.error or "")
    resumed_calls: list[tuple[str, int, int]] = []

    def counting(kernel: str, pair: int, position: int):  # noqa: ANN202
        resumed_calls.append((kernel, pair, position))
        return runner(kernel, pair, position)

    done = run_campaign(db, campaign_id, bench, counting)
    assert done.state == "done" and done.result["metrics"]
    assert not set(calls) & set(resumed_calls)  # no stored boot ran again
    with db.session() as session:
        boots = session.execute(sa.select(LabSample.kernel, LabSample.pair_index,
                                          LabSample.position).where(
            LabSample.campaign_id == campaign_id, LabSample.metric == "reclaim-sim.throughput")
        ).all()
    assert len(boots) == len(set(boots))  # each boot stored once


def _ingest(db: Database, messages: list[bytes]) -> None:
    ingest(db, [RawMail(m, f"t{i}") for i, m in enumerate(messages)],
           settings=load_settings(env={}).ingest, list_name="linux-mm")


def test_the_planner_runs_watched_series_once_and_a_new_version_supersedes(tmp_path, db_url):
    tree = make_sim_tree(tmp_path / "linux")
    config = tmp_path / "config.toml"
    config.write_text(f'[[trees]]\nname = "sim"\npath = "{tree}"\n\n'
                      '[plan]\nmax_age_days = 100000\n')
    settings = load_settings(config, env={})
    db = Database(db_url)
    ensure_schema(db.engine)
    v1 = make_series(tree, batch_series_spec())
    docs = make_series(tree, SeriesSpec(title="kbuild: rename the simulator", patches=1,
                                        changes=(Change("Makefile", "NAME = Reclaim Simulator",
                                                        ("NAME = Reclaim Simulator II",),
                                                        "kbuild: rename", "A new name."),)))
    _ingest(db, [*v1, *docs])
    with db.session() as session:
        first = plan_new_versions(session, settings)
    assert len(first) == 1 and first[0].suite == "reclaim"  # mm/vmscan.c is watched; README not
    with db.session() as session:
        assert plan_new_versions(session, settings) == []  # planned once
        run = session.get(Run, first[0].run_id)
        assert (run.kind, run.trigger, run.state) == ("review", "auto", "queued")
        assert run.benchmarks == ["hackbench", "readtwice"]
    v2 = make_series(tree, batch_series_spec(version=2, revised=(1,),
                                             same_changes_as=batch_series_spec(),
                                             in_reply_to=_msgid(v1[0])))
    _ingest(db, v2)
    with db.session() as session:
        (second,) = plan_new_versions(session, settings)
        assert second.superseded == (first[0].run_id,)
        old = session.get(Run, first[0].run_id)
        assert old.state == "superseded"
        assert {s.state for s in old.steps} == {"superseded"}
    db.dispose()


def _msgid(raw: bytes) -> str:
    for line in raw.decode().splitlines():
        if line.lower().startswith("message-id:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no Message-ID")


def test_a_reply_with_two_benchmark_runs_is_one_false_discovery_family(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    _, outcome = review.review("--bench", f"{BENCH},reclaim-sim:ops=2000000")
    db = Database(review.db_url)
    with db.session() as session:
        from bot.report.compose.campaign import family_level

        campaigns = session.scalars(sa.select(LabCampaign)).all()
        # The reply's 5% is shared: each benchmark run's metrics are held to half of it.
        assert [family_level(c) for c in campaigns] == [0.025, 0.025]
    assert "at 0.025 each, so that the whole reply is held at 0.05" in " ".join(
        outcome["reply"].split())


def test_the_authors_claim_is_quoted_beside_what_lorelab_measured(tmp_path):
    blurb = ("Batching the counter updates makes reclaim cheaper. With reclaim-sim:\n\n"
             "Average result of 10 runs:\n\n"
             "Before: 19400000 ops/s\n"
             "After:  38300000 ops/s (+97%)\n")
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}", blurb=blurb)
    _, outcome = review.review()
    reply = outcome["reply"]
    assert "> Before: 19400000 ops/s" in reply and "> After:  38300000 ops/s (+97%)" in reply
    quoted = reply.index("> After:")
    # Beside it, what the claim's own numbers carry (ten runs, no spread given); the claim
    # names no benchmark lorelab knows, so its results are not set beside it as if it did.
    after = " ".join(reply[quoted:].split())
    assert "no spread given" in after and "The claim does not name its benchmark" in after


def test_a_report_step_that_fails_is_a_failed_run_not_a_quiet_finding(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    _, outcome = review.review()
    # The config fragment the kernels were built with is gone when the report step runs
    # again: the reply cannot say how to make the .config, so it is not written.
    db = Database(review.db_url)
    with db.session() as session:
        run = session.get(Run, outcome["run"])
        report = next(s for s in run.steps if s.name == "report")
        report.state, report.result, run.state = "queued", {}, "running"
        session.execute(sa.delete(OutboxReply))
    review.config.write_text(review.config.read_text().replace(
        "fragments = []", f'fragments = ["{tmp_path / "moved-away.config"}"]'))
    resumed = review.cli.run("runs", "resume", str(outcome["run"]), check=False)
    assert resumed.returncode == 1
    shown = review.cli.json("runs", "show", str(outcome["run"]))
    assert (shown["outcome"], shown["exit_code"]) == ("report failed", 16)
    assert "moved-away.config" in shown["why"] and shown["reply"] is None
    text = review.cli.run("runs", "show", str(outcome["run"])).stdout.decode()
    assert "outcome: report failed (no reply:" in text


def test_retest_and_cancel_from_the_cli(tmp_path):
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    _, outcome = review.review()
    again = review.cli.json("retest", str(outcome["run"]))
    assert again["id"] != outcome["run"] and again["trigger"] == "retest"
    assert again["benchmarks"] == [BENCH] and again["state"] == "done"
    # The retest prints its own reply, not the first run's.
    assert f".r{again['id']}." in again["reply_text"] and again["reply"]["state"] == \
        "pending-approval"
    db = Database(review.db_url)
    with db.session() as session:
        from bot.runs.lifecycle import create_run

        old = session.get(Run, outcome["run"])
        version = old.series_version_id
        from bot.db.models import SeriesVersion

        queued = create_run(session, session.get(SeriesVersion, version), kind="review",
                            tree=old.tree).id
    cancelled = review.cli.json("runs", "cancel", str(queued))
    assert cancelled["state"] == "cancelled"
    assert {s["state"] for s in cancelled["steps"]} == {"cancelled"}
    proc = review.cli.run("runs", "cancel", str(queued), check=False)
    assert proc.returncode != 0 and b"cancelled already" in proc.stderr
    with db.session() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(LabCampaign)) == 2


def test_a_round_of_the_automatic_pipeline_plans_runs_answers_and_sends_once(tmp_path, db_url,
                                                                          monkeypatch):
    import datetime as dt
    import mailbox

    from bot.demo.threads import make_reply
    from bot.runs.rounds import run_round

    tree = make_sim_tree(tmp_path / "linux")
    config = tmp_path / "config.toml"
    config.write_text(
        f'[database]\nurl = "{db_url}"\n\n[[trees]]\nname = "sim"\npath = "{tree}"\n\n'
        f'[build]\nwork_dir = "{tmp_path / "work"}"\nbase_config = "defconfig"\nfragments = []\n\n'
        '[[lab_hosts]]\nname = "here"\npairs_max = 4\npairs_min = 4\n\n'
        '[[suites]]\nname = "sim"\nwatched = ["mm/"]\nbenchmarks = ["reclaim-sim:ops=200000"]\n\n'
        '[plan]\nmax_age_days = 100000\n\n[commands]\nmax_age_hours = 1000000\n\n'
        # The round's follow-ups: tests/runs/test_follow_up_rounds.py.
        '[follow_ups]\nbisect = false\nalign = false\ncompare = false\nexperiment = false\n')
    settings = load_settings(config, env={})
    db = Database(db_url)
    ensure_schema(db.engine)
    before = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    series = make_series(tree, batch_series_spec())
    help_mail = make_reply(series[1], author=("Rita Reviewer", "rita@example.org"),
                           body="#lorelab help")
    _ingest(db, [*series, help_mail])
    data = tmp_path / "data"
    monkeypatch.setenv("LORELAB_DATA_DIR", str(data))  # the outbox maildir of the embedded default
    first = run_round(db, settings, before)
    again = run_round(db, settings, before)
    assert len(first.planned) == 1 and first.dispatched == first.planned
    assert first.commands == 1 and len(first.sent) == 2  # the help answer and the benchmark reply
    assert again.planned == [] and again.dispatched == [] and again.sent == []
    with db.session() as session:
        run = session.get(Run, first.planned[0])
        assert run.state == "done" and run.trigger == "auto"
    kinds = sorted(m["X-Lorelab-Kind"] for m in mailbox.Maildir(data / "outbox", create=False))
    assert kinds == ["benchmark", "command"]
    db.dispose()


def test_review_fetches_the_thread_from_a_lore_url_or_a_message_id(tmp_path):
    from tests.support.pi_server import PublicInbox, free_port, missing_reason

    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    review = Review(tmp_path, f"sqlite:///{tmp_path / 'lorelab.db'}")
    pi = PublicInbox(tmp_path / "pi")
    for raw in review.messages:
        pi.deliver(raw)
    pi.start()
    try:
        cover = _msgid(review.messages[0]).strip("<>")
        by_url = review.cli.json("review", f"{pi.base_url}/{cover}/", "--tree", str(review.tree),
                                 "--bench", BENCH, check=False)
        assert by_url["title"] == "mm/vmscan: batch reclaim event counter updates"
        assert by_url["steps"][-1]["state"] == "done"
        # A bare message-id is looked up on [ingest] lore_url; patch 2 names the same series.
        patch2 = _msgid(review.messages[2]).strip("<>")
        by_id = review.cli.json("review", patch2, "--tree", str(review.tree), "--bench", BENCH,
                                check=False, LORELAB_INGEST_LORE_URL=pi.base_url)
        assert by_id["series_version"] == by_url["series_version"]
        missing = review.cli.run("review", "nobody@example.org", "--tree", str(review.tree),
                                 check=False, LORELAB_INGEST_LORE_URL=pi.base_url)
        assert missing.returncode != 0 and b"has no thread with <nobody@example.org>" in \
            missing.stderr
        # A dead archive: a clear error, no traceback.
        dead = f"http://127.0.0.1:{free_port()}/linux-mm"
        down = review.cli.run("review", f"{dead}/{cover}/", "--tree", str(review.tree),
                              check=False, LORELAB_INGEST_LORE_URL=dead)
        assert down.returncode != 0 and b"cannot fetch the thread of" in down.stderr
        assert b"Traceback" not in down.stderr
    finally:
        pi.stop()
