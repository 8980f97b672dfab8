"""The Starlette app behind ``nerve ui``: one route per page, each answering HTML or, asked
with ``Accept: application/json`` (or ``?format=json``), the same data as JSON.

Pages read and write only through :mod:`nerve.ui.data`; :mod:`nerve.ui.guard` stands in
front of every route.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from nerve.api import Workspace
from nerve.attention.reason import thousandths
from nerve.clock import Hlc
from nerve.errors import NerveError, UsageError
from nerve.safetext import csv_cell
from nerve.ui import data
from nerve.ui.auth import Keys, local_path
from nerve.ui.clock import clock, duration, moment, moment_after
from nerve.ui.dayline import bars as dayline_bars
from nerve.ui.dayline import drawn as dayline_drawn
from nerve.ui.dayline import moves as dayline_moves
from nerve.ui.guard import Guard, Served, set_cookie

__all__ = ["build_app"]

HERE = Path(__file__).parent
POLL_S = 0.25
KEEP_ALIVE_S = 15.0
PAGES = [
    ("/", "Day"),
    ("/timeline", "Timeline"),
    ("/events", "Events"),
    ("/live", "Live"),
    ("/sql", "SQL"),
    ("/attention", "Attention"),
    ("/senses", "Senses"),
    ("/privacy", "Privacy"),
    ("/health", "Health"),
]


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["highlight"] = highlight
    env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
    env.filters["clock"] = clock
    env.filters["duration"] = duration
    env.filters["moment"] = moment
    env.filters["moment_after"] = moment_after
    env.filters["thousandths"] = thousandths  # a value or cost as the why says it: 1, 0.045
    env.filters["grouped"] = lambda n: "" if n is None else f"{n:,}"  # 1,000,000
    env.filters["local"] = _local
    env.globals["pages"] = PAGES
    return env


def highlight(text: str, needle: str) -> Markup:
    """``text`` escaped, with each case-blind match of ``needle`` in ``<mark>``."""
    if not needle:
        return escape(text)
    out, low, n, at = [], text.lower(), needle.lower(), 0
    while (hit := low.find(n, at)) >= 0:
        out += [escape(text[at:hit]), Markup("<mark>"), escape(text[hit : hit + len(n)])]
        out.append(Markup("</mark>"))
        at = hit + len(n)
    out.append(escape(text[at:]))
    return Markup("").join(out)


def wants_json(request: Request) -> bool:
    if request.query_params.get("format") == "json":
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


class Pages:
    """The routes, over one workspace."""

    def __init__(self, ws: Workspace, keys: Keys, port: int) -> None:
        self.ws, self.keys, self.port, self.env = ws, keys, port, _env()

    def render(
        self, request: Request, name: str, payload: dict[str, Any], **extra: Any
    ) -> Response:
        if wants_json(request):
            return JSONResponse(payload)
        state = request.scope.get("state", {})
        page = self.env.get_template(name).render(
            d=payload, q=request.query_params, path=request.url.path, qs=_qs(request),
            csrf=state.get("csrf", ""), **extra,
        )  # fmt: skip
        return Response(page, media_type="text/html; charset=utf-8")

    def failed(self, request: Request, exc: NerveError, status: int = 400) -> Response:
        body = {"error": type(exc).__name__, "message": str(exc), "hint": exc.hint}
        if wants_json(request):
            return JSONResponse(body, status)
        page = self.env.get_template("error.html").render(d=body, path=request.url.path)
        return Response(page, status, media_type="text/html; charset=utf-8")

    async def not_found(self, request: Request, exc: Exception) -> Response:
        """A styled page with the navigation for an address no page answers."""
        body = {
            "error": "Not found",
            "message": f"no page at {request.url.path[:200]}",
            "hint": "the navigation above lists every page",
        }
        if wants_json(request):
            return JSONResponse(body, 404)
        page = self.env.get_template("error.html").render(d=body, path=request.url.path)
        return Response(page, 404, media_type="text/html; charset=utf-8")

    async def run(self, request: Request, fn: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(fn)

    # -- login -------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        offered = request.query_params.get("token", "")
        if not self.keys.redeem(offered):
            return PlainTextResponse(
                "refused: that login link is not (or no longer) valid; a link works once: "
                "restart `nerve ui` for a new one\n", 401,
            )  # fmt: skip
        response = RedirectResponse(local_path(request.query_params.get("next", "")), 303)
        age = int(self.keys.lifetimes.session)
        response.headers.append("set-cookie", set_cookie(self.port, self.keys.cookie(), age))
        return response

    # -- pages -------------------------------------------------------------------------------

    async def day(self, request: Request) -> Response:
        p = request.query_params
        when, span = p.get("day"), p.get("span", "day") or "day"
        try:
            out = await self.run(request, lambda: data.day(self.ws, when, span))
        except NerveError as exc:
            return self.failed(request, exc)
        return self.render(request, "day.html", out)

    async def _rules_refused(
        self, request: Request, exc: NerveError, typed: list[dict[str, str]]
    ) -> Response:
        """The day page again, the error beside the rules' form and the rules as typed."""
        try:
            out = await self.run(request, lambda: data.day(self.ws))
        except NerveError:
            return self.failed(request, exc)
        page = self.render(request, "day.html", out, form_error=str(exc), typed=typed)
        page.status_code = 400
        return page

    async def timeline(self, request: Request) -> Response:
        p = request.query_params
        when, since, until = p.get("day"), p.get("since", "").strip(), p.get("until", "").strip()
        try:
            out = await self.run(
                request, lambda: data.timeline_day(self.ws, when, since or None, until or None)
            )
        except NerveError as exc:
            return self.failed(request, exc)
        logged = (out["first"], out["last"]) if out["first"] is not None else None
        return self.render(
            request, "timeline.html", out, x=_x(data.Window(out["since"], out["until"])),
            nav=_day_nav(out["since"], out["until"], logged), drawn=dayline_drawn(out),
            bars=dayline_bars, shown={k: _local(out[k]) for k in ("since", "until")},
            zone=_zone(out["since"]),
        )  # fmt: skip

    async def counts(self, request: Request) -> Response:
        p = request.query_params
        try:
            win = data.window(p.get("since"), p.get("until"))
            buckets = _int(p.get("buckets"), 96, "buckets")
            host = p.get("host", "").strip()
            out = await self.run(
                request, lambda: data.timeline(self.ws, win, buckets=buckets, host=host)
            )
        except NerveError as exc:
            return self.failed(request, exc)
        try:
            least = _int(p.get("min"), 0, "min")
        except NerveError as exc:
            return self.failed(request, exc)
        return self.render(
            request, "counts.html", out, x=_x(win), min=least, ticks=_ticks(win),
            shown={k: _human(p.get(k, "")) for k in ("since", "until")},
            nav=_nav(win, buckets, p.get("host", "").strip()), zone=_zone(win.since),
        )  # fmt: skip

    def _filters(self, request: Request) -> data.Filters:
        p = request.query_params
        return data.Filters(
            text=p.get("text", "").strip(),
            sources=tuple(v for v in p.getlist("source") if v),
            kinds=tuple(v for v in p.getlist("kind") if v),
            subject=p.get("subject", "").strip(),
            trust=p.get("trust", "").strip(),
            everything=p.get("all") == "1",
            host=p.get("host", "").strip(),
        )

    async def events(self, request: Request) -> Response:
        p = request.query_params
        try:
            f = self._filters(request)
            win = data.window(p.get("since") or "7d", p.get("until"))
            page, size = _int(p.get("page"), 0, "page"), _int(p.get("size"), 100, "size")
            out = await self.run(
                request, lambda: data.events(self.ws, f, win, page=page, size=size)
            )
        except NerveError as exc:
            return self.failed(request, exc)
        if p.get("format") == "csv":
            return _csv(["time", "hlc", "id", "source", "kind", "subject", "trust", "line"], [
                [e[c] for c in ("time", "hlc", "id", "source", "kind", "subject", "trust", "line")]
                for e in out["events"]
            ], "events.csv")  # fmt: skip
        cols = [c for c in p.getlist("col") if c in _EVENT_COLS] or _DEFAULT_COLS
        return self.render(request, "events.html", out, cols=cols, all_cols=_EVENT_COLS)

    async def event(self, request: Request) -> Response:
        eid, host = request.path_params["id"], request.query_params.get("host", "").strip()
        try:
            out = await self.run(request, lambda: data.context(self.ws, eid, host=host))
        except NerveError as exc:
            return self.failed(request, exc, 404)
        return self.render(request, "event.html", out)

    async def live(self, request: Request) -> Response:
        return self.render(request, "live.html", {"stream": "/live/stream"})

    async def live_stream(self, request: Request) -> Response:
        try:
            f = self._filters(request)
            after = request.headers.get("last-event-id") or request.query_params.get("after")
            cursor = Hlc.parse(after) if after else None
        except (NerveError, ValueError) as exc:
            return PlainTextResponse(f"bad request: {exc}\n", 400)
        return StreamingResponse(self._stream(request, f, cursor), media_type="text/event-stream")

    async def _stream(
        self, request: Request, f: data.Filters, cursor: Hlc | None
    ) -> AsyncIterator[str]:
        yield ": nerve live tail\nretry: 1000\n\n"
        quiet = 0.0
        while not await request.is_disconnected():
            rows, nxt = await anyio.to_thread.run_sync(data.live_batch, self.ws, f, cursor)
            if nxt is not None and nxt != cursor:
                cursor, quiet = nxt, 0.0
                yield f"id: {cursor}\nevent: events\ndata: {json.dumps(rows, default=str)}\n\n"
                continue
            await anyio.sleep(POLL_S)
            quiet += POLL_S
            if quiet >= KEEP_ALIVE_S:  # a comment, so an idle tail is not taken for a dead one
                quiet = 0.0
                yield ": keep-alive\n\n"

    async def sql(self, request: Request) -> Response:
        text = request.query_params.get("q", "").strip()
        out: dict[str, Any] = {"sql": text, "columns": [], "rows": [], "more": False}
        if text:
            try:
                out = await self.run(request, lambda: data.sql(self.ws, text))
            except NerveError as exc:
                return self.failed(request, exc)
        if request.query_params.get("format") == "csv":
            return _csv(out["columns"], out["rows"], "query.csv")
        return self.render(request, "sql.html", out)

    async def attention(self, request: Request) -> Response:
        def both() -> dict[str, Any]:
            return {**data.decisions(self.ws), "chain": data.chain_state(self.ws)}

        try:
            out = await self.run(request, both)
        except NerveError as exc:
            return self.failed(request, exc)
        return self.render(request, "attention.html", out)

    async def decision(self, request: Request) -> Response:
        try:
            seq = _int(request.path_params["seq"], 0, "seq")
            out = await self.run(request, lambda: data.decision(self.ws, seq))
        except NerveError as exc:
            return self.failed(request, exc, 404)
        return self.render(request, "decision.html", out)

    async def senses(self, request: Request) -> Response:
        def both() -> dict[str, Any]:
            return {**data.senses(self.ws), "workflows": data.workflows(self.ws)}

        try:
            out = await self.run(request, both)
        except NerveError as exc:
            return self.failed(request, exc)
        return self.render(request, "senses.html", out)

    async def privacy(self, request: Request) -> Response:
        def both() -> dict[str, Any]:
            return {
                "capture": data.capture(self.ws),
                "redactions": data.redactions(self.ws),
                **data.access_records(self.ws),
            }

        try:
            out = await self.run(request, both)
        except NerveError as exc:
            return self.failed(request, exc)
        return self.render(request, "privacy.html", out)

    async def health(self, request: Request) -> Response:
        full = request.query_params.get("verify") == "1"
        try:
            out = await self.run(request, lambda: data.health(self.ws, verify=full))
        except NerveError as exc:
            return self.failed(request, exc)
        return self.render(request, "health.html", out)

    # -- writes (POST + CSRF) ----------------------------------------------------------------

    async def write(self, request: Request) -> Response:
        action = request.path_params["action"]
        try:
            form = await posted(request)
            out = await self.run(request, lambda: self._act(action, form))
        except _Refused as exc:
            return PlainTextResponse(f"refused: {exc}\n", 403)
        except NerveError as exc:
            if action == "categories" and not wants_json(request):
                return await self._rules_refused(request, exc, _rules(form))
            return self.failed(request, exc)
        if wants_json(request):
            return JSONResponse(out)
        if action == "forget" and out.get("dry_run"):
            return self.render(request, "forget_preview.html", out, form=form)
        if action == "categories":
            return RedirectResponse("/#categories", 303)
        back = "/senses" if action in ("trigger", "override") else "/privacy"
        return self.render(request, "done.html", out, back=back, action=action)

    def _act(self, action: str, form: FormData) -> dict[str, Any]:
        ws = self.ws
        if action == "pause":
            return data.pause(ws)
        if action == "resume":
            return data.resume(ws)
        if action == "categories":
            return data.set_categories(ws, _rules(form))
        if action == "trigger":
            return data.trigger_sense(ws, str(form.get("sense", "")))
        if action == "override":
            return data.override(
                ws, _field(form, "run") or "", _field(form, "reason") or "",
                confirmed=form.get("confirm") == "yes",
            )  # fmt: skip
        if action == "forget":
            return data.forget(
                ws, match=_field(form, "match"), kinds=_many(form, "kind"),
                sources=_many(form, "source"), before=_field(form, "before"),
                after=_field(form, "after"), reason=_field(form, "reason") or "user",
                dry_run=form.get("confirm") != "yes",
            )  # fmt: skip
        raise UsageError(f"no action {action!r}")


