"""Stable JSON shapes of series, versions, patches and messages (documented in README.md).

Other stages and tools read these; add keys freely, never rename or remove one. Series are
loaded a page at a time in a fixed number of statements (`series_views`), without the raw mail
of their messages: a page of 50 series once cost 531 statements and 639 decompressed mails.
A series' shape is one for `lorelab series list|show --json`, the status page and `/api/series`
(bot.web.queries.SeriesRow declares it for the API's schema): with its latest run and the state
of each stage of that run (`stages`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, joinedload, lazyload, load_only, selectinload

from bot.db.models import (
    MailingList,
    Message,
    MessageList,
    OutboxReply,
    Patch,
    Run,
    RunStep,
    Series,
    SeriesVersion,
    iso_utc,
)
from bot.mail import parse_message
from bot.mail.subject import point_of, version_label
from bot.series.undated import UNDATED_FIRST

LORE = "https://lore.kernel.org/r/"
STAGES = ("apply", "build", "bench", "report", "reply")
# When the steps of one stage differ (build-base done, build-patched failed), the stage shows
# the first of these that any of them is in.
_STATE_PRECEDENCE = ("failed", "running", "queued", "cancelled", "superseded")


@dataclass
class Stage:
    name: str  # apply, build, bench, report, reply
    state: str | None  # None: the run has no such step (an apply-only run has no build)
    detail: str = ""  # why it failed, or where it runs


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else iso_utc(value)


def lists_by_series(session: Session, series_ids: list[int]) -> dict[int, list[str]]:
    """The lists each series' cover letters and patches were seen on, by series id."""
    via_patch = (
        sa.select(SeriesVersion.series_id, MessageList.list_id)
        .join(Patch, Patch.series_version_id == SeriesVersion.id)
        .join(MessageList, MessageList.message_id == Patch.message_id)
        .where(SeriesVersion.series_id.in_(series_ids))
    )
    via_cover = (
        sa.select(SeriesVersion.series_id, MessageList.list_id)
        .join(MessageList, MessageList.message_id == SeriesVersion.cover_message_id)
        .where(SeriesVersion.series_id.in_(series_ids))
    )
    seen = sa.union(via_patch, via_cover).subquery()
    pairs = session.execute(
        sa.select(seen.c.series_id, MailingList.name)
        .join(MailingList, MailingList.id == seen.c.list_id)
        .distinct()
    )
    lists: dict[int, list[str]] = {}
    for series_id, name in pairs:
        lists.setdefault(series_id, []).append(name)
    return {k: sorted(v) for k, v in lists.items()}


def patch_dict(patch: Patch, with_trailers: bool = True) -> dict[str, Any]:
    msg = patch.message
    out: dict[str, Any] = {
        "index": patch.index,
        "subject": msg.subject,
        "message_id": msg.msgid,  # lorelab's: a copy's stand-in (`lorelab message show`)
        "sent_message_id": msg.sent_msgid,  # the mail's own, as lore and b4 know it
        "url": LORE + msg.sent_msgid,
        "author": {"name": msg.from_name, "email": msg.from_email},
        "date": _iso(msg.date),
        "files": [f["path"] for f in msg.files],
        "file_changes": msg.files,
        "insertions": msg.insertions,
        "deletions": msg.deletions,
    }
    if with_trailers:
        own = [
            {"name": n, "value": v, "origin": "own", "message_id": msg.msgid}
            for n, v in msg.trailers
        ]
        out["trailers"] = own + [
            {"name": t.name, "value": t.value, "origin": t.origin, "message_id": t.source_msgid}
            for t in patch.trailers
        ]
    return out


def _release_order(version: SeriesVersion) -> tuple[int, int, dt.datetime, int]:
    """Versions as they were released: v4, v4.1 (a point release), v5; postings of one release
    by date."""
    return (version.version, point_of(version.version, version.prefixes),
            version.date or UNDATED_FIRST, version.id)


