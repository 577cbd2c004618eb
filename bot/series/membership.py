"""Which series each version belongs to, the same whatever the order its mail arrived in.

Two versions are of one series when
- they carry one b4 change-id;
- one person sent them under one title (a version's title: its cover letter's, else its first
  patch's; an empty title links nothing);
- one was sent in reply to the other, a new version threaded under the old: the nearest message
  above its *carrier* (the cover letter, else the first patch) that is part of a version of the
  same author is part of the other, and it is a new version of that one (`_rerolls`), not a
  posting sent beside it.
A series is a connected component of that relation: the versions linked to each other, directly
or through others. Assembly used to put a new version in the first series that matched when it
was stored and never moved it, so a live bot (mail one at a time, patches before their cover
letter, a v2 before the v1 it replies to) and a backfill (batches of thousands) ended with other
series for the same mail. Components are what the mail says, not the order it came in; each batch
recomputes them around the versions it changed (`components`), and their series take their
title, author, change-id and last mail from their versions (`settle_series`), not from whichever
came first.

Ties are broken on the data, never on arrival: versions in order of date, then anchor.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from bot.mail.subject import point_of
from bot.series.grouping import sent_together, series_title
from bot.series.records import SeriesRecord, VersionRecord, title_key
from bot.series.undated import UNDATED_LAST


def carrier_id(version: VersionRecord) -> int | None:
    """The message that speaks for a version: its cover letter, else its first patch (b4
    writes base-commit and change-id there; it is what a new version replies to)."""
    if version.cover_message_id is not None:
        return version.cover_message_id
    return version.patches[min(version.patches)] if version.patches else None


def _carrier(version: VersionRecord, parts: Mapping[int, Any]) -> Any | None:
    """The carrier's row in `parts`, if there."""
    message_id = carrier_id(version)
    return parts.get(message_id) if message_id is not None else None


def order(version: VersionRecord) -> tuple[dt.datetime, str]:
    """Versions in order of date (undated last), then of anchor: the first names the series."""
    return (version.date or UNDATED_LAST, version.anchor_msgid)


def components(
    versions: list[VersionRecord], whole: Iterable[list[VersionRecord]], parts: Mapping[int, Any]
) -> list[list[VersionRecord]]:
    """The series `versions` form, each in `order`, in order of their first version.

    `versions` must hold every version any of them is linked to (whole series, as stored).
    `parts`: the cover letters and patches (rows with `id`, `msgid`, `in_reply_to`,
    `references`, `from_name`, `date`) of their threads, by message id, but for the threads of
    the series in `whole`: series as stored that nothing of this batch can take apart (no
    version of them changed nor is in a thread that did), whose versions stay together."""
    up: dict[int, int] = {}  # union-find over positions in `versions`

    def top(i: int) -> int:
        while up.get(i, i) != i:
            up[i] = up.get(up[i], up[i])
            i = up[i]
        return i

    def join(a: int, b: int) -> None:
        a, b = top(a), top(b)
        if a != b:
            up[max(a, b)] = min(a, b)

    position = {v: i for i, v in enumerate(versions)}
    for series in whole:
        for v in series[1:]:
            join(position[series[0]], position[v])
    first: dict[tuple[str, str], int] = {}  # ("title", author + title) or ("change", id)
    holder: dict[int, int] = {}  # message id -> position of the version it is part of
    msgids = {row.msgid: message_id for message_id, row in parts.items()}
    for i, v in enumerate(versions):
        for key in _keys(v):
            join(first.setdefault(key, i), i)
        for message_id in _members(v):
            holder[message_id] = i
    for i, v in enumerate(versions):
        parent = _replied_to(v, versions, parts, msgids, holder)
        if parent is not None:
            join(parent, i)
    groups: dict[int, list[VersionRecord]] = {}
    for i, v in enumerate(versions):
        groups.setdefault(top(i), []).append(v)
    found = [sorted(group, key=order) for group in groups.values()]
    return sorted(found, key=lambda group: order(group[0]))


def _keys(version: VersionRecord) -> list[tuple[str, str]]:
    # an empty title (a patch with none) says nothing: it links no unrelated postings
    key = title_key(version.title)
    keys = [("title", f"{version.author_email}\n{key}")] if key else []
    if version.change_id:
        keys.append(("change", version.change_id))
    return keys


def _members(version: VersionRecord) -> list[int]:
    cover = [version.cover_message_id] if version.cover_message_id is not None else []
    return cover + list(version.patches.values())