class _Refused(Exception):
    pass


async def posted(request: Request) -> FormData:
    """The POST's form, once its CSRF value is checked (unless the guard checked the header,
    or the caller holds the token itself)."""
    form = await request.form()
    state = request.scope.get("state", {})
    if state.get("session") == "bearer" or state.get("csrf_checked"):
        return form
    offered = str(form.get("csrf", ""))
    keys: Keys = request.app.state.keys
    if not keys.csrf_ok(state.get("session", ""), offered):
        raise _Refused("missing or wrong CSRF token")
    return form


_EVENT_COLS = ["time", "hlc", "source", "kind", "subject", "trust", "line", "id"]
_DEFAULT_COLS = ["time", "source", "kind", "subject", "line"]


def _field(form: FormData, name: str) -> str | None:
    value = str(form.get(name, "") or "").strip()
    return value or None


def _many(form: FormData, name: str) -> list[str]:
    return [str(v).strip() for v in form.getlist(name) if str(v).strip()]


def _rules(form: FormData) -> list[dict[str, str]]:
    """The category editor's rows (``name``, ``app``, ``title`` lists); a row without a
    name is left out (the editor's blank rows)."""
    names, apps, titles = (form.getlist(k) for k in ("name", "app", "title"))
    rows = zip(names, apps, titles, strict=False)
    return [
        {"name": str(n).strip(), "app": str(a).strip(), "title": str(t).strip()}
        for n, a, t in rows
        if str(n).strip()
    ]


