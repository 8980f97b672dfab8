"""The ASGI layer every request passes: Host, Origin, login, CSRF and the security headers.

A request is refused before any page runs when its Host is not this server's (403), when it
carries an Origin of another site (403), or when it has neither a valid cookie nor the token
as ``Authorization: Bearer`` (401). A POST with a cookie needs the session's CSRF value: the
``X-CSRF-Token`` header is checked here, a form's ``csrf`` field by the page
(:func:`nerve.ui.app.posted`) before it acts.
No CORS header is ever sent; every answer carries a Content-Security-Policy that allows
scripts and styles from this server's ``/static/`` only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from starlette.responses import PlainTextResponse

from nerve.ui.auth import Keys, Session, cookie_name, host_ok

__all__ = ["CSP", "Guard", "Served", "set_cookie"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make form POSTs say Origin: null
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
_OPEN = ("/login",)


@dataclass(frozen=True)
class Served:
    """Where the server listens, for the Host and Origin checks."""

    host: str
    port: int
    allow_remote: bool = False


class Guard:
    def __init__(self, app: App, keys: Keys, served: Served) -> None:
        self.app, self.keys, self.served = app, keys, served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        renewed: list[tuple[bytes, bytes]] = []

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS, *renewed]
            await send(message)

        refusal = self._refusal(scope)
        renewal = scope.get("state", {}).pop("renewed", None)
        if renewal is not None:
            renewed.append((b"set-cookie", self._set_cookie(renewal).encode("latin-1")))
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def _refusal(self, scope: Scope) -> PlainTextResponse | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host")
        s = self.served
        if not host_ok(host, s.port, allow_remote=s.allow_remote, served=s.host):
            return PlainTextResponse(f"refused: Host {host!r} is not this server\n", 403)
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            return PlainTextResponse(f"refused: cross-origin request from {origin!r}\n", 403)
        if headers.get("sec-fetch-site") == "cross-site":
            return PlainTextResponse("refused: cross-site request\n", 403)
        if scope["method"] not in ("GET", "HEAD", "POST"):
            return PlainTextResponse("method not allowed\n", 405)
        if scope["path"] in _OPEN:
            return None
        found = self._session(headers)
        if found is None:
            return PlainTextResponse(
                "not logged in: open the login URL `nerve ui` printed "
                "(or `nerve ui token` for the token)\n",
                401,
            )
        session = found.id
        scope.setdefault("state", {})["session"] = session
        if found.renewed is not None:
            scope["state"]["renewed"] = found.renewed
        scope["state"]["csrf"] = self.keys.csrf(session) if session != "bearer" else ""
        if scope["method"] == "POST" and session != "bearer":
            offered = headers.get("x-csrf-token")
            if offered and not self.keys.csrf_ok(session, offered):
                return PlainTextResponse("refused: bad CSRF token\n", 403)
            scope["state"]["csrf_checked"] = bool(offered)  # else the form's field is checked
        return None

    def _session(self, headers: dict[str, str]) -> Session | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return Session("bearer") if self.keys.token_ok(auth[7:].strip()) else None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no login
            return None
        morsel = jar.get(cookie_name(self.served.port))
        return self.keys.session(morsel.value if morsel else None)

    def _set_cookie(self, value: str) -> str:
        """The ``Set-Cookie`` header for a session's cookie on this server."""
        return set_cookie(self.served.port, value, int(self.keys.lifetimes.session))


def set_cookie(port: int, value: str, max_age: int) -> str:
    """A session cookie for the server on ``port``: HttpOnly, SameSite=Strict, Path=/."""
    return f"{cookie_name(port)}={value}; HttpOnly; Max-Age={max_age}; Path=/; SameSite=strict"
