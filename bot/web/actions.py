"""What an admin may do from the status site: approve a reply, retest or cancel a run.

Each action checks where the request came from (`check_origin`: a page of another site may not
post to this one, token or not) and the admin token (`check_token`), then changes rows in the
caller's session through the same functions the CLI uses (bot.report.deliver.outbox,
bot.runs.lifecycle); the caller commits. A retest's steps are sent to Celery only after that
commit (`dispatch`), so a worker never looks for a run that is not there yet.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import OutboxReply, Run
from bot.db.session import Database
from bot.report.deliver import outbox
from bot.runs.lifecycle import cancel_run, retest_run


class ActionError(Exception):
    """An action that cannot be done; `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


DISABLED = ("admin actions are disabled: set [web] admin_token in the config file "
            "(or LORELAB_WEB_ADMIN_TOKEN) and restart `lorelab serve`")


def check_token(configured: str, given: str | None) -> None:
    """403 when no token is configured, 401 when the given one is missing or wrong."""
    if not configured:
        raise ActionError(403, DISABLED)
    if not given or not hmac.compare_digest(given.encode(), configured.encode()):
        raise ActionError(401, "this action needs the admin token ([web] admin_token)")


def site_of(url: str) -> str:
    """The host[:port] of a URL as a browser's Origin names it (no default port), "" if none."""
    parts = urlsplit(url)
    netloc = parts.netloc.lower().rsplit("@", 1)[-1]
    default = {"http": ":80", "https": ":443"}.get(parts.scheme)
    return netloc.removesuffix(default) if default else netloc


def check_origin(origin: str | None, referer: str | None, sites: set[str]) -> None:
    """403 when a browser says the request comes from a page that is not on one of `sites`
    (host[:port], see `site_of`: this site as the request reached it, and as [web] base_url
    names it). A browser sends Origin (or at least Referer) with every form POST, so a page
    elsewhere cannot make an admin's browser act; a request with neither (curl, a script with
    the bearer token) is not a browser's."""
    source = origin or referer
    if source is None:
        return
    site = "" if source == "null" else site_of(source)
    if not site or site not in sites:
        parts = urlsplit(source)
        shown = f"{parts.scheme}://{parts.netloc}" if parts.netloc else source
        raise ActionError(403, f"cross-site request refused: it came from a page on {shown}, "
                               "not from this site; use the form on lorelab's own page")


def _run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise ActionError(404, f"no run {run_id}")
    return run


def approve_reply(session: Session, reply_id: int, by: str) -> OutboxReply:
    """pending-approval -> queued: the sender delivers it on its next pass."""
    row = session.get(OutboxReply, reply_id)
    if row is None:
        raise ActionError(404, f"no reply {reply_id}")
    try:
        outbox.approve(session, row, by)
    except outbox.OutboxError as exc:
        raise ActionError(409, str(exc)) from None
    return row


def retest(session: Session, run_id: int) -> Run:
    """A new run like `run_id`, queued; send it with `dispatch` after committing."""
    return retest_run(session, _run(session, run_id), trigger="web")


def cancel(session: Session, run_id: int) -> Run:
    run = _run(session, run_id)
    if not cancel_run(session, run):
        raise ActionError(409, f"run {run_id} has finished ({run.state}): nothing to cancel")
    return run


def dispatch(db: Database, settings: Settings, run_id: int) -> None:
    """Send a committed run's steps to Celery (eager mode: run them here, now)."""
    # Celery costs a third of a second to import: only when a run is sent.
    from bot.runs.taskqueue import send_run

    send_run(db, settings, run_id)