def _int(text: str | None, default: int, name: str, lo: int = 0, hi: int = 2**63 - 1) -> int:
    """A whole number from ``lo`` to ``hi`` given as ``name``, or ``default`` when not given."""
    if text is None or text == "":
        return default
    shown = repr(text) if len(text) <= 24 else f"{text[:20]!r}… ({len(text)} characters)"
    try:
        value = int(text) if len(text) <= 40 else None
    except ValueError:
        value = None
    if value is None:
        raise UsageError(f"{name}: {shown} is not a whole number", field=name)
    if not lo <= value <= hi:
        raise UsageError(f"{name}: {shown} is outside {lo}..{hi}", field=name)
    return value


def _human(text: str) -> str:
    """A window bound as the form shows it: a nanosecond stamp (a zoom's) as local time to
    the second, anything typed as typed."""
    from datetime import datetime

    if not (text.isdigit() and len(text) > 12):
        return text
    return datetime.fromtimestamp(int(text) / 1e9).strftime("%Y-%m-%d %H:%M:%S")


def _qs(request: Request) -> str:
    """The query string without its page and format (for links that set them)."""
    from urllib.parse import urlencode

    kept = [(k, v) for k, v in request.query_params.multi_items() if k not in ("page", "format")]
    return urlencode(kept)