def version_dict(version: SeriesVersion, with_patches: bool = True,
                 measuring: Mapping[int, tuple[str, str]] | None = None,
                 continued: Mapping[int, tuple[int, int]] | None = None) -> dict[str, Any]:
    """One version in the shape of `series show --json`'s; `measuring` gives, by run id, the
    label of the version a run was made for and the run's state (`measured_by_*`);
    `continued`, by version id, the later piece and its series (`continued_pieces`)."""
    # A partial reroll's patches are its own and, for the numbers it did not send again, those
    # of the version it rerolls (what a test applies); any other version's are its own.
    applied = version.applied_patches
    measured_by = (measuring or {}).get(version.measured_by_run_id or 0)
    after = (continued or {}).get(version.id)
    out: dict[str, Any] = {
        "id": version.id,
        "version": version.version,
        "label": version_label(version.version, version.prefixes),  # v4.1 for a point release
        "title": version.title,
        "expected": version.expected,
        "received": version.received,
        "complete": version.complete,
        "missing": [
            i for i in range(1, version.expected + 1) if i not in {p.index for p in applied}
        ],
        "reroll_of": version.reroll_of.version if version.reroll_of is not None else None,
        "reroll_of_label": (version_label(version.reroll_of.version, version.reroll_of.prefixes)
                            if version.reroll_of is not None else None),
        # an earlier piece of a version sent a few patches at a time: the piece after it
        "continued_by": after[0] if after else None,
        "continued_in_series": after[1] if after else None,
        # The same patches as another version's: the run measuring them (bot.runs.same_patches).
        "measured_by_run": version.measured_by_run_id,
        "measured_by_label": measured_by[0] if measured_by else None,
        "measured_by_state": measured_by[1] if measured_by else None,
        "cover_message_id": version.cover.msgid if version.cover else None,
        "cover_sent_message_id": version.cover.sent_msgid if version.cover else None,
        "anchor_message_id": version.anchor_msgid,
        "base_commit": version.base_commit,
        "change_id": version.change_id,
        "rfc": version.rfc,
        "resend": version.resend,
        "prefixes": version.prefixes,
        "date": _iso(version.date),
        "notes": version.notes,
        # mm's fix-ups sent for its patches (bot.series.fix_ups), which runs do not apply
        "fix_ups": [{"message_id": msgid, "fixes": number, "url": LORE + msgid}
                    for msgid, number in version.fix_ups],
        # lore knows a copy by the id it claims
        "url": LORE + (first.sent_msgid if (first := version.first_message)
                       else version.anchor_msgid),
    }
    if with_patches:
        out["patches"] = [{**patch_dict(p), "from_version": p.version.version,
                           "from_label": version_label(p.version.version, p.version.prefixes),
                           "from_posting": p.version.id}
                          for p in applied]
    return out


def series_dict(session: Session, series: Series, with_patches: bool = True) -> dict[str, Any]:
    """One series in the shape of `lorelab series show --json`."""
    return series_views(session, [series.id], with_patches=with_patches)[0]


def _loading(with_patches: bool) -> list[Any]:
    """Eager loads for a page of series: versions, their patches and cover letters, in a few
    statements, and never a message's raw mail (nor its lists) unless a patch is shown."""
    cover = joinedload(SeriesVersion.cover).options(
        load_only(Message.id, Message.msgid, Message.claimed_msgid), lazyload(Message.lists)
    )
    patches = selectinload(SeriesVersion.patches)
    if with_patches:
        patch_loads = patches.options(
            joinedload(Patch.message).options(
                load_only(Message.id, Message.msgid, Message.claimed_msgid, Message.subject,
                          Message.from_name, Message.from_email, Message.date, Message.files,
                          Message.insertions, Message.deletions, Message.trailers),
                lazyload(Message.lists),
            ),
            selectinload(Patch.trailers),
        )
    else:  # the message-id only: a cover-less version's link is its first patch's
        patch_loads = patches.options(joinedload(Patch.message).options(
            load_only(Message.id, Message.msgid, Message.claimed_msgid),
            lazyload(Message.lists)))
    return [selectinload(Series.versions).options(cover, patch_loads)]


