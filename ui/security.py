"""Access control: login page, session cookie, an ASGI gate in front of the protected apps (pages AND every
Gradio route under them), a check repeated inside each protected event handler, and a same-origin check on
every state-changing request (CSRF)."""

from __future__ import annotations

import html
import logging
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from chatbot.store import auth
from chatbot.store.auth import Principal

log = logging.getLogger(__name__)

COOKIE = "cb_session"

# path prefix -> roles allowed there
PROTECTED: dict[str, tuple[str, ...]] = {
    "/review": ("clinician", "admin"),
    "/evaluate": ("evaluator", "admin"),
    "/content": ("editor", "clinician", "admin"),
}
HOME_BY_ROLE = {"clinician": "/review", "admin": "/review", "evaluator": "/evaluate", "editor": "/content"}


class AccessDenied(Exception):
    pass


def token_from_headers(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is just no session
                continue
            if COOKIE in jar:
                return jar[COOKIE].value
    return None


def protected_prefix(path: str) -> str | None:
    for prefix in PROTECTED:
        if path == prefix or path.startswith(prefix + "/"):
            return prefix
    return None


class AccessGate:
    """Pure ASGI middleware: nothing under a protected prefix (page, config, queue, upload, file, SSE) is
    reached without a valid session of an allowed role."""

    def __init__(self, app: Any, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        prefix = protected_prefix(scope.get("path", ""))
        if prefix is None:
            return await self.app(scope, receive, send)
        token = token_from_headers(scope.get("headers", []))
        who = await run_in_threadpool(auth.session_principal, self.state.store, token, self.state.settings.server)
        if who is not None and who.can(*PROTECTED[prefix]):
            scope.setdefault("state", {})["principal"] = who
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        method = scope.get("method", "GET")
        accept = dict(scope.get("headers", [])).get(b"accept", b"").decode("latin-1")
        is_page = method == "GET" and scope["path"].rstrip("/") == prefix and "text/html" in accept
        if who is None and is_page:
            return await _respond(send, 303, b"", [(b"location", f"/login?next={quote(prefix)}".encode())])
        status = 401 if who is None else 403
        body = b'{"detail": "login required"}' if who is None else b'{"detail": "not allowed for your role"}'
        return await _respond(send, status, body, [(b"content-type", b"application/json")])


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _netloc(url: str) -> str:
    try:
        return urlsplit(url).netloc.lower()
    except ValueError:
        return "\x00invalid"


def cross_origin_reason(headers: list[tuple[bytes, bytes]], trusted: frozenset[str]) -> str | None:
    """Why a state-changing request looks cross-origin (None when it does not). Browsers send ``Origin`` with
    every POST and websocket: it must be this server (its ``Host``) or a trusted origin. Without ``Origin``,
    ``Referer`` is checked the same way, then ``Sec-Fetch-Site``. A request with none of them does not come
    from a web page (curl, httpx, the load test) and cannot be forged by one."""
    h = {name.lower(): value.decode("latin-1") for name, value in headers}
    host = h.get(b"host", "").lower()
    origin = h.get(b"origin")
    if origin is not None:
        origin = origin.strip().rstrip("/").lower()
        if origin == "null":
            return "opaque origin"
        if origin in trusted or (host and _netloc(origin) == host):
            return None
        return f"origin {origin}"
    referer = h.get(b"referer")
    if referer:
        if (host and _netloc(referer) == host) or _origin_of(referer) in trusted:
            return None
        return "referer from another site"
    if h.get(b"sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return "sec-fetch-site " + h[b"sec-fetch-site"]
    return None


def trusted_set(origins: list[str] | tuple[str, ...]) -> frozenset[str]:
    """Configured origins as compared with an Origin header: lower case, no trailing slash."""
    return frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip())


def _origin_of(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return f"{parts.scheme}://{parts.netloc}".lower()


class OriginCheck:
    """CSRF defence for the whole app: every state-changing request (any method but GET/HEAD/OPTIONS, and
    every websocket) from another origin is refused with 403 before it reaches a route: login, logout,
    review actions, ratings, session creation and the patient's questions and thumbs. Gradio itself only
    decides which origins may *read* responses (CORS headers); it does not refuse the request, and the
    SameSite=Strict cookie still travels with requests from another port of the same host (same site)."""

    def __init__(self, app: Any, trusted_origins: list[str] | tuple[str, ...] = ()) -> None:
        self.app = app
        self.trusted = trusted_set(trusted_origins)

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind not in ("http", "websocket") or (kind == "http" and scope.get("method", "GET") in SAFE_METHODS):
            return await self.app(scope, receive, send)
        reason = cross_origin_reason(scope.get("headers", []), self.trusted)
        if reason is None:
            return await self.app(scope, receive, send)
        log.warning("refused cross-origin %s %s (%s)", scope.get("method", "WEBSOCKET"), scope.get("path"), reason)
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 4403})
            return
        body = b'{"detail": "cross-origin request refused"}'
        return await _respond(send, 403, body, [(b"content-type", b"application/json")])


async def _respond(send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [*headers, (b"cache-control", b"no-store")]}
    )
    await send({"type": "http.response.body", "body": body})


