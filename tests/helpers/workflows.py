"""Workflow folders, check scripts and a daemon for tests that run real workflow workers.

Roles that must wait for the test block on a *gate file*: ``wait_for_gate(ctx, name)`` polls
for ``<workspace>/gates/<name>`` (at most 30 s), and the test releases them with
``open_gate(root, name)``. Roles leave traces in ``<workspace>/traces/<role>`` (one line per
call), so a test can count how often a role really ran.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.daemon_util import Daemon

COMMON = """
import os, time
from pathlib import Path
from nerve.flow import END, Question, RoleResult, Start, Step

def trace(ctx, note=""):
    folder = ctx.workspace / "traces"
    folder.mkdir(exist_ok=True)
    with open(folder / ctx.role, "a") as f:
        f.write(f"{ctx.run} {os.getpid()} {note}\\n")

def wait_for_gate(ctx, name):
    deadline = time.monotonic() + 30
    while not (ctx.workspace / "gates" / name).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {name} never opened")
        time.sleep(0.02)
"""

TRIO = (
    COMMON
    + """
def plan(start, messages, ctx):
    trace(ctx)
    return RoleResult(f"plan for {start.prompt}", {"steps": 2})

def build(start, messages, ctx):
    trace(ctx)
    if start.prompt.startswith("slow"):
        wait_for_gate(ctx, start.prompt)
    assert [m.role for m in messages] == ["plan"]
    return {"content": "built", "meta": {"built": True}}

async def check(start, messages, ctx):
    trace(ctx)
    return f"checked {len(messages)} messages"

roles = {"plan": plan, "build": build, "check": check}

def moderator(context, round, max_rounds):
    if isinstance(context, Start):
        return "plan"
    return {"plan": "build", "build": "check", "check": END}[context.message.role]
"""
)

LOOP = """
from nerve.flow import Step

def again(start, messages):
    return f"round {len(messages) + 1}"

roles = {"again": again}

def moderator(context, round, max_rounds):
    return "again"
"""

GHOST = """
def only(start, messages):
    return "only"

roles = {"only": only}

def moderator(context, round, max_rounds):
    return "nobody" if round else "only"
"""

BOOM = """
from nerve.flow import END

def fine(start, messages):
    return "fine"

def boom(start, messages):
    raise ValueError("the role blew up")

roles = {"fine": fine, "boom": boom}

def moderator(context, round, max_rounds):
    return ["fine", "boom", END][round]
"""

ASK = (
    COMMON
    + """
def decide(start, messages, ctx):
    trace(ctx)
    if ctx.answer is None:
        return Question("Ship it?", ["yes", "no"])
    return RoleResult(f"answer was {ctx.answer.choice}", {"choice": ctx.answer.choice})

roles = {"decide": decide}

def moderator(context, round, max_rounds):
    return "decide" if isinstance(context, Start) else END
"""
)

CRASHY = (
    COMMON
    + """
def first(start, messages, ctx):
    trace(ctx)
    return "first done"

def second(start, messages, ctx):
    trace(ctx, "begin")
    if start.prompt == "always-crash":
        if not (ctx.workspace / "gates" / "healed").exists():
            os._exit(9)
    elif not (ctx.workspace / "gates" / f"survive-{start.prompt}").exists():
        (ctx.workspace / "pids").mkdir(exist_ok=True)
        (ctx.workspace / "pids" / start.prompt).write_text(str(os.getpid()))
        time.sleep(60)  # the test kills this process, or drains it
    trace(ctx, "end")
    return "second done"

def third(start, messages, ctx):
    trace(ctx)
    return "third done"

roles = {"first": first, "second": second, "third": third}

def moderator(context, round, max_rounds):
    return ["first", "second", "third", END][round]
