"""The MCP server itself, on the official SDK (``mcp.server.mcpserver.MCPServer``).

:func:`build` makes the server for a workspace: the read tools (:mod:`nerve.mcp.tools`,
:mod:`nerve.mcp.info`), the write tools ``mcp.allow_write`` names (:mod:`nerve.mcp.writes`),
the resources, and one middleware that every ``tools/call`` and ``resources/read`` passes
through (:class:`_Audit`): it names the client and session, refuses a call whose session
has spent its budget, hands the tool its allowance, and appends the ``agent.access`` record
(:mod:`nerve.mcp.access`) before the result goes back. :func:`serve_stdio` and
:func:`serve_http` run it; HTTP takes a bearer token (:mod:`nerve.mcp.token`) checked by
the SDK's own bearer middleware.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
import blake3
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from nerve import __version__
from nerve.errors import AccessRefused, NerveError, UsageError
from nerve.mcp import info, tools, writes
from nerve.mcp.access import Access, Recorder
from nerve.mcp.guard import Allowance, Budgets, Screen, json_size
from nerve.mcp.settings import McpConfig
from nerve.mcp.token import check, token_path
from nerve.privacy.settings import PrivacyConfig
from nerve.recall import MAX_QUESTION_CHARS
from nerve.workspace import Workspace

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["INSTRUCTIONS", "build", "check_host", "serve_http", "serve_stdio"]

Transport = Literal["stdio", "http"]
_T = TypeVar("_T")
MAX_SQL_CHARS = 20_000
MAX_TEXT_CHARS = 1_000
MAX_LIST = 64
MAX_LIMIT = 10_000
_LOOPBACK_NAMES = ("localhost",)
_CALL: contextvars.ContextVar[_Pending] = contextvars.ContextVar("nerve_mcp_call")

INSTRUCTIONS = """\
nerve records what happens on this person's computer: shell commands, file changes, \
processes, system load, app focus, errors, and which of those nerve judged worth an \
interruption. Everything is an event in one append-only log. Start with `ask` for a question \
in plain words, `recent` for what happened lately, `search` to find events by their words, \
`highlights` for what nerve surfaced or held back and why, `status` for what is running. \
`query` runs one read-only SQL SELECT over the `events` view and the projections; read the \
nerve://schema/... resources first. Times are the person's local time; cite event ids when \
you rely on an event. Results are bounded per call and per session, and secrets are \
redacted. Every call you make is recorded in the person's log as an agent.access event \
that they can list."""


@dataclass
class _Pending:
    """A call between the middleware and its tool: the record, and what the tool may return."""

    access: Access
    allowance: Allowance
    screen: Screen
    config: McpConfig

    def call(self, ws: Workspace) -> tools.Call:
        return tools.Call(ws, self.screen, self.allowance, self.config.query_timeout)

    def failed(self, exc: BaseException) -> ToolError:
        """Note why the call failed and give the agent that reason (no traceback)."""
        refused = isinstance(exc, AccessRefused | UsageError)
        self.access.outcome = "refused" if refused else "error"
        text = f"{type(exc).__name__}: {exc}"
        hint = getattr(exc, "hint", None)
        self.access.reason = text
        return ToolError(text + (f" (hint: {hint})" if hint else ""))


@dataclass
class _Settings:
    """nerve.yaml's ``mcp:`` and ``privacy:`` sections, read again when the file changes
    (a bad edit keeps the last good ones)."""

    ws: Workspace
    mtime: float | None = None
    mcp: McpConfig = field(default_factory=McpConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)

    def fresh(self) -> _Settings:
        try:
            mtime = self.ws.config_path.stat().st_mtime
        except FileNotFoundError:
            return self
        if mtime != self.mtime:
            try:
                config = Workspace(self.ws.root).config
            except NerveError:
                return self
            self.mtime, self.mcp, self.privacy = mtime, config.mcp, config.privacy
        return self