def _ticks(win: data.Window, count: int = 6) -> list[dict[str, Any]]:
    from nerve.tail import format_times

    step = (win.until - win.since) / count
    stamps = [int(win.since + i * step) for i in range(count)]
    short = win.until - win.since <= 86_400 * 10**9
    labels = [t.replace("T", " ")[: 16 if not short else None] for t in format_times(stamps)]
    if short:
        labels = [lab.split(" ")[-1][:5] for lab in labels]
    x = _x(win)
    return [{"x": x(s), "label": lab} for s, lab in zip(stamps, labels, strict=True)]


def _nav(win: data.Window, buckets: int, host: str = "") -> dict[str, str]:
    from urllib.parse import quote

    span, mid = win.until - win.since, (win.since + win.until) // 2
    on = f"&host={quote(host)}" if host else ""

    def url(lo: int, hi: int) -> str:
        return f"/timeline/counts?since={lo}&until={hi}&buckets={buckets}{on}"

    return {
        "earlier": url(win.since - span, win.since),
        "later": url(win.until, win.until + span),
        "zoom_in": url(mid - span // 4, mid + span // 4),
        "zoom_out": url(mid - span, mid + span),
    }


def _day_nav(since: int, until: int, logged: tuple[int, int] | None) -> dict[str, str]:
    """Links that move and zoom the timeline's picture, in local times a person reads; a
    move past the log's span ``logged`` is left out (:func:`nerve.ui.dayline.moves`)."""
    from urllib.parse import quote

    def url(lo: int, hi: int) -> str:
        return f"/timeline?since={quote(_human(str(lo)))}&until={quote(_human(str(hi)))}"

    moved = dayline_moves(since, until, logged).items()
    return {key: url(*span) for key, span in moved if span is not None}


def _local(ns: int) -> str:
    """A moment as the timeline's form shows and reads it: local ``2026-12-05 19:24:10``
    (``2026-12-05 19:24`` on a whole minute)."""
    from datetime import datetime

    moment = datetime.fromtimestamp(ns // 10**9)
    return f"{moment:%Y-%m-%d %H:%M}" + (f":{moment:%S}" if moment.second else "")


def _zone(ns: int) -> int:
    """Local time's offset from UTC at ``ns``, in seconds (the page's script writes the
    times a drag picks in the server's local time, whatever the browser's zone)."""
    from datetime import datetime

    offset = datetime.fromtimestamp(ns / 1e9).astimezone().utcoffset()
    return int(offset.total_seconds()) if offset else 0


def _x(win: data.Window) -> Callable[[int], float]:
    """Where an instant falls across the timeline, 0..1000."""
    span = max(1, win.until - win.since)
    return lambda ns: round(max(0.0, min(1000.0, (ns - win.since) * 1000 / span)), 2)


def _csv(columns: list[str], rows: list[list[Any]], name: str) -> Response:
    buf = io.StringIO()
    out = csv.writer(buf)
    out.writerow(columns)
    for row in rows:
        out.writerow([_cell(v) for v in row])
    headers = {"content-disposition": f'attachment; filename="{name}"'}
    return Response(buf.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return csv_cell(value)  # text a spreadsheet would run as a formula gets a '
    return str(value)


def build_app(ws: Workspace, keys: Keys, served: Served) -> Guard:
    """The app for one workspace, behind its guard."""
    pages = Pages(ws, keys, served.port)
    routes = [
        Route("/login", pages.login),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/", pages.day),
        Route("/timeline", pages.timeline),
        Route("/timeline/counts", pages.counts),
        Route("/events", pages.events),
        Route("/events/{id}", pages.event),
        Route("/live", pages.live),
        Route("/live/stream", pages.live_stream),
        Route("/sql", pages.sql),
        Route("/attention", pages.attention),
        Route("/attention/{seq}", pages.decision),
        Route("/senses", pages.senses),
        Route("/privacy", pages.privacy),
        Route("/health", pages.health),
        Route("/do/{action}", pages.write, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(GZipMiddleware, minimum_size=1024)],
        exception_handlers={404: pages.not_found},
    )
    app.state.keys = keys
    return Guard(app, keys, served)