"""
)

# Gate checks: each prints what `findings` says, or misbehaves in its own way.
CHECK_PRELUDE = """\
import json, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
target = args.get("--output-path") or args.get("--file-path")
"""
CHECK_SCRIPTS = {
    "sections": "text = open(target).read()\n"
    "missing = [h for h in ('## Summary', '## Details') if h not in text.splitlines()]\n"
    "print(json.dumps({'pass': not missing, 'findings': missing}))\n",
    "always-fail": "print(json.dumps({'pass': False, 'findings': ['x'], 'findings_count': 1}))\n",
    "no-tool": "sys.exit(127)\n",
    "crashy": "sys.stderr.write('oops\\n')\nsys.exit(3)\n",
    "garbage": "print('this is not json')\n",
    "sleepy": "time.sleep(10)\nprint(json.dumps({'pass': True}))\n",
    "toucher": "open(target, 'a').write('touched\\n')\nprint(json.dumps({'pass': True}))\n",
    "md-write": "text = open(target).read()\n"
    "print(json.dumps({'pass': 'TODO' not in text, 'findings': ['TODO'] * text.count('TODO')}))\n",
}

REPORT = (
    COMMON
    + """
checks = ["always-fail", "no-tool", "crashy", "garbage", "sleepy"]

def author(start, messages, ctx):
    out = ctx.output_dir
    if start.prompt == "escape":
        (ctx.workspace / "outside.md").write_text("## Summary\\n## Details\\n")
        os.symlink(ctx.workspace / "outside.md", out / "report.md")
    elif start.prompt == "good":
        (out / "report.md").write_text("# R\\n## Summary\\n## Details\\n")
    else:
        (out / "report.md").write_text("# R\\n## Summary\\n")
    return RoleResult("wrote report.md", {"outputs": ["report.md"]})

roles = {"author": author}

def moderator(context, round, max_rounds):
    return "author" if isinstance(context, Start) else END
"""
)


def check_manifest(
    check_id: str, *, severity: str, fire_on: str, matches: str, timeout: int
) -> str:
    command = json.dumps([sys.executable, f"checks_bin/{check_id}.py"])
    return (
        f"---\nid: {check_id}\nkind: deterministic\ncommand: {command}\n"
        f"default_severity: {severity}\ndescription: test check {check_id}\n"
        f'fire_on: {fire_on}\nmatches: "{matches}"\ntimeout_seconds: {timeout}\n---\n'
    )


def write_checks(root: Path, specs: dict[str, dict[str, Any]]) -> None:
    """Write ``checks_bin/<id>.py`` and ``workflows/checks/<id>.md`` for each spec."""
    (root / "checks_bin").mkdir(parents=True, exist_ok=True)
    (root / "workflows" / "checks").mkdir(parents=True, exist_ok=True)
    for check_id, spec in specs.items():
        script = CHECK_PRELUDE + CHECK_SCRIPTS[check_id]
        (root / "checks_bin" / f"{check_id}.py").write_text(script)
        manifest = check_manifest(check_id, **spec)
        (root / "workflows" / "checks" / f"{check_id}.md").write_text(manifest)


def write_workflow(root: Path, name: str, code: str) -> None:
    folder = root / "workflows" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workflow.py").write_text(code)


def open_gate(root: Path, name: str) -> None:
    (root / "gates").mkdir(exist_ok=True)
    (root / "gates" / name).write_text("open")


def traces(root: Path, role: str) -> list[str]:
    path = root / "traces" / role
    return path.read_text().splitlines() if path.exists() else []


class Flows(Daemon):
    """A daemon plus the workflow-specific reads tests need."""

    def trigger(self, name: str, **fields: Any) -> dict[str, Any]:
        reply = self.request({"type": "trigger-workflow", "workflow": name, **fields})
        assert reply["ok"], reply
        return reply

    def statuses(self, run: str) -> list[str]:
        return [e["data"]["status"] for e in self.events("workflow.status", run)]

    def status(self, run: str) -> str | None:
        found = self.statuses(run)
        return found[-1] if found else None

    def wait_status(self, run: str, *wanted: str, timeout: float = 20.0) -> str:
        return str(
            self.wait_for(
                lambda: self.status(run) if self.status(run) in wanted else None,
                timeout=timeout,
                what=f"{run} to become {' or '.join(wanted)} (now {self.status(run)})",
            )
        )

    def messages(self, run: str) -> list[dict[str, Any]]:
        return [e["data"] for e in self.events("workflow.message", run)]

    def worker_pid(self, name: str) -> int | None:
        reply = self.request({"type": "workflow-status"})
        pid = reply["workflows"].get(name, {}).get("pid")
        return int(pid) if pid else None


@contextmanager
def running(root: Path) -> Iterator[Flows]:
    daemon = Flows(root)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


def wait(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")