class _Audit:
    """The middleware every call passes through (see the module docstring)."""

    def __init__(self, ws: Workspace, transport: Transport) -> None:
        self.ws = ws
        self.transport = transport
        self.settings = _Settings(ws).fresh()
        self.budgets = Budgets(self.settings.mcp)
        self.recorder = Recorder(ws)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method not in ("tools/call", "resources/read") or ctx.request_id is None:
            return await call_next(ctx)
        settings = self.settings.fresh()
        self.budgets.config = settings.mcp
        access = self._access(ctx)
        try:
            allowance = self.budgets.allowance(access.session)
        except AccessRefused as exc:
            access.outcome, access.reason = "refused", f"AccessRefused: {exc}"
            await self._record(access)
            return _error_result(ctx.method, f"{access.reason} (hint: {exc.hint})")
        pending = _Pending(access, allowance, Screen(settings.privacy), settings.mcp)
        token = _CALL.set(pending)
        try:
            result = await call_next(ctx)
        except BaseException as exc:  # a protocol error, or the client went away
            access.outcome = "error"
            access.reason = access.reason or f"{type(exc).__name__}: {exc}"[:500]
            await self._record(access)
            raise
        finally:
            _CALL.reset(token)
        return await self._finish(ctx.method, pending, result)

    async def _finish(self, method: str, pending: _Pending, result: HandlerResult) -> HandlerResult:
        access = pending.access
        body = result if isinstance(result, dict) else {}
        if body.get("isError") and access.outcome == "ok":  # the SDK refused it: unknown, bad args
            access.outcome, access.reason = "refused", _text_of(body)[:500]
        if access.outcome == "ok":
            shown = body.get("structuredContent", body.get("contents", body.get("content")))
            access.bytes = json_size(shown)
            access.rows = access.rows or int(method == "resources/read")
        try:
            await self._record(access)
        except (NerveError, OSError) as exc:
            text = f"this access could not be recorded ({exc}); nothing is returned"
            return _error_result(method, text)
        if access.outcome == "ok":
            self.budgets.charge(access.session, access.rows, access.bytes)
        return result

    async def _record(self, access: Access) -> None:
        """Store the record whatever happens to the request meanwhile (a client that went
        away cancels it; the call still happened)."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.recorder.record, access)

    def _access(self, ctx: ServerRequestContext[Any, Any]) -> Access:
        params = dict(ctx.params or {})
        if ctx.method == "tools/call":
            tool, arguments = str(params.get("name")), params.get("arguments") or {}
        else:
            tool, arguments = "read_resource", {"uri": params.get("uri")}
        name, version = _client(ctx, params)
        return Access(
            client=name,
            version=version,
            transport=self.transport,
            session=self._session(ctx, name, version),
            tool=tool,
            arguments=arguments,
        )

    def _session(self, ctx: ServerRequestContext[Any, Any], name: str, version: str) -> str:
        """A short name for the caller's session: stdio is one per process; HTTP one per MCP
        session, or per client name, version and address where the protocol has none."""
        if self.transport == "stdio":
            key = "stdio"
        else:
            request = ctx.request
            headers = getattr(request, "headers", None) or {}
            peer = getattr(getattr(request, "client", None), "host", "?")
            key = headers.get("mcp-session-id") or f"{name}/{version}@{peer}"
        return str(blake3.blake3(key.encode("utf-8", "surrogatepass")).hexdigest()[:16])


def _client(ctx: ServerRequestContext[Any, Any], params: dict[str, Any]) -> tuple[str, str]:
    """The client's name and version from the handshake (or the request's envelope)."""
    client_params = ctx.session.client_params
    info = client_params.client_info if client_params is not None else None
    if info is not None:
        return _clean(info.name), _clean(info.version)
    meta = params.get("_meta") or {}
    raw = meta.get("io.modelcontextprotocol/clientInfo") if isinstance(meta, dict) else None
    if isinstance(raw, dict):
        return _clean(raw.get("name")), _clean(raw.get("version"))
    return "unknown", ""


def _clean(value: Any) -> str:
    text = " ".join(str(value or "").split())[:64]
    return text or "unknown"


def _text_of(body: dict[str, Any]) -> str:
    parts = body.get("content") or []
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def _error_result(method: str, text: str) -> CallToolResult:
    """A refusal as the agent sees it: a tool's error result, or a protocol error for a
    resource read."""
    if method != "tools/call":
        raise MCPError(code=INVALID_REQUEST, message=text)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _current() -> _Pending:
    try:
        return _CALL.get()
    except LookupError:
        raise ToolError("this call did not pass nerve's audit; it is refused") from None


def _run(ws: Workspace, body: Callable[[_Pending], _T]) -> _T:
    """Run a tool body for the current call; failures become the agent's error text."""
    pending = _current()
    try:
        return body(pending)
    except NerveError as exc:
        raise pending.failed(exc) from None
    except Exception as exc:
        pending.access.outcome, pending.access.reason = "error", f"{type(exc).__name__}: {exc}"
        raise


