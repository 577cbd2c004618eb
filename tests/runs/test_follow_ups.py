"""Which follow-ups a finished review calls for, and that each is made once: the rule on its
own, then on stored threads (a reviewer's inline diff, the author's command line) with review
runs finished as the workers finish them, and the round of `lorelab run` that sends them."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from bot.config.sections import FollowUpSettings
from bot.db.models import Run, SeriesVersion
from bot.db.session import Database
from bot.mail import parse_message
from bot.report.compose.results import ClaimQuote
from bot.runs.follow_ups import (
    FollowUp,
    ReviewFacts,
    claims_improvement,
    compare_new_alternatives,
    plan,
    start_follow_ups,
)
from bot.runs.rounds import unstarted_runs
from tests.support.command_thread import ADA, RITA, Thread
from tests.support.finished_review import DIFF, children, finish_review

ON = FollowUpSettings()


def only_version(db: Database) -> int:
    with db.session() as session:
        return session.scalars(sa.select(SeriesVersion.id)).one()


def kinds(facts: ReviewFacts, settings: FollowUpSettings = ON) -> list[str]:
    return [f.kind for f in plan(facts, settings)]


def test_a_change_in_a_series_of_several_patches_is_bisected_and_aligned():
    regression = ReviewFacts("regression", patches=2, changed=("hackbench",))
    assert plan(regression, ON) == [FollowUp("bisect", {}, ("hackbench",)),
                                    FollowUp("align", {}, ("hackbench",))]
    # One patch: nothing to bisect; the change is still checked for alignment.
    assert kinds(ReviewFacts("regression", patches=1)) == ["align"]
    # An improvement the author claimed needs no culprit; one nobody claimed does.
    assert kinds(ReviewFacts("improvement", patches=3, claimed_improvement=True)) == ["align"]
    assert kinds(ReviewFacts("improvement", patches=3)) == ["bisect", "align"]
    # No change, or nothing told from noise: nothing to bisect or align.
    for outcome in ("no change", "inconclusive"):
        assert kinds(ReviewFacts(outcome, patches=3)) == []


def test_alternatives_and_the_authors_commands_follow_any_measured_review():
    experiment = FollowUp("experiment", {"commands": []}, ("reclaim-sim:ops=1000",))
    facts = ReviewFacts("no change", patches=2, alternatives=("a@x", "b@x"),
                        experiment=experiment)
    assert plan(facts, ON) == [FollowUp("compare", {"alternative": "a@x"}),
                               FollowUp("compare", {"alternative": "b@x"}), experiment]
    # A series that did not apply or build has nothing measured to set them beside.
    for outcome in ("does not apply", "does not build", "not benchmarked", "pending"):
        assert plan(ReviewFacts(outcome, patches=2, alternatives=("a@x",),
                                experiment=experiment), ON) == []


def test_each_follow_up_is_off_when_its_setting_is():
    facts = ReviewFacts("regression", patches=2, alternatives=("a@x",),
                        experiment=FollowUp("experiment", {}, ("hackbench",)))
    assert kinds(facts) == ["bisect", "align", "compare", "experiment"]
    for kind in ("bisect", "align", "compare", "experiment"):
        settings = FollowUpSettings(**{kind: False})
        assert kind not in kinds(facts, settings) and len(kinds(facts, settings)) == 3


@pytest.mark.parametrize(("change", "higher", "claimed"), [
    (+12.0, True, True), (-8.0, False, True), (-8.0, True, False), (+3.0, None, False),
    (None, True, False)])
def test_an_improvement_claim_is_one_that_says_better(change, higher, claimed):
    quote = ClaimQuote(author="Ada", lines=("x",), summary="", change_pct=change,
                       higher_is_better=higher)
    assert claims_improvement(quote) is claimed


def test_a_finished_review_plans_its_follow_ups_once(db, tmp_path):
    thread = Thread(db, tmp_path)
    alternative = thread.reply(thread.v1[1], RITA, "How about this instead?", diff=DIFF)
    own = thread.reply(thread.v1[1], ADA, "Or, smaller:", diff=DIFF)  # the author's: not one
    thread.store(alternative, own)
    review = finish_review(db, only_version(db))
    with db.session() as session:
        made = start_follow_ups(session, thread.settings, session.get(Run, review))
    runs = children(db, review)
    assert [r.id for r in runs] == made
    assert [(r.kind, r.options, r.benchmarks, r.trigger, r.state) for r in runs] == [
        ("bisect", {}, ["hackbench"], "auto", "queued"),
        ("align", {}, ["hackbench"], "auto", "queued"),
        ("compare", {"alternative": parse_message(alternative).msgid}, ["hackbench"], "auto",
         "queued")]
    assert all(r.requested_base == "c" * 40 and r.tree == "mm" for r in runs)
    with db.session() as session:  # the report step again (a redelivered task): nothing new
        assert start_follow_ups(session, thread.settings, session.get(Run, review)) == []
    assert len(children(db, review)) == 3
    # The round sends the follow-ups no one sent; the review itself is not one.
    assert unstarted_runs(db, follow_ups=True) == made
    # An inline diff that comes after the review: a compare of its own, once.
    later = thread.reply(thread.v1[2], RITA, "And for patch 2:", diff=DIFF)
    thread.store(later)
    later_id = parse_message(later).msgid
    made_later = []
    for _ in range(2):
        with db.session() as session:
            made_later.append(compare_new_alternatives(session, thread.settings,
                                                       [later_id, parse_message(own).msgid]))
    assert len(made_later[0]) == 1 and made_later[1] == []
    assert children(db, review)[-1].options == {"alternative": later_id}


def test_a_review_that_found_nothing_is_followed_by_nothing_but_alternatives(db, tmp_path):
    thread = Thread(db, tmp_path)
    review = finish_review(db, only_version(db), verdict="no change", change_pct=0.1)
    with db.session() as session:
        assert start_follow_ups(session, thread.settings, session.get(Run, review)) == []
    # The author's own command line, stated in a reply: run as the author ran it.
    thread.store(thread.reply(thread.v1[0], ADA,
                              "I measured with the simulator:\n\n"
                              "  $ ./arch/x86/boot/bzImage 200000\n"))
    with db.session() as session:
        start_follow_ups(session, thread.settings, session.get(Run, review))
    [experiment] = children(db, review)
    assert experiment.kind == "experiment"
    assert experiment.benchmarks == ["reclaim-sim:ops=200000"]
    assert experiment.options["commands"][0]["text"].endswith("bzImage 200000")



def test_no_experiment_repeats_what_the_review_ran_as_the_author_stated_it(db, tmp_path):
    thread = Thread(db, tmp_path)
    thread.store(thread.reply(thread.v1[0], ADA,
                              "I measured with the simulator:\n\n"
                              "  $ ./arch/x86/boot/bzImage 200000\n"))
    review = finish_review(db, only_version(db), verdict="no change", change_pct=0.1,
                           benchmarks=("reclaim-sim:ops=200000",))
    with db.session() as session:
        assert start_follow_ups(session, thread.settings, session.get(Run, review)) == []