def series_views(
    session: Session, series_ids: list[int], *, with_patches: bool = True, site_url: str = ""
) -> list[dict[str, Any]]:
    """The series with these ids, in this order, each in the shape of `series show --json`
    (`series list --json` and `/api/series`: without `patches`); `url` is its status page
    under `site_url` ([web] base_url)."""
    if not series_ids:
        return []
    found = {
        s.id: s for s in session.scalars(
            sa.select(Series).where(Series.id.in_(series_ids)).options(*_loading(with_patches))
        )
    }
    lists = lists_by_series(session, series_ids)
    series_of = {v.id: s.id for s in found.values() for v in s.versions}
    runs = latest_runs(session, series_of)
    every_version = [v for s in found.values() for v in s.versions]
    measuring = _measuring_runs(session, every_version)
    continued = continued_pieces(session, every_version)
    replies = latest_replies(session, list(series_of))
    out = []
    for series_id in series_ids:
        series = found[series_id]
        versions = sorted(series.versions, key=_release_order)
        latest = versions[-1] if versions else None
        run = runs.get(series_id)
        run_version = next((v for v in versions if run and v.id == run.series_version_id),
                           latest)
        reply = replies.get(run_version.id) if run_version else None
        out.append({
            "id": series.id,
            "title": series.title,
            "author": {"name": series.author_name, "email": series.author_email},
            "change_id": series.change_id,
            "lists": lists.get(series.id, []),
            "latest_version": max((v.version for v in series.versions), default=None),
            "updated": _iso(series.last_mail_at or series.updated_at),
            "versions": [version_dict(v, with_patches, measuring, continued)
                         for v in versions],
            # The status page's columns, flat.
            "author_name": series.author_name,
            "author_email": series.author_email,
            "complete": bool(latest and latest.complete),
            "received": latest.received if latest else 0,
            "expected": latest.expected if latest else 0,
            # The series' latest run, on whichever version, and each stage of it.
            "run_id": run.id if run else None,
            "run_version": run_version.version if run and run_version else None,
            "run_kind": run.kind if run else None,
            "run_state": run.state if run else None,
            "stages": [asdict(stage) for stage in stages(run.steps if run else [], reply)],
            "url": f"{site_url}/series/{series.id}",
        })
    return out


def _measuring_runs(session: Session,
                    versions: list[SeriesVersion]) -> dict[int, tuple[str, str]]:
    """The label of the version each run measuring another's patches was made for, and the
    run's state, by run id (a statement only when a version has such a run; that version is of
    the same series)."""
    wanted = {v.measured_by_run_id for v in versions if v.measured_by_run_id is not None}
    if not wanted:
        return {}
    labels = {v.id: version_label(v.version, v.prefixes) for v in versions}
    return {run_id: (labels[version_id], state) for run_id, version_id, state in session.execute(
        sa.select(Run.id, Run.series_version_id, Run.state).where(Run.id.in_(wanted)))
        if version_id in labels}


def continued_pieces(session: Session,
                     versions: list[SeriesVersion]) -> dict[int, tuple[int, int]]:
    """Of these versions, each that is an earlier piece of a version sent a few patches at a time
    (`bot.series.rerolls`): the piece after it and that piece's series, by version id. A
    statement only when one could be: a reroll that is not complete."""
    pieces = {v.id: v for v in versions if v.reroll_of_id is not None and not v.complete}
    if not pieces:
        return {}
    columns = (SeriesVersion.id, SeriesVersion.series_id, SeriesVersion.reroll_of_id,
               SeriesVersion.version, SeriesVersion.prefixes)
    # The pieces are of one series or one thread: looked up by those, which are indexed, not by
    # `reroll_of_id` alone, which is NULL on nearly every row (SQLite's statistics then scan).
    later = sa.union_all(*(
        sa.select(*columns).where(column.in_({getattr(v, column.key) for v in pieces.values()}),
                                  SeriesVersion.reroll_of_id.in_(pieces))
        for column in (SeriesVersion.series_id, SeriesVersion.thread_id)))
    out: dict[int, tuple[int, int]] = {}
    for row in session.execute(later):
        piece = pieces[row.reroll_of_id]
        if (row.version, point_of(row.version, row.prefixes)) == (
                piece.version, point_of(piece.version, piece.prefixes)):
            out[piece.id] = (row.id, row.series_id)
    return out


