"""What ``nerve mcp`` offers an agent: its tools (schemas and descriptions written for a
model) and its resources.

Each tool is a plain function whose signature is its JSON schema (argument sizes bounded,
so an oversized argument is refused before any work) and whose return type is its output
schema; its body runs through :func:`nerve.mcp.recorder.run`, which hands it the call's
workspace, privacy screen and allowance.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from nerve.api import Workspace
from nerve.mcp import info, recorder, tools, writes
from nerve.recall import MAX_QUESTION_CHARS

__all__ = ["INSTRUCTIONS", "READ_TOOLS", "WRITE_TOOLS", "add_resources", "add_tools"]

MAX_SQL_CHARS = 20_000
MAX_TEXT_CHARS = 1_000
MAX_LIST = 64
MAX_LIMIT = 10_000

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

Since = Annotated[
    str | None,
    Field(
        description="Start of the window: 10m, 2h, 3d (ago), an ISO-8601 local time "
        "(2026-05-01T09:00; 14:00 is today) or an HLC stamp.",
        max_length=64,
    ),
]
Until = Annotated[str | None, Field(description="End of the window, same forms.", max_length=64)]
Sources = Annotated[
    list[str] | None,
    Field(
        description="Only these source classes (shell, file_change, nerve, …).", max_length=MAX_LIST
    ),
]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="At most this many items.")]


# -- read tools --------------------------------------------------------------------------------


def ask(
    question: Annotated[
        str, Field(description="The question, in plain words.", max_length=MAX_QUESTION_CHARS)
    ],
    k: Annotated[int | None, Field(ge=1, le=100, description="Events to gather (12).")] = None,
) -> tools.AskOut:
    """Answer a question about what happened on this computer from nerve's log, the way
    `nerve ask` does: deterministic recall first (which files changed, the last command, the
    last error, what was surfaced or held), a configured language model only when recall
    cannot answer. Returns the answer, which tier answered (0 recall, 1 model, null none) and
    the cited events with their time and source. Prefer this for questions in words; follow
    up with `recent`, `search` or `query` for detail."""
    return recorder.run(lambda call: tools.ask(call, question, k))


def search(
    text: Annotated[str, Field(description="Words to look for.", max_length=MAX_TEXT_CHARS)],
    since: Since = None,
    until: Until = None,
    sources: Sources = None,
    limit: Limit = 20,
) -> tools.SearchOut:
    """Find events whose text matches words, ranked by BM25 over the newest events (the
    retrieval behind `ask`): observations, highlights, attention decisions and sense errors.
    Narrow it with a time window and source classes. Each hit has its id, local time,
    source, kind, line, payload and score. Use it to find when something happened ("git
    push", "build failed", a file name)."""
    return recorder.run(lambda call: tools.search(call, text, since, until, sources, limit))


def recent(
    since: Since = None,
    until: Until = None,
    kinds: Annotated[
        list[str] | None,
        Field(description="Only these kinds (observation, sense.error, …).", max_length=MAX_LIST),
    ] = None,
    sources: Sources = None,
    limit: Limit = 50,
    include_bookkeeping: Annotated[
        bool, Field(description="Also nerve's own bookkeeping (sense.state, signal, …).")
    ] = False,
) -> tools.RecentOut:
    """The newest events in the log, newest first, as `nerve tail` shows them: local time,
    source, kind, subject, line and payload. Bookkeeping records (sense state snapshots,
    signals, chain links) and agents' own access records are left out unless asked for. Use
    a window (since/until) and kinds or sources to see what happened at a given time, e.g.
    since '09:00' until '12:30' for a morning."""
    return recorder.run(
        lambda call: tools.recent(call, since, until, kinds, sources, limit, include_bookkeeping)
    )


def highlights(
    since: Since = None,
    outcome: Annotated[
        tools.Outcome | None,
        Field(
            description="surfaced, held, or one exact outcome (surface, hold:value, "
            "hold:budget, hold:direction, hold:transient)."
        ),
    ] = None,
    limit: Limit = 50,
) -> tools.HighlightsOut:
    """nerve's attention decisions, newest first: each highlight it noticed and whether it
    surfaced it (interrupted the person) or held it back, with the value, the cost of
    interrupting, the joule budget before and after, the reason in words, and the
    observation that caused it. Use it for "what did nerve flag?" or "what did it hold back
    today?"."""
    return recorder.run(lambda call: tools.highlights(call, since, outcome, limit))


def query(
    sql: Annotated[
        str,
        Field(
            description="One DuckDB SELECT over events or a projection.", max_length=MAX_SQL_CHARS
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
    Prefer aggregates (count, group by, time_bucket) and a WHERE on ts: rows are capped, a
    query is stopped after a few seconds, and anything but one SELECT over the log (writes,
    files, ATTACH, INSTALL, PRAGMA, SET) is refused."""
    return recorder.run(lambda call: tools.query(call, sql, limit))


def status() -> info.StatusOut:
    """What nerve is doing now: whether its daemon runs, whether capture is paused, each
    sense with its schedule, computes, errors, last line and last error, and the size of the
    log. Use it before concluding that nothing happened: a stopped daemon or a paused capture
    records nothing."""

    def body(call: tools.Call) -> info.StatusOut:
        out = info.status(call.ws, call.screen)
        call.rows = len(out.senses)
        return out

    return recorder.run(body)


READ_TOOLS: tuple[Callable[..., Any], ...] = (ask, search, recent, highlights, query, status)


# -- write tools (only those mcp.allow_write names) ------------------------------------------


def _one(call: tools.Call, out: writes.WriteOut) -> writes.WriteOut:
    call.rows = 1
    return out


def emit(
    line: Annotated[str, Field(description="The event's one line of text.", max_length=4_000)],
    kind: Annotated[str, Field(description="Its kind.", max_length=128)] = "observation",
    source: Annotated[str, Field(description="Its source class.", max_length=32)] = "endpoint",
    subject: Annotated[str, Field(description="What it is about.", max_length=256)] = "",
    payload: Annotated[dict[str, Any] | None, Field(description="A JSON object.")] = None,
) -> writes.WriteOut:
    """Append one event to the person's log (trust Untrusted: it comes from you). Privacy
    rules apply; nerve's own kinds and source are refused."""
    return recorder.run(
        lambda call: _one(call, writes.emit(call.ws, line, kind, source, subject, payload))
    )


def trigger_workflow(
    name: Annotated[str, Field(description="The workflow's name.", max_length=128)],
    prompt: Annotated[str, Field(description="Its start frame.", max_length=8_000)] = "",
    max_rounds: Annotated[int | None, Field(ge=1, le=1_000)] = None,
    dry_run: bool = False,
) -> writes.WriteOut:
    """Ask the running nerve daemon to start a run of a workflow; returns the run id."""
    return recorder.run(
        lambda call: _one(call, writes.trigger_workflow(call.ws, name, prompt, max_rounds, dry_run))
    )


def answer(
    run: Annotated[str, Field(description="The waiting run's id.", max_length=128)],
    choice: Annotated[str, Field(description="One of its question's options.", max_length=512)],
) -> writes.WriteOut:
    """Answer the question a waiting workflow run asked; the run resumes."""
    access = recorder.current().access
    by = f"agent {access.client} {access.version}".strip()
    return recorder.run(lambda call: _one(call, writes.answer(call.ws, run, choice, by)))


WRITE_TOOLS: dict[str, Callable[..., writes.WriteOut]] = {
    "emit": emit,
    "trigger_workflow": trigger_workflow,
    "answer": answer,
}


def add_tools(server: MCPServer, allowed: list[str]) -> None:
    """The read tools, and the write tools named in ``allowed``."""
    read = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for tool in READ_TOOLS:
        server.add_tool(tool, annotations=read, structured_output=True)
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    for name, writer in WRITE_TOOLS.items():
        if name in allowed:
            server.add_tool(writer, name=name, annotations=write, structured_output=True)


# -- resources -------------------------------------------------------------------------------


def add_resources(server: MCPServer, ws: Workspace) -> None:
    """The schema of ``events`` and of each projection, and the sources and kinds present."""

    def reader(make: Callable[[], Any]) -> Callable[[], str]:
        def read() -> str:
            recorder.current()  # recorded like a tool call
            return json.dumps(make(), ensure_ascii=False)

        return read

    def schema_of(view: str) -> Callable[[], Any]:
        return lambda: info.schema(ws, view)

    for name in ["events", *info.projection_names(ws)]:
        server.resource(
            f"nerve://schema/{name}",
            name=f"schema of {name}",
            description=f"Columns of the {name} view, their types and what they mean.",
            mime_type="application/json",
        )(reader(schema_of(name)))
    server.resource(
        "nerve://sources",
        name="sources and kinds",
        description="The source classes and event kinds in this log, with counts and newest times.",
        mime_type="application/json",
    )(reader(lambda: info.sources(ws)))
