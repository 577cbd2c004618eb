"""The planner and a patch corrected after a run applied it: the author sends patch 2 again, a
day later, in reply to the cover letter; the version now holds the correction, which the run
never applied. A new run measures the version as it stands, the old one stops if it has not
finished, and the old run's reproduce steps still name the patches it applied."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from bot.config import Settings
from bot.config.build import BuildSettings
from bot.config.sections import PlanSettings, TreeSettings
from bot.db.models import Run, SeriesVersion
from bot.db.session import Database
from bot.demo.threads import SeriesSpec, make_series, make_tree
from bot.report.compose.from_db import fetch_lines, patches_applied_by, series_info
from bot.runs.planner import plan_new_versions
from bot.runs.records import ApplyRecord
from bot.runs.states import RunState, StepState
from tests.series.mailing import msgs_id, store, with_header
from tests.support.web_data import web_settings
from tests.support.web_server import serving
from workers.kernel.steps import run_apply_step

V1 = SeriesSpec(title="mm: reclaim in larger batches", patches=3)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "linux")


@pytest.fixture
def settings(tree: Path, tmp_path: Path) -> Settings:
    settings = Settings(plan=PlanSettings(max_age_days=100_000),
                        build=BuildSettings(work_dir=str(tmp_path / "build")))
    settings.trees = [TreeSettings("mm", str(tree))]
    return settings


def _apply(db: Database, settings: Settings, run_id: int) -> tuple[str, ...]:
    """Run the run's apply step (git am on the stand-in tree); the patches it recorded."""
    with db.session() as session:
        step_id = next(s.id for s in session.get(Run, run_id).steps if s.name == "apply")
    run_apply_step(db, settings, step_id)
    with db.session() as session:
        step = next(s for s in session.get(Run, run_id).steps if s.name == "apply")
        assert step.state == StepState.DONE, step.error
        return ApplyRecord.from_step(step).patches


def _patches(db: Database, version_id: int) -> tuple[str, ...]:
    with db.session() as session:
        version = session.get(SeriesVersion, version_id)
        return tuple(p.message.msgid for p in version.applied_patches)


@pytest.mark.parametrize("finished", [False, True])
def test_a_version_corrected_after_its_run_applied_it_is_measured_again(
    db: Database, tree: Path, settings: Settings, ingest_settings, finished: bool
) -> None:
    posted = make_series(tree, V1)
    store(db, posted, ingest_settings)
    with db.session() as session:
        (first,) = plan_new_versions(session, settings)
    sent = tuple(msgs_id(m) for m in posted[1:])
    assert _apply(db, settings, first.run_id) == sent
    if finished:
        with db.session() as session:
            run = session.get(Run, first.run_id)
            run.state = RunState.DONE
            for step in run.steps:
                step.state = StepState.DONE

    # patch 2 done differently, sent again a day later in reply to the cover letter
    later_day = V1.date + dt.timedelta(days=1)
    later = make_series(tree, dataclasses.replace(V1, start_date=later_day, same_changes_as=V1,
                                                  revised=(2,)))
    cover = f"<{msgs_id(posted[0])}>"
    fixed = with_header(with_header(later[2], "In-Reply-To", cover), "References", cover)
    store(db, [fixed], ingest_settings)
    now = _patches(db, first.series_version_id)
    assert now == (sent[0], msgs_id(fixed), sent[2])  # the version holds the correction

    with db.session() as session:
        (again,) = plan_new_versions(session, settings)
    assert again.series_version_id == first.series_version_id
    assert again.superseded == (() if finished else (first.run_id,))
    with db.session() as session:
        old, new = session.get(Run, first.run_id), session.get(Run, again.run_id)
        assert old.state == (RunState.DONE if finished else RunState.SUPERSEDED)
        assert (new.state, new.kind, new.tree, new.benchmarks) == (
            RunState.QUEUED, "review", old.tree, old.benchmarks)
        # what the old run's reply tells a reader to apply: the patches it tested
        lines = "\n".join(fetch_lines(session.get(SeriesVersion, first.series_version_id),
                                      "c" * 40, patches_applied_by(old)))
        assert sent[1] in lines and msgs_id(fixed) not in lines
    with db.session() as session:
        assert plan_new_versions(session, settings) == []  # the new run applies what is there
    assert _apply(db, settings, again.run_id) == now
    with db.session() as session:
        # its reply says why a second one: which patch it tests in place of which run's
        version = session.get(SeriesVersion, first.series_version_id)
        assert series_info(version, run_id=again.run_id).resent_sentence() == (
            f" This run tests patch 2/3 as sent on {later_day:%Y-%m-%d} <{now[1]}>, in place of "
            f"the one run {first.run_id} tested.")
        assert series_info(version, run_id=first.run_id).resent_sentence() == ""
        assert plan_new_versions(session, settings) == []
        assert session.scalar(sa.select(sa.func.count()).select_from(Run)) == 2
    # each run's page links the patches it applied, as lore knows them
    with serving(web_settings(db.url)) as site:
        pages = [requests.get(f"{site}/runs/{run_id}", timeout=10).text
                 for run_id in (first.run_id, again.run_id)]
    for page, patches in zip(pages, (sent, now), strict=True):
        assert re.findall(r'href="https://lore.kernel.org/r/([^"]+)">\d/3<', page) == list(patches)
