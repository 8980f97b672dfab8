"""The recorder every call to ``nerve mcp`` passes through: one SDK middleware
(:class:`Middleware`).

For each ``tools/call`` and ``resources/read`` it names the client (from the MCP handshake,
or the request's envelope) and the session, refuses the call if the session has spent its
budget, hands the tool its allowance and the privacy screen (:func:`current`, :func:`run`),
and appends the ``agent.access`` record (:mod:`nerve.mcp.access`) before the result goes
back: a call the SDK itself refuses (an unknown tool, arguments that break the schema) and a
client that goes away mid-call are recorded too. ``nerve.yaml``'s ``mcp:`` and ``privacy:``
sections are read again when the file changes.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.to_thread
import blake3
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, CallToolResult, TextContent

from nerve.api import Workspace
from nerve.errors import AccessRefused, NerveError, UsageError
from nerve.mcp import tools
from nerve.mcp.access import Access, Recorder
from nerve.mcp.budgets import Allowance, Budgets, json_size
from nerve.mcp.settings import McpConfig
from nerve.privacy.screen import Screen
from nerve.privacy.settings import PrivacyConfig

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["Middleware", "Pending", "Transport", "current", "in_words", "run", "stdio_session"]

Transport = Literal["stdio", "http"]
_T = TypeVar("_T")
_CALL: contextvars.ContextVar[Pending] = contextvars.ContextVar("nerve_mcp_call")


@dataclass
class Pending:
    """A call between the middleware and its tool: the record, and what the tool may return."""

    ws: Workspace
    access: Access
    allowance: Allowance
    screen: Screen
    config: McpConfig

    def call(self) -> tools.Call:
        return tools.Call(self.ws, self.screen, self.allowance, self.config.query_timeout)

    def failed(self, exc: BaseException) -> ToolError:
        """Note why the call failed and give the agent that reason (no traceback)."""
        refused = isinstance(exc, AccessRefused | UsageError)
        self.access.outcome = "refused" if refused else "error"
        text = f"{type(exc).__name__}: {exc}"
        hint = getattr(exc, "hint", None)
        self.access.reason = text
        return ToolError(text + (f" (hint: {hint})" if hint else ""))


@dataclass
class _Sections:
    """nerve.yaml's ``mcp:`` and ``privacy:`` sections, read again when the file changes
    (a bad edit keeps the last good ones)."""

    ws: Workspace
    mtime: float | None = None
    mcp: McpConfig = field(default_factory=McpConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)

    def fresh(self) -> _Sections:
        try:
            mtime = self.ws.settings.path.stat().st_mtime
        except FileNotFoundError:
            return self
        if mtime != self.mtime:
            try:
                config = self.ws.settings.read()
            except NerveError:
                return self
            self.mtime, self.mcp, self.privacy = mtime, config.mcp, config.privacy
        return self


class Middleware:
    """The middleware every call passes through (see the module docstring)."""

    def __init__(self, ws: Workspace, transport: Transport) -> None:
        self.ws = ws
        self.transport = transport
        self.sections = _Sections(ws).fresh()
        self.budgets = Budgets(self.sections.mcp)
        self.recorder = Recorder(ws)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method not in ("tools/call", "resources/read") or ctx.request_id is None:
            return await call_next(ctx)
        sections = self.sections.fresh()
        self.budgets.config = sections.mcp
        access = self._access(ctx)
        try:
            allowance = self.budgets.allowance(access.session)
        except AccessRefused as exc:
            access.outcome, access.reason = "refused", f"AccessRefused: {exc}"
            await self._record(access)
            return _error_result(ctx.method, f"{access.reason} (hint: {exc.hint})")
        pending = Pending(self.ws, access, allowance, Screen(sections.privacy), sections.mcp)
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

    async def _finish(self, method: str, pending: Pending, result: HandlerResult) -> HandlerResult:
        access = pending.access
        body = result if isinstance(result, dict) else {}
        if body.get("isError"):
            _reword(body)
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
            return stdio_session()
        else:
            request = ctx.request
            headers = getattr(request, "headers", None) or {}
            peer = getattr(getattr(request, "client", None), "host", "?")
            key = headers.get("mcp-session-id") or f"{name}/{version}@{peer}"
        return _session_name(key)


def stdio_session() -> str:
    """The session name of a stdio server: one per process."""
    return _session_name("stdio")


def _session_name(key: str) -> str:
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


_VALIDATION = re.compile(r"(?:Error executing tool (\S+): )?\d+ validation errors? for \S+\n")
_PYDANTIC_TAIL = re.compile(r"\s*\[type=[^\]]*\]\s*$")


def in_words(text: str) -> str:
    """pydantic's report on a tool's arguments as one line of words: each field and what
    is wrong with it, without input echoes, error codes or help links."""
    found = _VALIDATION.search(text)
    if found is None:
        return text
    problems, field_name = [], ""
    for line in text[found.end() :].splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("For further information"):
            continue
        if not line.startswith(" "):
            field_name = stripped
            continue
        message = _PYDANTIC_TAIL.sub("", stripped)
        problems.append(f"{field_name}: {message}" if field_name else message)
    tool = f" for {found.group(1)}" if found.group(1) else ""
    return f"invalid arguments{tool}: " + "; ".join(problems)


def _reword(body: dict[str, Any]) -> None:
    for part in body.get("content") or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            part["text"] = in_words(part["text"])


def _error_result(method: str, text: str) -> CallToolResult:
    """A refusal as the agent sees it: a tool's error result, or a protocol error for a
    resource read."""
    if method != "tools/call":
        raise MCPError(code=INVALID_REQUEST, message=text)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def current() -> Pending:
    try:
        return _CALL.get()
    except LookupError:
        raise ToolError("this call did not pass nerve's recorder; it is refused") from None


def run(body: Callable[[tools.Call], _T]) -> _T:
    """Run a tool's body for the current call: it gets the call (workspace, privacy screen,
    allowance); the items it returned are counted, and a failure becomes the agent's error
    text and the record's reason."""
    pending = current()
    call = pending.call()
    try:
        out = body(call)
    except NerveError as exc:
        raise pending.failed(exc) from None
    except Exception as exc:
        pending.access.outcome, pending.access.reason = "error", f"{type(exc).__name__}: {exc}"
        raise
    pending.access.rows = call.rows
    return out
