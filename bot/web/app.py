"""The status site's FastAPI app: HTML pages for people, a JSON API under /api/ for programs.

Pages are rendered on the server and work without JavaScript: plain links, GET forms for the
filters, POST forms for admin actions. Both faces read through bot.web.queries; admin actions
(bot.web.actions) need the [web] admin_token: as a form field from a page, as
`Authorization: Bearer TOKEN` from the API; they refuse a page of another site (Origin check)
and an address that sent too many wrong tokens (bot.web.throttle). Unknown ids answer 404;
ids and offsets no database column can hold, 422; as a page, or as JSON `{"detail": ...}` under
/api/. Every answer carries the security headers of bot.web.headers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from fastapi import BackgroundTasks, Depends, FastAPI, Form, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import AfterValidator
from sqlalchemy.orm import Session
from starlette.exceptions import HTTPException as StarletteHTTPException

from bot import __version__
from bot.config import Settings
from bot.db.session import Database, ensure_schema, open_database
from bot.report.compose.tables import fmt_interval, fmt_p, fmt_pct, fmt_value
from bot.series.views import LORE, number_ranges, same_patches_words
from bot.web import actions, configs, queries
from bot.web.headers import SecurityHeaders
from bot.web.plots import Point, distribution_svg, run_order_svg
from bot.web.throttle import TokenThrottle

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
# Ids are `integer` columns (32 bits on PostgreSQL): a larger one can name no row, and would
# make the database fail rather than find nothing. No list is longer either (offsets).
MAX_ID = 2**31 - 1


def _session(request: Request) -> Iterator[Session]:
    with request.app.state.db.session() as session:
        yield session


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL, so no stored name has one: say so instead of failing.
    if "\x00" in value:
        raise ValueError("a NUL character (%00) matches nothing lorelab stores: leave it out")
    return value


# Parameters shared by routes; at module level so that FastAPI can resolve the annotations.
Db = Annotated[Session, Depends(_session)]
Text = AfterValidator(_no_nul)
ListQuery = Annotated[str, Query(alias="list", description="A list name, e.g. linux-mm."), Text]
StateQuery = Annotated[str, Query(
    description=f"The state of the series' latest run: {', '.join(queries.RUN_STATES)}, "
                f"or '{queries.NEVER_RUN}' for series never run."), Text]
AuthorQuery = Annotated[str, Query(description="Part of the author's name or address."), Text]
LimitQuery = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]
OffsetQuery = Annotated[int, Query(ge=0, le=MAX_ID)]
Id = Annotated[int, Path(ge=1, le=MAX_ID, description=f"A row id, 1 to {MAX_ID}.")]
Bearer = Annotated[HTTPAuthorizationCredentials | None,
                   Depends(HTTPBearer(auto_error=False, description="The [web] admin_token"))]
Token = Annotated[str, Form(description="The [web] admin_token")]


def _when(value: dt.datetime | str | None) -> str:
    """A time as the pages show it; ISO strings come from the stable series shape."""
    if not value:
        return "—"
    when = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 120:
        return f"{value:.1f} s"
    minutes, seconds = divmod(int(value), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}" if minutes >= 60 else \
        f"{minutes} min {seconds} s"


def _plots(samples: list[queries.SampleView], metrics: list[str] | None, prefix: str
           ) -> list[dict[str, str]]:
    """Both plots of each metric (of `metrics` when given, else all), in that order."""
    names = metrics if metrics is not None else list(dict.fromkeys(s.metric for s in samples))
    out = []
    for index, name in enumerate(names):
        points = [Point(s.slot, s.kernel, s.value, s.warmup) for s in samples if s.metric == name]
        if not points:
            continue
        unit = next(s.unit for s in samples if s.metric == name)
        ident = f"{prefix}-{index}"
        out.append({
            "metric": name,
            "run_order": run_order_svg(points, metric=name, unit=unit, ident=f"{ident}-order"),
            "distribution": distribution_svg(points, metric=name, unit=unit,
                                             ident=f"{ident}-dist"),
        })
    return out


def _templates() -> Jinja2Templates:
    env = Environment(loader=PackageLoader("bot.web", "templates"),
                      autoescape=select_autoescape(["html"]))
    env.filters.update(when=_when, seconds=_seconds, pct=fmt_pct, p=fmt_p,
                       value=lambda v: "—" if v is None else fmt_value(v),
                       interval=lambda ci: "—" if ci is None else fmt_interval(*ci),
                       ranges=number_ranges)
    env.globals.update(version=__version__, lore=LORE, verdict_rows=queries.verdict_rows,
                       stage_names=queries.STAGES, run_states=queries.RUN_STATES,
                       never_run=queries.NEVER_RUN,
                       same_patches_words=same_patches_words)
    return Jinja2Templates(env=env)


def create_app(settings: Settings, database: Database | None = None) -> FastAPI:
    """The app, reading and writing the configured database (or `database`)."""
    db = database or open_database(settings.database.resolved_url())
    ensure_schema(db.engine)
    base_url = settings.web.base_url.rstrip("/")
    admin_token = settings.web.admin_token
    templates = _templates()
    app = FastAPI(
        title="lorelab",
        version=__version__,
        summary="Patch series, their runs, benchmark campaigns and lab hosts.",
        description="Read-only without a token. Admin actions (POST) need "
                    "`Authorization: Bearer <[web] admin_token>`.",
        # The interactive docs would run a CDN's JavaScript in this origin (and break the CSP);
        # the schema is served at /openapi.json.
        docs_url=None,
        redoc_url=None,
    )
    app.state.db = db
    app.add_middleware(SecurityHeaders)
    throttle = TokenThrottle()
    base_sites = {actions.site_of(base_url)} if base_url else set()

    def page(request: Request, name: str, status_code: int = 200,
             headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
        context.setdefault("admin_enabled", bool(admin_token))
        context.setdefault("csp_nonce", request.state.csp_nonce)
        return templates.TemplateResponse(request, name, context, status_code=status_code,
                                          headers=headers)

    def found(value: Any, what: str, ident: int) -> Any:
        if value is None:
            raise HTTPException(404, f"no {what} {ident}")
        return value

    def admit(request: Request, token: str | None) -> None:
        """Refuse a page of another site, an address that sent too many wrong tokens (without
        comparing this one), and a wrong token (counted)."""
        address = request.client.host if request.client else "unknown"
        here = actions.site_of(f"{request.url.scheme}://{request.headers.get('host', '')}")
        actions.check_origin(request.headers.get("origin"), request.headers.get("referer"),
                             {here, *base_sites})
        wait = throttle.wait(address)
        if wait:
            raise HTTPException(429, f"too many wrong admin tokens from {address} (at most "
                                     f"{throttle.limit} a minute): try again in {wait} s",
                                headers={"Retry-After": str(wait)})
        try:
            actions.check_token(admin_token, token)
        except actions.ActionError as exc:
            if exc.status == 401 and token:
                throttle.failed(address)
            raise

    def act(request: Request, action: Callable[[Session], Any], token: str | None) -> Any:
        """Admit the request, run the action in a transaction of its own."""
        try:
            admit(request, token)
            with db.session() as s:
                return action(s)
        except actions.ActionError as exc:
            headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
            raise HTTPException(exc.status, exc.message, headers=headers) from None

    def _error(request: Request, status: int, message: str,
               headers: dict[str, str] | None = None) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=status, headers=headers)
        return page(request, "error.html", status_code=status, headers=headers, status=status,
                    message=message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = exc.detail if exc.status_code != 404 or exc.detail != "Not Found" else \
            f"no page at {request.url.path}"
        return _error(request, exc.status_code, str(message), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}"
                             for e in exc.errors())
        if request.url.path.startswith("/api/"):
            # jsonable_encoder: an error's context may hold the exception a validator raised
            return JSONResponse({"detail": jsonable_encoder(exc.errors())}, status_code=422)
        return _error(request, 422, f"bad request: {problems}")

    # --- JSON API -----------------------------------------------------------------------------

    @app.get("/api/series", tags=["series"], summary="Series, most recently updated first")
    def api_series(s: Db, list_name: ListQuery = "", state: StateQuery = "",
                   author: AuthorQuery = "", limit: LimitQuery = PAGE_SIZE,
                   offset: OffsetQuery = 0) -> list[queries.SeriesRow]:
        filters = queries.SeriesFilter(list_name, state, author)
        return queries.series_rows(s, filters, limit=limit, offset=offset, base_url=base_url)

    @app.get("/api/series/{series_id}", tags=["series"],
             summary="A series: versions, patches, runs, campaigns and replies")
    def api_series_detail(series_id: Id, s: Db) -> queries.SeriesDetail:
        return found(queries.series_detail(s, series_id, base_url=base_url), "series",
                     series_id)

    @app.get("/api/runs/{run_id}", tags=["runs"], summary="A run, its steps and campaigns")
    def api_run(run_id: Id, s: Db) -> queries.RunView:
        return found(queries.run_detail(s, run_id, base_url=base_url), "run", run_id)

    @app.get("/api/campaigns/{campaign_id}", tags=["lab"],
             summary="A lab campaign with its verdicts and every raw sample")
    def api_campaign(campaign_id: Id, s: Db) -> queries.CampaignView:
        return found(queries.campaign_detail(s, campaign_id, base_url=base_url), "campaign",
                     campaign_id)

    @app.get("/api/hosts", tags=["lab"], summary="Lab hosts, queues and recent campaigns")
    def api_hosts(s: Db) -> queries.HostsView:
        return queries.lab_hosts(s, settings, base_url=base_url)

    def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
        return credentials.credentials if credentials else None

    @app.post("/api/runs/{run_id}/retest", tags=["admin"], status_code=201,
              summary="Queue a new run like this one (admin)")
    def api_retest(run_id: Id, credentials: Bearer, tasks: BackgroundTasks, request: Request
                   ) -> queries.RunView:
        new_id = act(request, lambda s: actions.retest(s, run_id).id, _token(credentials))
        tasks.add_task(actions.dispatch, db, settings, new_id)
        with db.session() as s:
            return found(queries.run_detail(s, new_id, base_url=base_url), "run", new_id)

    @app.post("/api/runs/{run_id}/cancel", tags=["admin"],
              summary="Cancel a run that has not finished (admin)")
    def api_cancel(run_id: Id, credentials: Bearer, request: Request) -> queries.RunView:
        act(request, lambda s: actions.cancel(s, run_id), _token(credentials))
        with db.session() as s:
            return found(queries.run_detail(s, run_id, base_url=base_url), "run", run_id)

    @app.post("/api/replies/{reply_id}/approve", tags=["admin"],
              summary="Let a reply that waits for moderation go out (admin)")
    def api_approve(reply_id: Id, credentials: Bearer, request: Request) -> queries.ReplyView:
        return act(request,
                   lambda s: queries.reply_view(actions.approve_reply(s, reply_id, "web")),
                   _token(credentials))

    # --- HTML pages ---------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request, s: Db, list_name: ListQuery = "", state: StateQuery = "",
              author: AuthorQuery = "", limit: LimitQuery = PAGE_SIZE,
              offset: OffsetQuery = 0) -> HTMLResponse:
        filters = queries.SeriesFilter(list_name, state, author)
        rows = queries.series_rows(s, filters, limit=limit + 1, offset=offset)
        return page(request, "index.html", rows=rows[:limit], filters=filters,
                    lists=queries.list_names(s), offset=offset, limit=limit,
                    more=len(rows) > limit)

    @app.get("/series/{series_id}", response_class=HTMLResponse, include_in_schema=False)
    def series_page(request: Request, series_id: Id, s: Db, version: int | None = None,
                    posting: int | None = None) -> HTMLResponse:
        detail = found(queries.series_detail(s, series_id), "series", series_id)
        versions = detail.series["versions"]
        # A version number may have two postings (a partial reroll and the whole version sent
        # later): links name the posting by its id; a number alone shows the one stored last.
        if posting is not None:
            shown = found(next((v for v in versions if v["id"] == posting), None),
                          f"posting of series {series_id} with id", posting)
        elif version is None:
            shown = versions[-1] if versions else None
        else:
            shown = found(next((v for v in reversed(versions) if v["version"] == version), None),
                          f"version of series {series_id} numbered", version)
        runs = [r for r in detail.runs if shown and r.series_version_id == shown["id"]]
        # The newest run that follows none: its follow-ups are listed under it.
        latest = next((r for r in runs if r.parent_run_id is None), runs[0] if runs else None)
        samples = queries.samples_of(s, [c.id for c in latest.campaigns]) if latest else {}
        plots = {}
        for campaign in latest.campaigns if latest else []:
            main = [m.metric for m in queries.verdict_rows(campaign.result) if not m.secondary]
            plots[campaign.id] = _plots(samples[campaign.id], main or None,
                                        f"c{campaign.id}")
        return page(request, "series.html", detail=detail, series=detail.series, shown=shown,
                    runs=runs, latest=latest, plots=plots,
                    replies=[r for r in detail.replies
                             if shown and r.series_version_id == shown["id"]])

    @app.get("/runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
    def run_page(request: Request, run_id: Id, s: Db) -> HTMLResponse:
        run = found(queries.run_detail(s, run_id), "run", run_id)
        return page(request, "run.html", run=run)

    @app.get("/runs/{run_id}/config", response_class=PlainTextResponse,
             include_in_schema=False)
    def run_config(run_id: Id, s: Db) -> PlainTextResponse:
        # The reply's reproduce section fetches it: the exact .config, byte for byte.
        text = configs.built_config(s, run_id)
        if text is None:
            raise HTTPException(404, f"run {run_id} has no built kernel config here")
        return PlainTextResponse(text)

    @app.get("/campaigns/{campaign_id}", response_class=HTMLResponse, include_in_schema=False)
    def campaign_page(request: Request, campaign_id: Id, s: Db) -> HTMLResponse:
        campaign = found(queries.campaign_detail(s, campaign_id), "campaign", campaign_id)
        plots = _plots(campaign.samples or [], None, f"c{campaign.id}")
        return page(request, "campaign.html", campaign=campaign, plots=plots)

    @app.get("/hosts", response_class=HTMLResponse, include_in_schema=False)
    def hosts_page(request: Request, s: Db) -> HTMLResponse:
        return page(request, "hosts.html", lab=queries.lab_hosts(s, settings))

    @app.post("/runs/{run_id}/retest", include_in_schema=False)
    def retest_form(request: Request, run_id: Id, tasks: BackgroundTasks, token: Token = ""
                    ) -> RedirectResponse:
        new_id = act(request, lambda s: actions.retest(s, run_id).id, token)
        tasks.add_task(actions.dispatch, db, settings, new_id)
        return RedirectResponse(f"/runs/{new_id}", status_code=303)

    @app.post("/runs/{run_id}/cancel", include_in_schema=False)
    def cancel_form(request: Request, run_id: Id, token: Token = "") -> RedirectResponse:
        act(request, lambda s: actions.cancel(s, run_id), token)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    @app.post("/replies/{reply_id}/approve", include_in_schema=False)
    def approve_form(request: Request, reply_id: Id, token: Token = "") -> RedirectResponse:
        about = act(request, lambda s: queries.reply_version(
            s, actions.approve_reply(s, reply_id, "web")), token)
        target = f"/series/{about[0]}?version={about[1]}&posting={about[2]}" if about else "/"
        return RedirectResponse(f"{target}#reply-{reply_id}", status_code=303)

    return app