# -- tools -------------------------------------------------------------------------------------

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
Since = Annotated[
    str | None,
    Field(
        description="Start of the window: 10m, 2h, 3d (ago), an ISO-8601 local time "
        "(2026-05-01T09:00, 14:00 = today) or an HLC stamp.",
        max_length=64,
    ),
]
Until = Annotated[str | None, Field(description="End of the window, same forms.", max_length=64)]
Names = Annotated[list[str] | None, Field(max_length=MAX_LIST)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="At most this many items.")]


def _read_tools(server: MCPServer, ws: Workspace) -> None:
    def rows(pending: _Pending, fn: Callable[[tools.Call], _T]) -> _T:
        call = pending.call(ws)
        out = fn(call)
        pending.access.rows = call.rows
        return out

    def ask(
        question: Annotated[
            str, Field(description="The question, in plain words.", max_length=MAX_QUESTION_CHARS)
        ],
        k: Annotated[int | None, Field(ge=1, le=100, description="Events to gather (12).")] = None,
    ) -> tools.AskOut:
        """Answer a question about what happened on this computer from nerve's log, the way
        `nerve ask` does: deterministic recall first (which files changed, the last command, the
        last error, what was surfaced or held), a configured language model only when recall
        cannot answer. Returns the answer, which tier answered (0 recall, 1 model, null none)
        and the cited events with their time and source. Prefer this for questions in words;
        follow up with `recent`, `search` or `query` for detail."""
        return _run(ws, lambda p: rows(p, lambda c: tools.ask(c, question, k)))

    def search(
        text: Annotated[str, Field(description="Words to look for.", max_length=MAX_TEXT_CHARS)],
        since: Since = None,
        until: Until = None,
        sources: Annotated[
            Names, Field(description="Only these source classes (shell, file_change, nerve, …).")
        ] = None,
        limit: Limit = 20,
    ) -> tools.SearchOut:
        """Find events whose text matches words, ranked by BM25 over the newest events (the
        retrieval behind `ask`): observations, highlights, attention decisions and sense
        errors. Narrow it with a time window and source classes. Each hit has its id, local
        time, source, kind, line, payload and score. Use it to find when something happened
        ("git push", "build failed", a file name)."""
        return _run(
            ws, lambda p: rows(p, lambda c: tools.search(c, text, since, until, sources, limit))
        )

    def recent(
        since: Since = None,
        until: Until = None,
        kinds: Annotated[
            Names, Field(description="Only these kinds (observation, sense.error, …).")
        ] = None,
        sources: Annotated[
            Names, Field(description="Only these source classes (shell, file_change, nerve, …).")
        ] = None,
        limit: Limit = 50,
        include_bookkeeping: Annotated[
            bool, Field(description="Also nerve's own bookkeeping (sense.state, signal, …).")
        ] = False,
    ) -> tools.RecentOut:
        """The newest events in the log, newest first, as `nerve tail` shows them: local time,
        source, kind, subject, line and payload. Bookkeeping records (sense state snapshots,
        signals, chain links) and agents' own access records are left out unless asked for.
        Use a window (since/until) and kinds or sources to see what happened at a given time,
        e.g. since '09:00' until '12:30' for a morning."""
        return _run(
            ws,
            lambda p: rows(
                p,
                lambda c: tools.recent(c, since, until, kinds, sources, limit, include_bookkeeping),
            ),
        )

    def highlights(
        since: Since = None,
        outcome: Annotated[
            tools.Outcome | None,
            Field(description="surfaced, held, or one exact outcome (hold:value, hold:budget)."),
        ] = None,
        limit: Limit = 50,
    ) -> tools.HighlightsOut:
        """nerve's attention decisions, newest first: each highlight it noticed and whether it
        surfaced it (interrupted the person) or held it back, with the value, the cost of
        interrupting, the joule budget before and after, the reason in words, and the
        observation that caused it. Use it for "what did nerve flag?" or "what did it hold
        back today?"."""
        return _run(ws, lambda p: rows(p, lambda c: tools.highlights(c, since, outcome, limit)))

    def query(
        sql: Annotated[
            str,
            Field(
                description="One DuckDB SELECT over events or a projection.",
                max_length=MAX_SQL_CHARS,
            ),
        ],
        limit: Annotated[
            int | None, Field(ge=1, le=MAX_LIMIT, description="Row cap (default: the budget).")
        ] = None,
    ) -> tools.QueryOut:
        """Run one read-only SQL SELECT (DuckDB dialect) over the `events` view and the
        projections (activity, sense_state, salience, attention_budget, workflow_runs, …); read
        the nerve://schema/<view> resources for their columns. `data` is the payload as JSON
        (data->>'path'); `ts` is a UTC timestamp; `source_name` and `kind` classify events.
        Prefer aggregates (count, group by, time_bucket) and a WHERE on ts: rows are capped,
        a query is stopped after a few seconds, and anything but one SELECT over the log
        (writes, files, ATTACH, INSTALL, PRAGMA, SET) is refused."""
        return _run(ws, lambda p: rows(p, lambda c: tools.query(c, sql, limit)))

    def status() -> info.StatusOut:
        """What nerve is doing now: whether its daemon runs, whether capture is paused, each
        sense with its schedule, computes, errors, last line and last error, and the size of
        the log. Use it before concluding that nothing happened: a stopped daemon or a paused
        capture records nothing."""

        def body(pending: _Pending) -> info.StatusOut:
            out = info.status(ws, pending.screen)
            pending.access.rows = len(out.senses)
            return out

        return _run(ws, body)

    for fn in (ask, search, recent, highlights, query, status):
        server.add_tool(fn, annotations=_READ, structured_output=True)


