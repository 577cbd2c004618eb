"""The planner and patches already measured: a RESEND, or a new version that changed nothing but
its changelogs, gets no review run while another version's run measures the same patches; a
changed patch, another base-commit or a run that was stopped is measured anew. What the
maintainer sees: `lorelab series show` and the status page name the run that measures them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from bot.commands.actions import act
from bot.commands.language import parse_commands
from bot.config import Settings
from bot.config.sections import PlanSettings, TreeSettings
from bot.db.models import Run, SeriesVersion
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series, make_tree
from bot.runs.lifecycle import cancel_run, retest_run
from bot.runs.planner import Planned, plan_new_versions
from bot.runs.states import RunState
from bot.runs.suites import RECLAIM
from tests.cli import Lorelab
from tests.series.mailing import store
from tests.support.web_data import web_settings
from tests.support.web_server import serving

V1 = SeriesSpec(title="mm: reclaim in larger batches", patches=3)


def _sent(spec: SeriesSpec, days: int, **changes: object) -> SeriesSpec:
    """`spec`'s patches sent again `days` after it, with these changes to the posting."""
    return dataclasses.replace(spec, same_changes_as=spec,
                               start_date=spec.date + dt.timedelta(days=days), **changes)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "linux")


@pytest.fixture
def settings(tree: Path) -> Settings:
    settings = Settings(plan=PlanSettings(max_age_days=100_000))
    settings.trees = [TreeSettings("mm", str(tree))]
    return settings


def _plan(db: Database, settings: Settings) -> list[Planned]:
    with db.session() as session:
        return plan_new_versions(session, settings)


def _versions(db: Database) -> list[tuple[str, bool, int | None, bool]]:
    """(label, RESEND, measured_by_run_id, has a run of its own) of every version, as stored."""
    with db.session() as session:
        own = set(session.scalars(sa.select(Run.series_version_id)))
        return [(f"v{v.version}", v.resend, v.measured_by_run_id, v.id in own)
                for v in session.scalars(sa.select(SeriesVersion).order_by(SeriesVersion.date))]


def _state(db: Database, run_id: int) -> str:
    with db.session() as session:
        return session.get(Run, run_id).state


def _runs_section(db: Database, series_id: int, version_id: int) -> str:
    """The HTML of the "Runs of v2" section of the status page showing that posting."""
    with serving(web_settings(db.url)) as site:
        page = requests.get(f"{site}/series/{series_id}?version=2&posting={version_id}",
                            timeout=10).text
    return page[page.index("<h2>Runs of v2</h2>"):page.index("<h2>Replies about")]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def test_a_resend_and_a_version_with_only_new_changelogs_are_not_run_again(
    db: Database, tree: Path, settings: Settings, ingest_settings, tmp_path: Path
) -> None:
    store(db, make_series(tree, V1), ingest_settings)
    (first,) = _plan(db, settings)
    resend = make_series(tree, _sent(V1, 3, subject_prefix="RESEND PATCH"))
    # v2 of the same code: a new cover letter, a reworded changelog and collected trailers
    # (the fingerprint reads the diff only)
    v2 = [re.sub(rb"\nSigned-off-by:", b"\nA clearer changelog.\n\nReviewed-by: Rita Reviewer "
                 b"<rita@example.org>\nSigned-off-by:", m, count=1)
          for m in make_series(tree, _sent(V1, 5, version=2, blurb="Changelogs reworded."))]
    assert sum(b"A clearer changelog" in m for m in v2) == 3
    store(db, [*resend, *v2], ingest_settings)

    assert _plan(db, settings) == []
    assert _plan(db, settings) == []  # decided once
    assert _versions(db) == [("v1", False, None, True), ("v1", True, first.run_id, False),
                             ("v2", False, first.run_id, False)]
    assert _state(db, first.run_id) == RunState.QUEUED  # the same patches do not supersede it

    lorelab = Lorelab(tmp_path / "home", db.url)
    shown = json.loads(lorelab.run("series", "show", str(first.series_version_id),
                                   "--json").stdout)
    assert [(v["label"], v["resend"], v["measured_by_run"], v["measured_by_label"],
             v["measured_by_state"]) for v in shown["versions"]] == [
        ("v1", False, None, None, None), ("v1", True, first.run_id, "v1", "queued"),
        ("v2", False, first.run_id, "v1", "queued")]
    text = lorelab.run("series", "show", str(shown["id"])).stdout.decode()
    assert text.count(f"not run again: the same patches as v1, which run {first.run_id} "
                      "will measure") == 2

    with db.session() as session:
        v2_id = session.scalar(sa.select(SeriesVersion.id).where(SeriesVersion.version == 2))
    runs_part = _runs_section(db, shown["id"], v2_id)
    assert _text(runs_part) == (f"Runs of v2 Not run again: the same patches as v1, which run "
                                f"#{first.run_id} will measure.")
    assert f'href="/runs/{first.run_id}"' in runs_part

    # a maintainer who wants the resend measured anyway asks, and gets a run of its own
    with db.session() as session:
        resent = session.scalars(sa.select(SeriesVersion).where(SeriesVersion.resend)).one()
        (command,) = parse_commands("#lorelab test")
        asked = act(session, settings, resent, command, "maint@example.org",
                    dt.datetime.now(dt.UTC))
        assert asked.outcome == "queued" and session.get(Run, asked.run_id).series_version_id \
            == resent.id != first.series_version_id

    # v3 changes a patch: measured, and v1's unfinished run is superseded for it
    store(db, make_series(tree, _sent(V1, 9, version=3, revised=(2,))), ingest_settings)
    (third,) = _plan(db, settings)
    assert sorted(third.superseded) == sorted((first.run_id, asked.run_id))
    # v2 is not planned again for it: a newer version is measured; and nothing says it was
    assert _plan(db, settings) == []
    text = lorelab.run("series", "show", str(shown["id"])).stdout.decode()
    assert f"not measured: the same patches as v1, whose run {first.run_id} was stopped for a " \
        "newer version" in text
    assert "which run" not in text
    assert _text(_runs_section(db, shown["id"], v2_id)) == (
        f"Runs of v2 Not measured: the same patches as v1, whose run #{first.run_id} was "
        "stopped for a newer version.")


