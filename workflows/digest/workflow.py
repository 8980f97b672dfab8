"""digest: a short Markdown report of what this workspace's log saw recently.

Three roles, no network: ``collect`` reads the recent events through DuckDB, ``write`` turns
them into ``report.md`` in the run's output folder, ``review`` checks the report's sections.
The moderator goes collect → write → review and ends when the review is happy (asking
``write`` again otherwise, within ``max_rounds``). The ``report-shape`` gate check must pass
before a run completes.

The prompt may name the window in minutes (``nerve workflow trigger digest --prompt 15``);
the default is 60.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nerve.flow import END, Message, ModeratorContext, RoleContext, RoleResult, StartFrame, Step

SECTIONS = ("Summary", "Activity", "Senses")
checks = ["report-shape"]


def _window_minutes(prompt: str) -> int:
    text = prompt.strip()
    return int(text) if text.isdigit() and int(text) > 0 else 60


def _recent(workspace: Path, since_ns: int) -> tuple[list[tuple[str, str, int]], dict[str, str]]:
    from nerve.workspace import WorkspaceDir  # imported here: only this role needs DuckDB

    conn = WorkspaceDir(workspace).connect()
    counts = conn.execute(
        "SELECT kind, source_name, count(*) FROM events WHERE physical_ns >= ? "
        "GROUP BY ALL ORDER BY 3 DESC, 1, 2",
        [since_ns],
    ).fetchall()
    latest = conn.execute(
        "SELECT subject, line FROM events WHERE kind = 'sense.state' AND physical_ns >= ? "
        "QUALIFY row_number() OVER (PARTITION BY subject ORDER BY physical_ns DESC, logical DESC)"
        " = 1 ORDER BY subject",
        [since_ns],
    ).fetchall()
    return [(str(k), str(s), int(n)) for k, s, n in counts], {
        str(s): str(line) for s, line in latest
    }


def collect(start: StartFrame, messages: Sequence[Message], ctx: RoleContext) -> RoleResult:
    minutes = _window_minutes(start.prompt)
    counts, senses = _recent(ctx.workspace, time.time_ns() - minutes * 60 * 10**9)
    total = sum(n for _, _, n in counts)
    content = f"{total} events in the last {minutes} minutes from {len(senses)} senses"
    activity = [{"kind": k, "source": s, "events": n} for k, s, n in counts]
    return RoleResult(
        content, {"minutes": minutes, "events": total, "activity": activity, "senses": senses}
    )


def _report(meta: dict[str, Any]) -> str:
    lines = ["# Digest", "", "## Summary", ""]
    lines.append(f"{meta['events']} events in the last {meta['minutes']} minutes.")
    lines += ["", "## Activity", "", "| kind | source | events |", "|---|---|---|"]
    lines += [f"| {a['kind']} | {a['source']} | {a['events']} |" for a in meta["activity"]]
    lines += ["", "## Senses", ""]
    lines += [f"- **{name}**: {line}" for name, line in meta["senses"].items()] or ["(none)"]
    return "\n".join(lines) + "\n"


def write(start: StartFrame, messages: Sequence[Message], ctx: RoleContext) -> RoleResult:
    collected = next(m for m in reversed(messages) if m.role == "collect")
    text = _report(dict(collected.meta))
    (ctx.output_dir / "report.md").write_text(text, encoding="utf-8")
    return RoleResult(f"wrote report.md ({len(text)} characters)", {"outputs": ["report.md"]})


def review(start: StartFrame, messages: Sequence[Message], ctx: RoleContext) -> RoleResult:
    text = (ctx.output_dir / "report.md").read_text(encoding="utf-8")
    missing = [s for s in SECTIONS if f"## {s}" not in text.splitlines()]
    verdict = "looks complete" if not missing else f"missing {', '.join(missing)}"
    return RoleResult(f"report {verdict}", {"ok": not missing, "missing": missing})


roles = {"collect": collect, "write": write, "review": review}


def moderator(context: ModeratorContext, round: int, max_rounds: int) -> str:
    if not isinstance(context, Step):
        return "collect"
    role = context.message.role
    if role == "collect":
        return "write"
    if role == "write":
        return "review"
    happy = bool(context.message.meta.get("ok"))
    return END if happy or round + 1 >= max_rounds else "write"