def require(state: Any, request: Any, *roles: str) -> Principal:
    """Inside a Gradio handler: the caller's principal, or gr.Error when not logged in with one of ``roles``.
    Repeats the gate's check from the request the event arrived with (defence in depth)."""
    import gradio as gr

    token = None
    try:
        token = request.cookies.get(COOKIE) if request is not None else None
    except Exception:
        token = None
    who = auth.session_principal(state.store, token, state.settings.server)
    if who is None:
        raise gr.Error("Your session has expired: please log in again.", title="Logged out")
    if not who.can(*roles):
        raise gr.Error("Not allowed for your role.")
    return who


def gradio_user(state: Any, roles: tuple[str, ...]):
    """auth_dependency for mount_gradio_app: Gradio's own check on its routes (a second lock after the gate)."""

    def dependency(request) -> str | None:
        who = auth.session_principal(state.store, request.cookies.get(COOKIE), state.settings.server)
        return who.username if who is not None and who.can(*roles) else None

    return dependency


LOGIN_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · Certified chatbot</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;background:#f4f6f8;display:flex;justify-content:center;padding-top:10vh}}
form{{background:#fff;padding:2rem 2.5rem;border-radius:10px;box-shadow:0 2px 12px #0002;min-width:300px}}
label{{display:block;margin:.8rem 0 .2rem}}input{{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}}
button{{margin-top:1.2rem;width:100%;padding:.6rem;font-size:1rem;background:#1d4ed8;color:#fff;border:0;border-radius:6px}}
.err{{color:#b91c1c}}</style></head><body>
<form method="post" action="/login"><h2>Clinician &amp; evaluator sign-in</h2>
<p class="err" id="error">{error}</p>
<input type="hidden" name="next" value="{next}">
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password"
 autocomplete="current-password" required>
<button type="submit" id="login-button">Sign in</button>
<p><a href="/">Patient chat</a></p></form></body></html>"""


def safe_next(value: str | None, role: str | None = None) -> str:
    """Only our own protected pages are valid redirect targets (no open redirect)."""
    if value in PROTECTED and (role is None or role in PROTECTED[value]):
        return value
    return HOME_BY_ROLE.get(role or "", "/review")


def add_login_routes(app: Any, state: Any) -> None:
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

    server = state.settings.server
    trusted = trusted_set(server.trusted_origins)

    def page(error: str = "", next_: str = "", status: int = 200) -> HTMLResponse:
        body = LOGIN_PAGE.format(error=html.escape(error), next=html.escape(safe_next(next_)))
        return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store"})

    @app.get("/login", include_in_schema=False)
    def login_form(next: str = "") -> HTMLResponse:  # noqa: A002 - the query parameter's name
        return page(next_=next)

    @app.post("/login", include_in_schema=False)
    async def login_submit(request: Request):
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        username = (form.get("username") or [""])[0]
        password = (form.get("password") or [""])[0]
        next_ = (form.get("next") or [""])[0]
        client = request.client.host if request.client else "unknown"
        try:
            result = await run_in_threadpool(auth.login, state.store, username, password, client, server)
        except auth.LoginRateLimited as exc:
            if "application/json" in request.headers.get("accept", ""):
                return JSONResponse({"detail": str(exc)}, status_code=429)
            return page(str(exc).capitalize() + ".", next_, status=429)
        if result is None:
            return page("Wrong username or password.", next_, status=401)
        token, who = result
        resp = RedirectResponse(safe_next(next_ if next_ else None, who.role) + "/", status_code=303)
        resp.set_cookie(
            COOKIE,
            token,
            max_age=server.session_max_hours * 3600,
            httponly=True,
            samesite="strict",
            secure=server.cookie_secure,
            path="/",
        )
        return resp

    for prefix in PROTECTED:  # Gradio serves a mounted page at PREFIX/ only

        @app.get(prefix, include_in_schema=False)
        def to_slash(request: Request) -> RedirectResponse:
            return RedirectResponse(request.url.path + "/", status_code=307)

    @app.get("/logout", include_in_schema=False)
    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request):
        # GET changes state here (the pages link to it), so it gets the POST check too: an <img> on another
        # port of this host would otherwise sign the clinician out (Chromium sends Sec-Fetch-Site, Referer)
        if cross_origin_reason(request.scope.get("headers", []), trusted):
            return JSONResponse({"detail": "cross-origin request refused"}, status_code=403)
        await run_in_threadpool(auth.logout, state.store, request.cookies.get(COOKIE))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(COOKIE, path="/")
        return resp