def number_ranges(numbers: list[int]) -> str:
    """Patch numbers as a reader takes them in: runs of consecutive numbers as ranges, so that
    one patch of a 365-patch stable review posting reads `1-154, 156-365`, not 364 numbers."""
    runs: list[list[int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def same_patches_words(version: Mapping[str, Any]) -> tuple[str, str]:
    """The words before and after "run N" that say what became of the run measuring a
    version's patches (`measured_by_*` of its shape): it will measure, is measuring or tested
    them; or it was stopped or failed, and nothing measured them (the planner then plans the
    version again unless a newer version of its series has a run, bot.runs.planner)."""
    same = f"the same patches as {version['measured_by_label'] or 'another version'}"
    state = version["measured_by_state"]
    if state == "queued":
        return f"not run again: {same}, which", " will measure"
    if state == "running":
        return f"not run again: {same}, which", " is measuring"
    if state == "done":
        return f"not run again: {same}, which", " tested"
    ended = {"failed": "failed", "cancelled": "was cancelled",
             "superseded": "was stopped for a newer version"}.get(state, "ended")
    return f"not measured: {same}, whose", f" {ended}"


def latest_runs(session: Session, series_of: dict[int, int]) -> dict[int, Run]:
    """Each series' newest run (on any of its versions) that is not a follow-up of another
    (a follow-up shows under its review), with its steps, by series id; `series_of` maps the
    series' version ids to their series."""
    latest = (
        sa.select(sa.func.max(Run.id))
        .join(SeriesVersion, SeriesVersion.id == Run.series_version_id)
        .where(SeriesVersion.series_id.in_(set(series_of.values())),
               Run.parent_run_id.is_(None))
        .group_by(SeriesVersion.series_id)
    )
    runs = session.scalars(
        sa.select(Run).where(Run.id.in_(latest)).options(selectinload(Run.steps))
    )
    return {series_of[run.series_version_id]: run for run in runs}


def latest_replies(session: Session, version_ids: list[int]) -> dict[int, OutboxReply]:
    """Each series version's newest reply, by version id."""
    newest: dict[int, OutboxReply] = {}
    for reply in session.scalars(
        sa.select(OutboxReply).where(OutboxReply.series_version_id.in_(version_ids))
        .order_by(OutboxReply.id)
    ):
        assert reply.series_version_id is not None
        newest[reply.series_version_id] = reply
    return newest


def combined_state(states: list[str]) -> str | None:
    """The state of a stage made of several steps (build: build-base and build-patched)."""
    if not states:
        return None
    if len(set(states)) == 1:
        return states[0]
    return next((s for s in _STATE_PRECEDENCE if s in states), states[-1])


def stages(steps: list[RunStep], reply: OutboxReply | None) -> list[Stage]:
    """Each stage of a run, apply to reply: the state of its steps and what went wrong."""
    by_stage: dict[str, list[RunStep]] = {}
    for step in steps:
        stage = "build" if step.name.startswith("build") else step.name
        by_stage.setdefault(stage, []).append(step)
    out = []
    for name in STAGES[:-1]:
        members = by_stage.get(name, [])
        state = combined_state([s.state for s in members])
        detail = "; ".join(s.error for s in members if s.error) or ", ".join(
            sorted({s.host for s in members if s.host and s.state == "running"}))
        out.append(Stage(name, state, detail))
    out.append(Stage("reply", reply.state if reply else None,
                     (reply.reason or "") if reply else ""))
    return out


def message_dict(session: Session, msg: Message) -> dict[str, Any]:
    patch = session.scalar(sa.select(Patch).where(Patch.message_id == msg.id))
    return {
        "message_id": msg.msgid,
        "subject": msg.subject,
        "from": {"name": msg.from_name, "email": msg.from_email},
        "date": _iso(msg.date),
        "kind": msg.kind,
        "in_reply_to": msg.in_reply_to,
        "references": msg.references,
        "thread_id": msg.thread_id,
        "lists": sorted(lst.name for lst in msg.lists),
        "version": msg.version,
        "counter": msg.counter,
        "total": msg.total,
        "prefixes": msg.prefixes,
        "files": msg.files,
        "insertions": msg.insertions,
        "deletions": msg.deletions,
        "trailers": [{"name": n, "value": v} for n, v in msg.trailers],
        "base_commit": msg.base_commit,
        "change_id": msg.change_id,
        "problems": msg.problems,
        "size": msg.raw_size,
        "body": parse_message(msg.raw).body,
        "series": (
            {
                "series_id": patch.version.series_id,
                "version": patch.version.version,
                "index": patch.index,
            }
            if patch
            else None
        ),
        "url": LORE + msg.sent_msgid,
    }
