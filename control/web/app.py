"""Mission Control's HTTP routes (docs/architecture.md "Mission Control").

Every page has a JSON twin under ``/api`` with the same data. Pages but the sign-in page need a
session (HTML: a redirect to ``/sign-in``; JSON: 401 ``not_signed_in``); every POST needs the form's
CSRF token. Operator errors become a page (or ``{"error": {"code", "message"}}``) with the HTTP status
of their class; nothing the browser sends is a path, a command or a repository: run ids are checked
against their pattern and actions are the fixed routes below.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from contracts.errors import InvalidInput, OperatorError, Refused
from control.http_limits import BodyLimit
from control.web import brief, console, policy, research
from control.web import queue_board as queue_board_data
from control.web.console import Deployment
from control.web.rendering import environment
from control.web.security import (
    CSRF_FIELD,
    HEADERS,
    PRESESSION_COOKIE,
    SESSION_COOKIE,
    CookieSigner,
    SecurityHeaders,
    set_cookie,
    tokens_match,
)
from control.web.sessions import SESSION_LENGTH, Session, Sessions

STATIC: Final = Path(__file__).resolve().parent / "static"
MAX_FORM_FIELD: Final = 8192
MAX_BODY_BYTES: Final = 256 * 1024
"""The most any request may send (a brief's JSON is at most 64 KiB, a form's field 8 KiB): more is
refused with 413 before it is read (``control.http_limits.BodyLimit``)."""
PRESESSION_SECONDS: Final = 600
ACTIONS: Final = ("approve", "execute", "decide", "cancel", "approve-probe")


@dataclass
class WebSettings:
    """How the console is served: ``tls`` when it is reached over HTTPS (Secure cookies, HSTS)."""

    tls: bool = False


def create_app(deployment: Deployment, settings: WebSettings | None = None) -> FastAPI:
    """The Mission Control application for ``deployment``."""
    settings = settings or WebSettings()
    sessions = Sessions()
    cookies = CookieSigner(int(SESSION_LENGTH.total_seconds()))
    presession = CookieSigner(PRESESSION_SECONDS)
    templates = environment()
    app = FastAPI(title="Mission Control", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(SecurityHeaders, tls=settings.tls)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES, headers=HEADERS)  # outermost: before any read

    async def unexpected(request: Request, error: Exception) -> Response:
        # Outside the middleware: the headers are set here too. Nothing of the error is shown.
        response = page(
            "error.html", 500, session=None, code="internal_error",
            message="the console met an unexpected error; nothing more is shown here (see its log)",
            extra={},
        )  # fmt: skip
        for name, value in HEADERS.items():
            response.headers[name] = value
        return response

    app.add_exception_handler(Exception, unexpected)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    def page(name: str, http_status: int = 200, **context: Any) -> HTMLResponse:
        html = templates.get_template(name).render(**context)
        return HTMLResponse(html, status_code=http_status)

    def current(request: Request) -> Session | None:
        session_id = cookies.read(request.cookies.get(SESSION_COOKIE))
        return None if session_id is None else sessions.get(session_id)

    def failed(error: OperatorError, session: Session | None, *, api: bool) -> Response:
        status = console.status_of(error)
        shown = error.to_json()
        if api:
            return JSONResponse(shown, status_code=status)
        # A queue refusal carries the gaps or the allowed moves as extra keys: shown as they are.
        extra = {k: v for k, v in shown["error"].items() if k not in ("code", "message")}
        return page(
            "error.html", status, session=session, code=error.code, message=error.message, extra=extra
        )

    def not_signed_in(api: bool) -> Response:
        if api:
            return JSONResponse(
                {"error": {"code": "not_signed_in", "message": "sign in at /sign-in"}}, status_code=401
            )
        return RedirectResponse("/sign-in", status_code=303)

    async def form_of(request: Request, session: Session) -> dict[str, list[str]]:
        """The POSTed form (each field's values, in order), after its CSRF token is checked; every
        value text within bounds (no file uploads)."""
        form = await request.form()
        fields: dict[str, list[str]] = {}
        for name, value in form.multi_items():
            if not isinstance(value, str) or len(value) > MAX_FORM_FIELD:
                raise InvalidInput("invalid_form", f"the form field {name!r} is not text within bounds")
            # Browsers send a textarea's line breaks as CRLF; the text the person typed has LF.
            fields.setdefault(name, []).append(value.replace("\r\n", "\n"))
        if not tokens_match(session.csrf, _last(fields, CSRF_FIELD)):
            raise Refused("csrf_token_invalid", "the form's CSRF token is missing or not this session's")
        return fields

    # ------------------------------------------------------------------------------------ sign-in

    @app.get("/sign-in")
    async def sign_in_page(request: Request) -> Response:
        if current(request) is not None:
            return RedirectResponse("/", status_code=303)
        return _sign_in(request, None)

    def _sign_in(request: Request, error: OperatorError | None) -> Response:
        challenge = sessions.challenge()
        token = presession.read(request.cookies.get(PRESESSION_COOKIE)) or _new_token()
        response = page(
            "sign_in.html",
            400 if error is not None else 200,
            session=None,
            code=challenge.code(),
            expires_at=challenge.expires_at,
            csrf=token,
            error=error,
        )
        set_cookie(
            response, PRESESSION_COOKIE, presession.sign(token), max_age=PRESESSION_SECONDS, tls=settings.tls
        )
        return response

    @app.post("/sign-in")
    async def sign_in(request: Request) -> Response:
        form = await request.form()
        expected = presession.read(request.cookies.get(PRESESSION_COOKIE))
        given = form.get(CSRF_FIELD)
        if expected is None or not tokens_match(expected, given):
            error: OperatorError = Refused(
                "csrf_token_invalid", "the sign-in form's CSRF token is missing or wrong"
            )
            return failed(error, None, api=False)
        token = form.get("token")
        try:
            if not isinstance(token, str):
                raise InvalidInput("invalid_token", "paste the token `specialists web sign-in` printed")
            session = sessions.complete(token, lambda actor, key: console.action_key(deployment, actor, key))
        except OperatorError as refused:
            return _sign_in(request, refused)
        response = RedirectResponse("/", status_code=303)
        set_cookie(
            response,
            SESSION_COOKIE,
            cookies.sign(session.session_id),
            max_age=int(SESSION_LENGTH.total_seconds()),
            tls=settings.tls,
        )
        response.delete_cookie(PRESESSION_COOKIE, path="/")
        return response

    @app.post("/sign-out")
    async def sign_out(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            await form_of(request, session)
        except OperatorError as error:
            return failed(error, session, api=False)
        sessions.end(session.session_id)
        response = RedirectResponse("/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # ------------------------------------------------------------------------------------- pages

    async def overview(request: Request, api: bool) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(api)
        try:
            data = await console.overview(deployment)
        except OperatorError as error:
            return failed(error, session, api=api)
        if api:
            return JSONResponse(data)
        return page("overview.html", session=session, data=data)

    @app.get("/")
    async def overview_page(request: Request) -> Response:
        return await overview(request, api=False)

    @app.get("/api/overview")
    async def overview_api(request: Request) -> Response:
        return await overview(request, api=True)

    async def run_list(request: Request, api: bool) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(api)
        status = request.query_params.get("status") or None
        try:
            data = console.runs(deployment, status)
        except OperatorError as error:
            return failed(error, session, api=api)
        if api:
            return JSONResponse(data)
        return page("runs.html", session=session, data=data, status=status)

    @app.get("/runs")
    async def runs_page(request: Request) -> Response:
        return await run_list(request, api=False)

    @app.get("/api/runs")
    async def runs_api(request: Request) -> Response:
        return await run_list(request, api=True)

    async def one_run(request: Request, run_id: str, api: bool, notice: str | None = None) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(api)
        try:
            view, data = await console.run(deployment, run_id)
        except OperatorError as error:
            return failed(error, session, api=api)
        if api:
            return JSONResponse(data)
        return page("run.html", session=session, run=data, view=view, notice=notice, csrf=session.csrf)

    @app.get("/runs/{run_id}")
    async def run_page(request: Request, run_id: str) -> Response:
        done = request.query_params.get("done")
        return await one_run(request, run_id, api=False, notice=done if done in ACTIONS else None)

    @app.get("/api/runs/{run_id}")
    async def run_api(request: Request, run_id: str) -> Response:
        return await one_run(request, run_id, api=True)

    # ----------------------------------------------------------------------------------- actions

    async def act(request: Request, run_id: str, action: str) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            form = await form_of(request, session)
            if action == "approve":
                await console.approve(deployment, session, run_id, _last(form, "contract_sha256"))
            elif action == "execute":
                await console.execute(deployment, session, run_id, _last(form, "contract_sha256"))
            elif action == "decide":
                outcome, note = _last(form, "outcome"), _last(form, "note")
                await console.decide(deployment, session, run_id, outcome, note)
            elif action == "approve-probe":
                index, digest = _last(form, "index"), _last(form, "probe_sha256")
                await console.approve_probe(deployment, session, run_id, index, digest)
            else:
                await console.cancel(deployment, session, run_id, _last(form, "reason"))
        except OperatorError as error:
            return failed(error, session, api=False)
        return RedirectResponse(f"/runs/{run_id}?done={action}", status_code=303)

    def action_route(action: str) -> Any:
        async def handler(request: Request, run_id: str) -> Response:
            return await act(request, run_id, action)

        return handler

    for action in ACTIONS:
        app.post(f"/runs/{{run_id}}/{action}", name=action)(action_route(action))

    # ------------------------------------------------------------------------------------- queue

    async def queue_board(request: Request, api: bool) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(api)
        try:
            data = await queue_board_data.board(deployment)
        except OperatorError as error:
            return failed(error, session, api=api)
        if api:
            return JSONResponse(data)
        done = request.query_params.get("done")
        notice = f"{done}: done" if done in queue_board_data.MOVES else None
        routed = queue_board_data.routed_notice(
            request.query_params.get("routed"), request.query_params.get("tier")
        )
        return page("queue.html", session=session, data=data, csrf=session.csrf, notice=routed or notice)

    @app.get("/queue")
    async def queue_page(request: Request) -> Response:
        return await queue_board(request, api=False)

    @app.get("/api/queue")
    async def queue_api(request: Request) -> Response:
        return await queue_board(request, api=True)

    @app.post("/queue/route-next")
    async def queue_route_next(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            await form_of(request, session)  # the CSRF check; the form carries nothing else
            routed = await queue_board_data.route_next(deployment, session)
        except OperatorError as error:
            return failed(error, session, api=False)
        key, tier = routed["item"]["key"], routed["routed"]["tier"]
        return RedirectResponse(f"/queue?routed={key}&tier={tier}", status_code=303)

    @app.post("/queue/{key}/{move}")
    async def queue_move(request: Request, key: str, move: str) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            form = await form_of(request, session)
            fields = {
                name: _last(form, name)
                for name in ("reason", "note", "confirm_high_risk", "override_capacity")
            }
            await queue_board_data.move(deployment, session, key, move, fields)
        except OperatorError as error:
            return failed(error, session, api=False)
        return RedirectResponse(f"/queue?done={move}", status_code=303)

    # ------------------------------------------------------------------------------------ policy

    @app.get("/policy")
    async def policy_page(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            data = policy.policy(deployment)
        except OperatorError as error:
            return failed(error, session, api=False)
        entered = {"mode": data["current"]["mode"], "ceiling": data["current"]["maximum_automatic_tier"]}
        saved = request.query_params.get("saved") == "1"
        return page("policy.html", session=session, data=data, entered=entered, error=None, saved=saved)

    @app.get("/api/policy")
    async def policy_api(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(True)
        try:
            return JSONResponse(policy.policy(deployment))
        except OperatorError as error:
            return failed(error, session, api=True)

    @app.post("/policy")
    async def policy_save(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        entered: dict[str, str] = {}
        try:
            form = await form_of(request, session)
            entered = {"mode": _last(form, "mode"), "ceiling": _last(form, "maximum_automatic_tier")}
            policy.save(deployment, session, entered["mode"], entered["ceiling"])
        except OperatorError as error:
            if not entered:
                return failed(error, session, api=False)
            try:
                data = policy.policy(deployment)
            except OperatorError:
                data = {"current": None, "history": []}
            # The form keeps what was entered, marked unsaved, with the error: never a success.
            return page(
                "policy.html", console.status_of(error), session=session, data=data, entered=entered,
                error=error, saved=False,
            )  # fmt: skip
        return RedirectResponse("/policy?saved=1", status_code=303)

    # ---------------------------------------------------------------------------------- research

    async def research_list(request: Request, api: bool) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(api)
        try:
            data = await research.overview(deployment)
        except OperatorError as error:
            return failed(error, session, api=api)
        if api:
            return JSONResponse(data)
        return page("research.html", session=session, data=data)

    @app.get("/research")
    async def research_page(request: Request) -> Response:
        return await research_list(request, api=False)

    @app.get("/api/research")
    async def research_api(request: Request) -> Response:
        return await research_list(request, api=True)

    async def one_team(request: Request, team_id: str, api: bool) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(api)
        try:
            data = await research.team(deployment, team_id)
        except OperatorError as error:
            return failed(error, session, api=api)
        if api:
            return JSONResponse(data)
        done = request.query_params.get("done")
        return page(
            "team.html", session=session, team=data, csrf=session.csrf, outcomes=research.OUTCOMES,
            notice=done if done in ("adjudicate", "stop") else None,
        )  # fmt: skip

    @app.get("/research/teams/{team_id}")
    async def team_page(request: Request, team_id: str) -> Response:
        return await one_team(request, team_id, api=False)

    @app.get("/api/research/teams/{team_id}")
    async def team_api(request: Request, team_id: str) -> Response:
        return await one_team(request, team_id, api=True)

    @app.post("/research/teams/{team_id}/{action}")
    async def team_action(request: Request, team_id: str, action: str) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            form = await form_of(request, session)
            if action == "adjudicate":
                stage, outcome, note = _last(form, "stage"), _last(form, "outcome"), _last(form, "note")
                await research.adjudicate(deployment, session, team_id, stage, outcome, note)
            elif action == "stop":
                await research.stop(deployment, session, team_id, _last(form, "reason"))
            else:
                raise InvalidInput("invalid_action", "a team is adjudicated or stopped")
        except OperatorError as error:
            return failed(error, session, api=False)
        return RedirectResponse(f"/research/teams/{team_id}?done={action}", status_code=303)

    # -------------------------------------------------------------------------------- work brief

    @app.get("/brief")
    async def brief_page(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        try:
            offered = brief.options(deployment)
        except OperatorError as error:
            return failed(error, session, api=False)
        return page("brief.html", session=session, offered=offered, fields={}, preview=None, error=None)

    @app.post("/brief")
    async def brief_submit(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(False)
        fields: dict[str, list[str]] = {}
        offered: dict[str, Any] = {}
        try:
            fields = await form_of(request, session)
            offered = brief.options(deployment)
            asked = brief.request_from_form(fields)
            item, tier, override = brief.read_request(asked, offered)
            wave = brief.review_wave(asked)
            action = _last(fields, "action")
            if action == "preview":
                shown = brief.preview(deployment, item, tier, override, wave)
                return page(
                    "brief.html", session=session, offered=offered, fields=fields, preview=shown, error=None
                )
            if action not in brief.ACTIONS:
                raise InvalidInput("invalid_form", "choose preview, save or queue")
            run_id = await brief.create(
                deployment, session, item, tier, override, queue=action == "queue", wave=wave
            )
        except OperatorError as error:
            if error.code == "csrf_token_invalid" or not offered:
                return failed(error, session, api=False)
            return page(
                "brief.html", console.status_of(error), session=session, offered=offered, fields=fields,
                preview=None, error=error,
            )  # fmt: skip
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    @app.get("/api/brief")
    async def brief_api(request: Request) -> Response:
        session = current(request)
        if session is None:
            return not_signed_in(True)
        try:
            return JSONResponse(brief.options(deployment))
        except OperatorError as error:
            return failed(error, session, api=True)

    @app.post("/api/route")
    async def route_api(request: Request) -> Response:
        """The route preview as JSON: ``{"work_item": {...}, "tier": "...", "override": {...},
        "review_wave": false}``
        (read-only; the same checks as the form)."""
        session = current(request)
        if session is None:
            return not_signed_in(True)
        try:
            body = await request.json()
        except ValueError:
            return failed(InvalidInput("invalid_json", "the body is not JSON"), session, api=True)
        except RecursionError:
            error = InvalidInput("invalid_json", "the body is nested too deeply to be read")
            return failed(error, session, api=True)
        try:
            parsed, tier, route_override = brief.read_request(body, brief.options(deployment))
            wave = brief.review_wave(body)
            return JSONResponse(brief.preview(deployment, parsed, tier, route_override, wave))
        except OperatorError as error:
            return failed(error, session, api=True)

    @app.get("/healthz")
    async def healthz() -> Response:
        return JSONResponse({"ok": True, "at": dt.datetime.now(dt.UTC).isoformat()})

    return app


def _last(fields: dict[str, list[str]], name: str) -> str:
    values = fields.get(name)
    return values[-1] if values else ""


def _new_token() -> str:
    import secrets

    return secrets.token_urlsafe(32)