def test_the_same_patches_are_measured_anew_where_that_run_would_not_do(
    db: Database, tree: Path, settings: Settings, ingest_settings
) -> None:
    store(db, make_series(tree, V1), ingest_settings)
    (first,) = _plan(db, settings)
    with db.session() as session:
        cancel_run(session, session.get(Run, first.run_id))
    store(db, make_series(tree, _sent(V1, 3, subject_prefix="RESEND PATCH")), ingest_settings)
    (resent,) = _plan(db, settings)  # a stopped run measured nothing
    assert resent.superseded == ()

    # the same patches on another base, as the author says: measured there
    rebased = [re.sub(rb"(?m)^base-commit: [0-9a-f]+$", b"base-commit: " + b"ab" * 20, m)
               for m in make_series(tree, _sent(V1, 5, version=2))]
    store(db, rebased, ingest_settings)
    (on_base,) = _plan(db, settings)
    assert on_base.superseded == (resent.run_id,)
    assert _versions(db)[-1] == ("v2", False, None, True)

    # the lab's suite for these files changed since: other benchmarks, measured anew
    settings.suites = [dataclasses.replace(RECLAIM, benchmarks=["readtwice"])]
    store(db, [re.sub(rb"(?m)^base-commit: [0-9a-f]+$", b"base-commit: " + b"ab" * 20, m)
               for m in make_series(tree, _sent(V1, 7, version=2, subject_prefix="RESEND PATCH"))],
          ingest_settings)
    (other_suite,) = _plan(db, settings)
    with db.session() as session:
        assert session.get(Run, other_suite.run_id).benchmarks == ["readtwice"]
    assert _versions(db)[-1] == ("v2", True, None, True)


@pytest.mark.parametrize("ended", ["cancelled", "failed"])
def test_a_version_is_planned_again_when_the_run_measuring_its_patches_measured_nothing(
    db: Database, tree: Path, settings: Settings, ingest_settings, tmp_path: Path, ended: str
) -> None:
    store(db, make_series(tree, V1), ingest_settings)
    (first,) = _plan(db, settings)
    store(db, make_series(tree, _sent(V1, 3, version=2)), ingest_settings)
    assert _plan(db, settings) == []
    lorelab = Lorelab(tmp_path / "home", db.url)

    def said() -> str:
        out = lorelab.run("series", "show", str(first.series_version_id)).stdout.decode()
        return " ".join(line.strip() for line in out.splitlines()
                        if "the same patches as" in line)

    with db.session() as session:  # v1's run, stopped or failed before it measured anything
        run = session.get(Run, first.run_id)
        if ended == "cancelled":
            cancel_run(session, run)
        else:
            run.state = RunState.FAILED
    ending = "was cancelled" if ended == "cancelled" else "failed"
    assert said() == f"not measured: the same patches as v1, whose run {first.run_id} {ending}"

    # the maintainer asks for v1 again: v2's patches are that run's to measure
    with db.session() as session:
        again = retest_run(session, session.get(Run, first.run_id)).id
    assert _plan(db, settings) == []
    assert _versions(db) == [("v1", False, None, True), ("v2", False, again, False)]
    assert said() == f"not run again: the same patches as v1, which run {again} will measure"
    with db.session() as session:
        session.get(Run, again).state = RunState.DONE
    assert said() == f"not run again: the same patches as v1, which run {again} tested"

    # a run measured nothing and none other will: v2 gets a run of its own
    with db.session() as session:
        session.get(Run, again).state = RunState(ended)
    (own,) = _plan(db, settings)
    assert _versions(db) == [("v1", False, None, True), ("v2", False, None, True)]
    assert own.superseded == () and said() == ""
