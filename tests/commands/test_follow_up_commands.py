"""Steering follow-ups by mail: `#lorelab test BENCH:k=v pairs=N align`, `#lorelab bisect`,
`#lorelab compare MSGID` and `#lorelab test` in a reviewer's own inline diff, from a stored reply
to a follow-up run of the version's latest review and an answer in the outbox.
"""

from __future__ import annotations

from bot.commands.language import HELP, parse_commands
from bot.db.models import Run
from bot.mail import parse_message
from tests.support.command_thread import ADA, HANNES, MALLORY, RITA, Thread, unwrapped
from tests.support.finished_review import DIFF, children, finish_review

BENCHMARKS = ("hackbench", "readtwice", "reclaim-sim")


def test_test_takes_parameters_pairs_and_align_and_the_new_commands_parse():
    [test] = parse_commands("#lorelab test readtwice:mb=512:files=2 Hackbench pairs=8 align",
                            BENCHMARKS)
    assert test.understood and test.benchmarks == ("readtwice:mb=512:files=2", "hackbench")
    assert (test.pairs, test.align, test.base) == (8, True, None)
    assert test.arguments == ["readtwice:mb=512:files=2", "hackbench", "pairs=8", "align"]
    [bisect, compare, url] = parse_commands(
        "#lorelab bisect\n#lorelab compare <20261130.1-1-rita@example.org>\n"
        "#lorelab compare https://lore.kernel.org/linux-mm/20261130.1-1-rita%40example.org/\n")
    assert bisect.understood and bisect.name == "bisect"
    assert compare.alternative == url.alternative == "20261130.1-1-rita@example.org"

    def problems(line: str) -> tuple[str, ...]:
        [command] = parse_commands(line, BENCHMARKS)
        return command.problems

    assert "unexpected keyword argument 'gb'" in problems("#lorelab test readtwice:gb=1")[0]
    assert "pairs= needs a number from 4 to 100" in problems("#lorelab test pairs=2")[0]
    assert "pairs= needs a number" in problems("#lorelab test pairs=many")[0]
    assert "base= does not go with it" in problems("#lorelab test align base=v6.18")[0]
    assert "compare takes one Message-ID" in problems("#lorelab compare")[0]
    assert "is not a Message-ID" in problems("#lorelab compare yesterday")[0]
    assert problems("#lorelab bisect 3") == ('"bisect" takes no arguments, not "3"',)
    listed = [syntax for syntax, _ in HELP]
    assert "#lorelab bisect" in listed and "#lorelab compare MSGID" in listed
    assert any("align" in syntax for syntax in listed)
    assert any("pairs=N" in syntax for syntax in listed)


def _version(outcome) -> int:  # noqa: ANN001 - a CommandOutcome
    assert outcome.series_version_id is not None
    return outcome.series_version_id


def test_bisect_follows_the_latest_finished_review_once(db, tmp_path):
    thread = Thread(db, tmp_path)
    # No review yet: a clear answer, nothing made.
    _, [early] = thread.send(thread.v1[0], ADA, "#lorelab bisect")
    assert early.outcome == "refused" and early.run_ids == ()
    text = unwrapped(thread.answer(early.outbox_id))
    assert "v1 has no review to follow up yet" in text and "Nothing was queued." in text
    review = finish_review(db, _version(early))
    _, [asked] = thread.send(thread.v1[0], ADA, "#lorelab bisect")
    assert asked.outcome == "queued"
    [run_id] = asked.run_ids
    [bisect] = children(db, review)
    assert (bisect.id, bisect.kind, bisect.parent_run_id, bisect.trigger, bisect.benchmarks) == (
        run_id, "bisect", review, "email:ada@example.org", ["hackbench"])
    assert bisect.requested_base == "c" * 40  # the review's own base
    answer = unwrapped(thread.answer(asked.outbox_id))
    assert "Queued: a bisection of \"mm/vmscan: reclaim in larger batches\" v1 (2 patches)" \
        in answer and f"what run {review} found" in answer
    # Johannes asks for the same: one run, and he is told it was asked for already.
    _, [again] = thread.send(thread.v1[1], HANNES, "#lorelab bisect")
    assert again.outcome == "queued" and again.run_ids == () and len(children(db, review)) == 1
    assert f"asked for already: run {run_id}" in again.detail
    # A stranger may not.
    _, [stranger] = thread.send(thread.v1[1], MALLORY, "#lorelab bisect")
    assert stranger.outcome == "refused" and len(children(db, review)) == 1
    # Once it has run, asking again is told what it found, and nothing runs again.
    with db.session() as session:
        session.get(Run, run_id).state = "done"
    _, [done] = thread.send(thread.v1[1], ADA, "#lorelab bisect")
    assert done.outcome == "done" and done.run_ids == () and len(children(db, review)) == 1
    assert "This was done already: a bisection" in unwrapped(thread.answer(done.outbox_id))


