"""Who may use ``nerve ui``: the workspace's token, the login link, the session cookie, CSRF,
Host and Origin.

- One token per workspace in ``$XDG_STATE_HOME/nerve/ui/<digest of the workspace>.token``
  (else ``~/.local/state/…``), owner-only, outside ``data/`` so a copy of the log never
  carries it; ``nerve ui token --rotate`` replaces it, and every login link and cookie made
  with the old one stops working at the next request. The token itself is sent only as
  ``Authorization: Bearer``; it is never in a URL.
- ``/login?token=…`` (the URL ``nerve ui`` prints) carries a **login code** made from the
  token: it is exchanged once for a session cookie and is then dead (a browser's history
  keeps only a dead code); any code dies ``ui.login`` (1 h) after it was made. A server
  remembers the codes it took (a restart forgets them: a used code works once more, within
  its hour, on the next server).
- The cookie ``nerve_ui_<port>=<session>.<began>.<seen>.<mac>`` (HttpOnly, SameSite=Strict,
  Path=/) names its port, as cookies are not kept apart by port. The mac is keyed by the
  token, so the server keeps no session table. A session ends ``ui.idle`` (12 h) after its
  last request and ``ui.session`` (7 d) after its login; each request seen a minute or more
  after the last renews ``seen``.
- Each page carries a CSRF value (a mac of the session) that every POST must send back, as
  the form field ``csrf`` or the ``X-CSRF-Token`` header.
- The Host header must name the address served (DNS rebinding), and a request carrying an
  Origin must come from that same origin.
Every comparison with a secret is :func:`hmac.compare_digest` over the whole value.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nerve import tokens
from nerve.api import Workspace

__all__ = ["COOKIE", "Keys", "Lifetimes", "Session", "cookie_name", "token", "token_path"]

COOKIE = "nerve_ui"
RENEW_S = 60
LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")


def token_path(ws: Workspace, environ: Mapping[str, str] | None = None) -> Path:
    return ws.settings.token_path("ui", environ)


def token(ws: Workspace, *, rotate: bool = False, environ: Mapping[str, str] | None = None) -> str:
    """The workspace's UI token: made on first use, replaced with ``rotate``."""
    return ws.settings.token("ui", site="ui.token", rotate=rotate, environ=environ)


def _mac(key: str, purpose: str, session: str) -> str:
    return hmac.new(key.encode(), f"{purpose}:{session}".encode(), hashlib.sha256).hexdigest()


def cookie_name(port: int) -> str:
    """The session cookie's name for the server on ``port`` (cookies are shared by port)."""
    return f"{COOKIE}_{port}"


@dataclass(frozen=True)
class Lifetimes:
    """How long a login code, an idle session and any session last, in seconds."""

    login: float = 3_600
    idle: float = 12 * 3_600
    session: float = 7 * 86_400

    @classmethod
    def of(cls, ws: Workspace) -> Lifetimes:
        """The workspace's ``ui:`` section (durations in ms)."""
        ui = ws.settings.config.ui
        return cls(ui.login / 1000, ui.idle / 1000, ui.session / 1000)


@dataclass(frozen=True)
class Session:
    """A cookie that holds: its session id, and a renewed cookie to send back (or None)."""

    id: str
    renewed: str | None = None


class Keys:
    """Checks against the token as stored now (read again at each request, so a rotation
    takes effect at once); remembers the login codes it took."""

    def __init__(
        self, path: Path, lifetimes: Lifetimes | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self.path, self.lifetimes, self.clock = path, lifetimes or Lifetimes(), clock
        self.taken: dict[str, float] = {}  # login codes used -> when they would have expired

    def current(self) -> str | None:
        return tokens.read(self.path)

    def token_ok(self, offered: str) -> bool:
        return tokens.matches(self.current(), offered)

    def login_code(self) -> str:
        """A new login code (the token must exist): ``<nonce>.<made>.<mac>``."""
        body = f"{secrets.token_urlsafe(16)}.{int(self.clock())}"
        return f"{body}.{_mac(self.current() or '', 'login', body)}"

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is a login code made with the token, young enough and not used
        before; it is used now."""
        body, made = self._signed(code, "login")
        now = self.clock()
        self.taken = {c: t for c, t in self.taken.items() if t > now}
        if body is None or not now - self.lifetimes.login <= made <= now + 60:
            return False
        if body in self.taken:
            return False
        self.taken[body] = made + self.lifetimes.login
        return True

    def cookie(self, session: str | None = None, began: int | None = None) -> str:
        """A session's cookie value, seen now (a new session unless one is given)."""
        now = int(self.clock())
        body = f"{session or secrets.token_urlsafe(16)}.{now if began is None else began}.{now}"
        return f"{body}.{_mac(self.current() or '', 'cookie', body)}"

    def session(self, cookie: str | None) -> Session | None:
        """The session a cookie names, if its mac holds under the current token and it has
        not ended (idle too long, or begun too long ago)."""
        body, seen = self._signed(cookie or "", "cookie")
        if body is None:
            return None
        sid, began = body.split(".")[:2]
        now, life = self.clock(), self.lifetimes
        if now - seen > life.idle or now - int(began) > life.session:
            return None
        return Session(sid, self.cookie(sid, int(began)) if now - seen >= RENEW_S else None)

    def csrf(self, session: str) -> str:
        return _mac(self.current() or "", "csrf", session)

    def csrf_ok(self, session: str, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(self.csrf(session), offered)

    def _signed(self, value: str, purpose: str) -> tuple[str | None, int]:
        """``value``'s body and its last number, if its mac holds under the current token."""
        stored = self.current()
        body, _, mac = value.rpartition(".")
        last = body.rpartition(".")[2]
        if stored is None or body.count(".") < 1 or not last.isdigit() or len(last) > 12:
            return None, 0
        if not hmac.compare_digest(mac.encode(), _mac(stored, purpose, body).encode()):
            return None, 0
        return body, int(last)


def local_path(text: str) -> str:
    """Where a login goes on to: ``text`` when it is a path of this server (``/attention/7``),
    else ``/`` (never another host: ``//evil``, ``https://…``, a backslash)."""
    if not text.startswith("/") or text.startswith("//") or "\\" in text:
        return "/"
    if any(ord(c) < 0x21 for c in text):
        return "/"
    return text


def login_url(base: str, code: str, next_path: str = "") -> str:
    """The one login link: ``base`` (``http://127.0.0.1:PORT``), a login code and, when given,
    the page to show once logged in."""
    from urllib.parse import quote

    tail = f"&next={quote(local_path(next_path), safe='/')}" if next_path else ""
    return f"{base}/login?token={code}{tail}"


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