def _write_tools(server: MCPServer, ws: Workspace, allowed: list[str]) -> None:
    def emit(
        line: Annotated[str, Field(description="The event's one line of text.", max_length=4_000)],
        kind: Annotated[
            str, Field(description="Its kind (observation).", max_length=128)
        ] = "observation",
        source: Annotated[
            str, Field(description="Source class (endpoint).", max_length=32)
        ] = "endpoint",
        subject: Annotated[str, Field(description="What it is about.", max_length=256)] = "",
        payload: Annotated[dict[str, Any] | None, Field(description="A JSON object.")] = None,
    ) -> writes.WriteOut:
        """Append one event to the person's log (trust Untrusted: it comes from you). Privacy
        rules apply; nerve's own kinds and source are refused."""
        return _run(
            ws, lambda p: _counted(p, writes.emit(ws, line, kind, source, subject, payload))
        )

    def trigger_workflow(
        name: Annotated[str, Field(description="The workflow's name.", max_length=128)],
        prompt: Annotated[str, Field(description="Its start frame.", max_length=8_000)] = "",
        max_rounds: Annotated[int | None, Field(ge=1, le=1_000)] = None,
        dry_run: bool = False,
    ) -> writes.WriteOut:
        """Ask the running nerve daemon to start a run of a workflow; returns the run id."""
        return _run(
            ws,
            lambda p: _counted(p, writes.trigger_workflow(ws, name, prompt, max_rounds, dry_run)),
        )

    def answer(
        run: Annotated[str, Field(description="The waiting run's id.", max_length=128)],
        choice: Annotated[str, Field(description="One of its question's options.", max_length=512)],
    ) -> writes.WriteOut:
        """Answer the question a waiting workflow run asked; the run resumes."""

        def body(p: _Pending) -> writes.WriteOut:
            by = f"agent {p.access.client} {p.access.version}".strip()
            return _counted(p, writes.answer(ws, run, choice, by))

        return _run(ws, body)

    for fn in (emit, trigger_workflow, answer):
        if fn.__name__ in allowed:
            annotations = ToolAnnotations(read_only_hint=False, destructive_hint=False)
            server.add_tool(fn, annotations=annotations, structured_output=True)