def test_align_and_pairs_reach_the_runs_they_make(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [plain] = thread.send(thread.v1[1], ADA, "#lorelab test readtwice:mb=512 pairs=8")
    assert plain.outcome == "queued"
    review_with_pairs = thread.run(plain.run_ids[0])
    assert (review_with_pairs.kind, review_with_pairs.benchmarks, review_with_pairs.options) == (
        "review", ["readtwice:mb=512"], {"pairs": 8})
    assert "at most 8 pairs" in unwrapped(thread.answer(plain.outbox_id))
    _, [early] = thread.send(thread.v1[1], ADA, "#lorelab test align")
    assert early.outcome == "refused"
    assert f"run {review_with_pairs.id}) has not finished" in early.detail
    review = finish_review(db, _version(plain))
    _, [align] = thread.send(thread.v1[1], ADA, "#lorelab test hackbench pairs=12 align")
    assert align.outcome == "queued"
    [run] = children(db, review)
    assert (run.kind, run.benchmarks, run.options) == ("align", ["hackbench"], {"pairs": 12})
    assert "forced function alignment" in unwrapped(thread.answer(align.outbox_id))


def test_compare_names_the_alternative_and_says_what_cannot_be_compared(db, tmp_path):
    thread = Thread(db, tmp_path)
    alternative = thread.reply(thread.v1[1], RITA, "How about this instead?", diff=DIFF)
    comment = thread.reply(thread.v1[1], RITA, "I do not like the name.")
    thread.store(alternative, comment)
    alternative_id, comment_id = (parse_message(m).msgid for m in (alternative, comment))
    with db.session() as session:
        from bot.db.models import Message

        kinds = {m.msgid: m.kind for m in session.query(Message).filter(
            Message.msgid.in_([alternative_id, comment_id]))}
    assert kinds == {alternative_id: "inline-diff", comment_id: "review"}
    _, [no_review] = thread.send(thread.v1[0], ADA, f"#lorelab compare <{alternative_id}>")
    assert no_review.outcome == "refused"
    review = finish_review(db, _version(no_review))
    for msgid, said in (("nowhere@example.org", "lorelab has no message <nowhere@example.org>"),
                        (comment_id, "carries no inline diff")):
        _, [refused] = thread.send(thread.v1[0], ADA, f"#lorelab compare <{msgid}>")
        assert refused.outcome == "refused" and said in refused.detail
        assert said in unwrapped(thread.answer(refused.outbox_id))
    _, [asked] = thread.send(thread.v1[0], ADA, f"#lorelab compare <{alternative_id}>")
    assert asked.outcome == "queued"
    [compare] = children(db, review)
    assert (compare.kind, compare.options, compare.benchmarks) == (
        "compare", {"alternative": alternative_id}, ["hackbench"])
    assert f"with the alternative <{alternative_id}>" in unwrapped(
        thread.answer(asked.outbox_id))


def test_test_in_a_reviewers_own_inline_diff_compares_that_diff(db, tmp_path):
    thread = Thread(db, tmp_path)
    _, [first] = thread.send(thread.v1[0], ADA, "#lorelab help")
    review = finish_review(db, _version(first))
    # Johannes (a maintainer on the thread) posts his version of patch 2 and asks for a test.
    mail, [asked] = thread.send(thread.v1[2], HANNES, "Simpler:\n\n#lorelab test\n", diff=DIFF)
    assert asked.outcome == "queued"
    [compare] = children(db, review)
    assert (compare.kind, compare.options, compare.trigger) == (
        "compare", {"alternative": parse_message(mail).msgid}, "email:hannes@cmpxchg.org")
    # The author's own diff is not an alternative to her series: an ordinary test.
    _, [own] = thread.send(thread.v1[2], ADA, "Or this:\n\n#lorelab test hackbench\n", diff=DIFF)
    assert own.outcome == "queued" and thread.run(own.run_ids[0]).kind == "review"
