"""The experiment follow-up on the stand-in tree: the command lines a cover letter states are
mapped to lab benchmarks, run with the author's parameters as a child run of the review, and
answered by a reply that says which it reproduced and which it could not, and why."""

from __future__ import annotations

import email
import email.policy
import shutil

import pytest
import sqlalchemy as sa

from bot.config import load_settings
from bot.config.lab_hosts import find_host
from bot.db.models import LabCampaign, OutboxReply, Run, SeriesVersion
from bot.db.session import Database
from bot.runs.experiment_plan import planned_experiment
from bot.runs.follow_ups import start_follow_up
from bot.runs.taskqueue import send_run
from tests.runs.test_review import Review

pytestmark = [
    pytest.mark.slow,  # builds and benchmarks the stand-in tree: CI, not the fast loop
    pytest.mark.sqlite_only,  # the stages' SQL is tested on both; tests/e2e runs on PostgreSQL
    pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                       reason="make and gcc are needed to build the simulator tree"),
]

# The author ran the simulator itself, as a kernel author runs a benchmark, with their own ops
# count, and a memcached load the local lab cannot give, and fio, which it has no benchmark for.
COVER = """\
Batching the reclaim event counters makes the simulator faster with two CPUs.

Tested on the simulator built from this tree, 4 runs of each kernel:

  $ ./arch/x86/boot/bzImage 2000000

and with memcached under memtier:

  $ memtier_benchmark -s 127.0.0.1 -p 11211 -P memcache_text --ratio=1:0 \\
      --threads 4 --clients 8 --requests 10000

  fio --name=randread --rw=randread --size=1G --runtime=30

ops/s went from 1210000 to 1345000 (+11%).
"""
AUTHOR_OPS = 2_000_000
AUTHOR_RUNS = 4


def test_the_authors_command_runs_with_their_parameters_and_the_reply_says_what_did_not(
        tmp_path, db_url, monkeypatch):
    review = Review(tmp_path, db_url, blurb=COVER)
    # No follow-up of the review's own making: this test makes the experiment itself.
    with review.config.open("a") as config:
        config.write("\n[follow_ups]\nbisect = false\nalign = false\ncompare = false\n"
                     "experiment = false\n")
    code, outcome = review.review()
    assert outcome["verdict"] in ("improvement", "no change", "inconclusive"), outcome
    for name in ("LORELAB_CONFIG", "LORELAB_DATA_DIR", "LORELAB_DATABASE_URL"):
        monkeypatch.setenv(name, review.cli.env[name])
    settings = load_settings(review.config)
    db = Database(db_url)
    with db.session() as session:
        parent = session.get(Run, outcome["run"])
        version = session.get(SeriesVersion, parent.series_version_id)
        host = find_host(settings.lab_hosts, parent.runner)
        experiment = planned_experiment(session, version, host)
        run, _ = start_follow_up(session, parent, "experiment", experiment.options, "cli",
                                 experiment.benchmarks)
        run_id = run.id

    # The mapping: the simulator's own line with the author's ops count, and the runs they
    # stated as the campaign's pairs; memtier_benchmark and fio with why not.
    assert experiment.benchmarks == [f"reclaim-sim:ops={AUTHOR_OPS}"]
    assert experiment.pairs == AUTHOR_RUNS
    why = {c.program: c.why_not for c in experiment.commands}
    memtier_here = shutil.which("memtier_benchmark") is not None  # the local lab is this host
    assert why["memtier_benchmark"] == (
        "memtier_benchmark: not installed in the lab" if not memtier_here else
        "the lab's memcached benchmark drives memcached with memaslap, not memtier_benchmark: "
        "no such benchmark in the lab")
    assert why["fio"] == "fio: no such benchmark in the lab"

    send_run(db, settings, run_id)  # eager: the steps run here, now
    with db.session() as session:
        run = session.get(Run, run_id)
        assert [(s.name, s.state) for s in run.steps] == [
            (name, "done") for name in ("apply", "build-base", "build-patched", "bench",
                                        "report")], [(s.name, s.state, s.error) for s in run.steps]
        (campaign,) = session.scalars(sa.select(LabCampaign).where(LabCampaign.run_id == run_id))
        assert (campaign.benchmark, campaign.parameters) == ("reclaim-sim", {"ops": AUTHOR_OPS})
        assert campaign.k_max == AUTHOR_RUNS and campaign.state == "done"
        pairs = {s.pair_index for s in campaign.samples if not s.warmup}
        assert 1 <= len(pairs) <= AUTHOR_RUNS
        replies = {r.kind: r for r in session.scalars(
            sa.select(OutboxReply).where(OutboxReply.series_version_id
                                         == run.series_version_id))}
        reply = replies["experiment"]
        review_reply = replies["benchmark"]
        cover_msgid = session.get(SeriesVersion, run.series_version_id).cover.msgid

    message = email.message_from_bytes(reply.raw, policy=email.policy.default)
    body = message.get_content()
    flat = " ".join(body.split())
    # The same thread, its own message: in reply to the cover letter, as the review's reply.
    assert message["In-Reply-To"].strip() == f"<{cover_msgid}>"
    assert reply.message_id != review_reply.message_id and f".r{run_id}." in reply.message_id
    assert "It ran 1 of the 3 benchmark command lines the author stated" in flat
    assert f"at most {AUTHOR_RUNS} pairs of runs" in flat
    assert f"\n  arch/x86/boot/bzImage {AUTHOR_OPS}\n" in body  # as written, its prompt left out
    assert f"as reclaim-sim ops={AUTHOR_OPS} (the author's {AUTHOR_OPS})" in body
    assert "It could not run 2 of them:" in flat
    assert f"  {why['memtier_benchmark']}" in body and "  fio: no such benchmark in the lab" in body
    # What ran is reported as the benchmark reply reports it: its table, its runs, its machine.
    assert "reclaim-sim.throughput" in body
    assert f"Benchmark: reclaim-sim ops={AUTHOR_OPS}." in flat
    assert "Runs: " in body and "Test machine: " in body
