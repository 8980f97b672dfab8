"""Who may use ``nerve ui``: the workspace's token, the login cookie, CSRF, Host and Origin.

- One token per workspace in ``$XDG_STATE_HOME/nerve/ui/<digest of the workspace>.token``
  (else ``~/.local/state/…``), owner-only, outside ``data/`` so a copy of the log never
  carries it; ``nerve ui token --rotate`` replaces it, and every cookie made with the old one
  stops working at the next request.
- ``/login?token=…`` (the URL ``nerve ui`` prints) exchanges the token for a cookie
  ``nerve_ui=<session>.<mac>`` (HttpOnly, SameSite=Strict, Path=/) and redirects to a URL
  without the token. The mac is keyed by the token, so the server keeps no session table.
- Each page carries a CSRF value (a mac of the session) that every POST must send back, as
  the form field ``csrf`` or the ``X-CSRF-Token`` header.
- The Host header must name the address served (DNS rebinding), and a request carrying an
  Origin must come from that same origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from pathlib import Path

from nerve import tokens
from nerve.api import Workspace

__all__ = ["COOKIE", "Keys", "token", "token_path"]

COOKIE = "nerve_ui"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")


def token_path(ws: Workspace, environ: Mapping[str, str] | None = None) -> Path:
    return ws.token_path("ui", environ)


def token(ws: Workspace, *, rotate: bool = False, environ: Mapping[str, str] | None = None) -> str:
    """The workspace's UI token: made on first use, replaced with ``rotate``."""
    return ws.token("ui", site="ui.token", rotate=rotate, environ=environ)


def _mac(key: str, purpose: str, session: str) -> str:
    return hmac.new(key.encode(), f"{purpose}:{session}".encode(), hashlib.sha256).hexdigest()


class Keys:
    """Checks against the token as stored now (read again at each request, so a rotation
    takes effect at once)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def current(self) -> str | None:
        return tokens.read(self.path)

    def token_ok(self, offered: str) -> bool:
        return tokens.matches(self.current(), offered)

    def cookie(self) -> str:
        """A new session's cookie value (the token must exist)."""
        stored = self.current() or ""
        session = secrets.token_urlsafe(16)
        return f"{session}.{_mac(stored, 'cookie', session)}"

    def session(self, cookie: str | None) -> str | None:
        """The session a cookie names, if its mac holds under the current token."""
        stored = self.current()
        if not cookie or stored is None or "." not in cookie:
            return None
        session, mac = cookie.rsplit(".", 1)
        return session if hmac.compare_digest(mac, _mac(stored, "cookie", session)) else None

    def csrf(self, session: str) -> str:
        return _mac(self.current() or "", "csrf", session)

    def csrf_ok(self, session: str, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(self.csrf(session), offered)


def host_ok(host: str | None, port: int, *, allow_remote: bool, served: str) -> bool:
    """Whether a Host header names this server (loopback names, or the address served)."""
    if not host:
        return False
    name, _, given = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not name:
        name, given = host, ""
    if given and given != str(port):
        return False
    if name in LOOPBACK or name == served:
        return True
    return allow_remote