def _replied_to(
    version: VersionRecord, versions: list[VersionRecord], parts: Mapping[int, Any],
    msgids: Mapping[str, int], holder: Mapping[int, int],
) -> int | None:  # fmt: skip
    """The version (its position) that `version` was threaded under: the one the nearest
    message above its carrier is part of, among the versions of its author."""
    carrier = _carrier(version, parts)
    if carrier is None:
        return None
    for parent in [carrier.in_reply_to, *reversed(carrier.references or [])]:
        message_id = msgids.get(parent) if parent else None
        at = holder.get(message_id) if message_id is not None else None
        if at is not None and versions[at].author_email == version.author_email:
            if versions[at] is version or not _rerolls(version, carrier, versions[at],
                                                       parts[message_id]):
                return None
            return at
    return None


def _rerolls(version: VersionRecord, carrier: Any, under: VersionRecord, replied: Any) -> bool:
    """Whether `version`, whose carrier replies to `replied` (a part of `under`), is a new
    version of `under`, or `under` sent again: of a higher version, or of the same one sent
    again (RESEND) or by a later run (an RFC sent again as a PATCH, a series retitled). A lower
    version is not (Coly Li's `[PATCH] test: user space code to test badblocks APIs`, sent
    with `[PATCH v2 0/7] badblocks improvement ...` in reply to it: nvdimm), nor one of the
    same version that the same `git send-email` run sent beside it (Yang Li's two unrelated
    `[PATCH -next]`es, the second in reply to the first; the kernel's, kexec-tools' and
    makedumpfile's patches of Li Zhijian's RFC under one cover letter)."""
    release, under_release = _release(version), _release(under)
    if release != under_release:  # `v4.1`, a respin of v4's patch, comes after v4
        return release > under_release
    return version.resend or not sent_together(replied.date, carrier.date)


def _release(version: VersionRecord) -> tuple[int, int]:
    return version.version, point_of(version.version, version.prefixes)


def settle_series(
    groups: list[list[VersionRecord]], stored: Iterable[SeriesRecord],
    parts: Mapping[int, Any], now: dt.datetime,
) -> tuple[list[SeriesRecord], set[VersionRecord]]:  # fmt: skip
    """Give each group of versions (as `components` makes them) a series, and the series their
    title, author, change-id and last mail. A group keeps the series of its first version that
    an earlier group has not kept, else gets a new one; a series of `stored` (those the
    versions were in) that no group keeps is left with no version, to be deleted. Returns the
    new series and the versions that changed series."""
    was = {v: v.series for group in groups for v in group}
    created: list[SeriesRecord] = []
    moved: set[VersionRecord] = set()
    kept: set[SeriesRecord] = set()
    for group in groups:
        series = next((s for v in group if (s := was[v]) is not None and s.id is not None
                       and s not in kept), None)  # fmt: skip
        if series is None:
            series = SeriesRecord(title="", title_key="", author_name="", author_email="",
                                  change_id=None, last_mail_at=None, versions=0)
            created.append(series)
        kept.add(series)
        for v in group:
            if v.series is not series:
                v.series = series
                v.changed = True
                moved.add(v)
        _describe(series, group, was, parts, now)
    for series in stored:
        if series not in kept:
            series.versions = 0
            series.changed = True
    return created, moved


def _describe(
    series: SeriesRecord, group: list[VersionRecord], was: Mapping[VersionRecord, Any],
    parts: Mapping[int, Any], now: dt.datetime,
) -> None:  # fmt: skip
    """A series' own columns from its versions (`group`, in `order`). A version whose mail is
    not in `parts` is of a series stored whole (`components`): its series' row tells its
    newest mail and, when it comes first, its author's name."""
    first = group[0]
    title = series_title((v.version, v.cover_message_id is not None, v.date, v.title)
                         for v in group)  # fmt: skip
    author = _carrier(first, parts)
    dates: list[dt.datetime] = []
    for v in group:
        if _carrier(v, parts) is not None:
            dates += [d for m in _members(v) if (row := parts.get(m)) and (d := row.date)]
        elif was[v] is not None and was[v].last_mail_at is not None:
            dates.append(was[v].last_mail_at)
    if author is not None:
        name = author.from_name
    else:
        name = was[first].author_name if was[first] is not None else series.author_name
    values = {
        "title": title,
        "title_key": title_key(title),
        "author_email": first.author_email,
        "author_name": name,
        "change_id": next((v.change_id for v in group if v.change_id), None),
        "last_mail_at": max(dates) if dates else series.last_mail_at or now,
        "versions": len(group),
    }
    for column, value in values.items():
        if getattr(series, column) != value:
            setattr(series, column, value)
            series.changed = True
    if any(v.changed for v in group):
        series.changed = True
