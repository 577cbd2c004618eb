"""`#lorelab stop` holds for the whole series: once its author or a maintainer of the touched
files has said it, no run is planned for any version of it and no reply is written about it.

A later `#lorelab test` or `retest` from them lifts it (a newer command wins).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from bot.db.models import CommandRequest, SeriesVersion


def series_stopped(session: Session, series_id: int) -> bool:
    """True when the series' latest accepted test/retest/stop command is a stop."""
    versions = sa.select(SeriesVersion.id).where(SeriesVersion.series_id == series_id)
    latest = session.scalars(
        sa.select(CommandRequest.command)
        .where(CommandRequest.series_version_id.in_(versions),
               CommandRequest.state == "accepted",
               CommandRequest.command.in_(("test", "retest", "stop")))
        .order_by(CommandRequest.created_at.desc(), CommandRequest.id.desc())
        .limit(1)).first()
    return latest == "stop"
