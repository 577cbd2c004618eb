"""A step whose input an earlier step failed to make is shown as skipped for that step."""

from bot.runs.skipped import failed_need


def test_after_a_reviewers_diff_that_does_not_apply_its_build_and_the_bench_are_skipped():
    states = {"apply": "done", "apply-alternative": "failed", "build-base": "done",
              "build-patched": "done", "build-alternative": "failed", "bench": "failed"}
    assert failed_need("build-alternative", states) == "apply-alternative"
    assert failed_need("bench", states) == "apply-alternative"
    assert failed_need("build-patched", states) is None


def test_a_bisection_is_skipped_for_the_apply_not_for_the_builds_skipped_with_it():
    states = {"apply": "failed", "build-base": "failed", "build-prefixes": "failed",
              "bisect": "failed"}
    assert failed_need("bisect", states) == "apply"
    assert failed_need("apply", states) is None
