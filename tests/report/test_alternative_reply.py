"""The reply to a reviewer's alternative, composed from triples judged as the loop judges them:
it answers the reviewer, gives the three comparisons' figures, and says of the alternative
against the series only the verdict it earned."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import random

from bot.benchmarks.simulator import THROUGHPUT, simulator
from bot.db.models import LabCampaign
from bot.report.compose.alternative_reply import (
    AlternativeReplyContext,
    NotAppliedContext,
    Placement,
    TriplesCampaign,
    compose_alternative_not_applied,
    compose_alternative_reply,
)
from bot.report.compose.campaign import judge_triples
from bot.report.compose.inputs import (
    BotIdentity,
    ParentMessage,
    Person,
    ReplyOptions,
    SeriesInfo,
)
from bot.report.compose.results import Machine
from workers.lab.pairs import Sample
from workers.lab.triples import run_triples

OPTIONS = ReplyOptions(identity=BotIdentity(sender=Person("lorelab", "lorelab@lab.example.org"),
                                            domain="lab.example.org"),
                       date=dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC))
REVIEWER = ParentMessage(
    msgid="20261130110200.0123456789abcdef@example.net",
    subject="Re: [PATCH 2/2] mm/vmscan: count deactivations in the same batch",
    sender=Person("Rhea Viewer", "rhea@example.net"), to=(Person("Ada", "ada@example.org"),),
    cc=(Person("", "linux-mm@kvack.org"),), lists=("linux-mm@kvack.org",),
    references=("v1-0@example.org", "v1-2@example.org"))
SERIES = SeriesInfo(title="mm/vmscan: batch reclaim event counter updates", version=1, patches=2,
                    series_version_id=4, anchor_msgid="v1-0@example.org", run_id=9)
PLACE = Placement(where="in place of 2/2", answers=2, patches=2, base="c" * 40, commit="a" * 40)
MACHINE = Machine(cpu="Test CPU", cores=2, boot="bare metal", host="here", runner="local")
BENCH = simulator(ops_per_cpu=1000)


def _triples(medians: dict[str, float], cv: float, k_max: int = 12) -> TriplesCampaign:
    rng = random.Random(3)
    when = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)

    def boot(kernel: str, index: int, position: int) -> list[Sample]:
        value = medians[kernel] * rng.lognormvariate(0.0, cv)
        return [Sample(THROUGHPUT, value, "ops/s", kernel, index, position, host="here",
                       boot_id=f"{kernel}{index}", accel="none", time=when)]

    result = run_triples(boot, BENCH.metrics, seed=5, k_max=k_max)
    campaign = LabCampaign(id=1, benchmark=BENCH.name, parameters=dict(BENCH.parameters),
                           kernel_c="c", k_min=5, k_max=k_max, warmup_pairs=1)
    judged = judge_triples(campaign, BENCH, samples=result.samples)
    # The stored campaign is judged as its loop judged it.
    for key, metrics in result.comparisons.items():
        assert next(m for m in judged[key].metrics if m.name == THROUGHPUT).comparison \
            == metrics[THROUGHPUT]
    return TriplesCampaign(label="reclaim-sim ops=1000", comparisons=judged,
                           triples=result.triples, warmups=1, k_min=5, k_max=k_max, alpha=0.05)


def _reply(campaign: TriplesCampaign, outcome: str) -> tuple[email.message.EmailMessage, str]:
    reply = compose_alternative_reply(AlternativeReplyContext(
        parent=REVIEWER, series=SERIES, placement=PLACE, outcome=outcome,
        campaigns=(campaign,), machine=MACHINE, reproduce=("b4 am -o . v1-0@example.org",)),
        OPTIONS)
    message = email.message_from_bytes(reply.as_bytes(), policy=email.policy.default)
    return message, " ".join(message.get_content().split())


def _figures(campaign: TriplesCampaign, key: str) -> str:
    c = next(m for m in campaign.comparisons[key].metrics if m.name == THROUGHPUT).comparison
    return f"{c.change_pct:+.1f}% [{c.ci_low_pct:+.1f}, {c.ci_high_pct:+.1f}]"


def test_an_alternative_shown_no_different_says_so_with_the_three_comparisons():
    campaign = _triples({"A": 100.0, "B": 110.0, "C": 110.0}, cv=0.001)
    message, flat = _reply(campaign, "no change")
    assert message["In-Reply-To"] == f"<{REVIEWER.msgid}>"
    assert message["To"] == "Rhea Viewer <rhea@example.net>"
    assert message["X-Lorelab-Kind"] == "alternative" and ".r9." in message["Message-ID"]
    assert (f"reclaim-sim.throughput (reclaim-sim ops=1000): base -> series "
            f"{_figures(campaign, 'AB')}; base -> alternative {_figures(campaign, 'AC')}; "
            f"alternative vs series {_figures(campaign, 'BC')}, no difference of 1% or "
            "more.") in flat
    assert "in place of 2/2 (commit aaaaaaaaaaaa, on base cccccccccccc)" in flat
    assert f"{campaign.triples} triples" in flat
    assert "The three programs ran on this host's own kernel" in flat and "Both" not in flat


def test_an_alternative_the_lab_could_not_tell_apart_is_could_not_tell():
    campaign = _triples({"A": 100.0, "B": 110.0, "C": 110.5}, cv=0.06, k_max=8)
    _, flat = _reply(campaign, "inconclusive")
    assert f"alternative vs series {_figures(campaign, 'BC')}, could not tell." in flat
    assert "no difference" not in flat and "until the most, 8, had run" in flat


def test_a_diff_that_does_not_apply_says_where():
    reply = compose_alternative_not_applied(NotAppliedContext(
        parent=REVIEWER, series=SERIES, placement=PLACE,
        tried=("in place of 2/2", "on top of the series"), failed_at=("mm/vmscan.c:15",),
        conflicts=("mm/vmscan.c",), failed_patch=None), OPTIONS)
    message = email.message_from_bytes(reply.as_bytes(), policy=email.policy.default)
    flat = " ".join(message.get_content().split())
    assert message["In-Reply-To"] == f"<{REVIEWER.msgid}>"
    assert "It does not apply in place of 2/2 nor on top of the series" in flat
    assert "Does not apply at: mm/vmscan.c:15" in flat and "nothing was built or measured" in flat


def test_a_diff_the_rest_of_the_series_does_not_apply_on_names_that_patch():
    reply = compose_alternative_not_applied(NotAppliedContext(
        parent=REVIEWER, series=SERIES, placement=PLACE, tried=("in place of 1/2",),
        failed_at=(), conflicts=("mm/vmscan.c",),
        failed_patch="0002 mm/vmscan: count deactivations in the same batch"), OPTIONS)
    flat = " ".join(email.message_from_bytes(reply.as_bytes(), policy=email.policy.default)
                    .get_content().split())
    assert "The series does not apply with it in place of 1/2" in flat
    assert ("Your diff applies in place of 1/2, but patch 0002 mm/vmscan: count deactivations "
            "in the same batch of the series does not apply after it.") in flat
    assert "Conflicts in: mm/vmscan.c" in flat