def _counted(pending: _Pending, out: writes.WriteOut) -> writes.WriteOut:
    pending.access.rows = 1
    return out


# -- resources ---------------------------------------------------------------------------------


def _resources(server: MCPServer, ws: Workspace) -> None:
    def view(name: str) -> Callable[[], str]:
        def read() -> str:
            _current()
            return json.dumps(info.schema(ws, name), ensure_ascii=False)

        return read

    for name in ["events", *info.projection_names(ws)]:
        server.resource(
            f"nerve://schema/{name}",
            name=f"schema of {name}",
            description=f"Columns of the {name} view, their types and what they mean.",
            mime_type="application/json",
        )(view(name))

    def present() -> str:
        _current()
        return json.dumps(info.sources(ws), ensure_ascii=False)

    server.resource(
        "nerve://sources",
        name="sources and kinds",
        description="The source classes and event kinds in this log, with counts and newest times.",
        mime_type="application/json",
    )(present)


# -- building and serving ----------------------------------------------------------------------


class _Verifier:
    """The SDK's bearer middleware asks this whether a token is the workspace's."""

    def __init__(self, ws: Workspace) -> None:
        self.path = token_path(ws)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not check(self.path, token):
            return None
        return AccessToken(token=token, client_id="nerve-token", scopes=[])


def build(ws: Workspace, transport: Transport = "stdio", *, url: str | None = None) -> MCPServer:
    """The server for ``ws``; for HTTP, ``url`` is where it listens (the token's issuer)."""
    auth: dict[str, Any] = {}
    if transport == "http":
        issuer = url or "http://127.0.0.1"
        auth = {
            "auth": AuthSettings(issuer_url=issuer, resource_server_url=None),  # type: ignore[arg-type]
            "token_verifier": _Verifier(ws),
        }
    server: MCPServer = MCPServer(
        "nerve",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        **auth,
    )
    server.middleware.append(_Audit(ws, transport))
    _read_tools(server, ws)
    _write_tools(server, ws, list(ws.config.mcp.allow_write))
    _resources(server, ws)
    return server


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse to listen beyond this machine unless ``allow_remote``."""
    if allow_remote or host in _LOOPBACK_NAMES:
        return
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"--http {host}: not a loopback address; nerve serves its log to this machine only",
            hint="listen on 127.0.0.1, or give --allow-remote (the token is still required)",
        )


def serve_stdio(ws: Workspace) -> None:
    """Serve on stdin/stdout until the client closes them."""
    build(ws, "stdio").run("stdio")


def serve_http(
    ws: Workspace, host: str, port: int, *, ready: Callable[[str], None] | None = None
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (SIGINT or
    SIGTERM); ``ready`` is told the URL once the socket listens (port 0: the one chosen)."""
    import uvicorn

    server = build(ws, "http", url=f"http://{_url_host(host)}:{port}")
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(runner.serve)
            while not runner.started and not runner.should_exit:
                await anyio.sleep(0.05)
            if runner.started and ready is not None:
                bound = runner.servers[0].sockets[0].getsockname()[1]
                ready(f"http://{_url_host(host)}:{bound}/mcp")

    with _stop_on_signals():
        anyio.run(main)


class _Stopped(Exception):
    """A stop signal: uvicorn shut down and raised it again."""


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM end the server cleanly (exit 0): uvicorn shuts down on them, then
    raises the signal again for the handler it found, which is this one."""

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except* _Stopped:  # raised inside the task group: it arrives in an ExceptionGroup
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
