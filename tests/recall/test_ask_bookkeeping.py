"""`nerve ask`'s own records (``ask.question``, ``ask.answer``) stay in the log for the audit
but out of the person's history: every reader leaves them out unless asked by kind or flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nerve
from nerve import api, logops
from nerve.events import ASK_KINDS, BOOKKEEPING_KINDS, bookkeeping_sql
from nerve.log.drafts import Draft
from nerve.mcp import tools
from nerve.mcp.budgets import Allowance
from nerve.privacy.screen import Screen
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.ui.test_ui import as_json, client

QUESTIONS = ["when did I last run make?", "what did make build do?", "did make fail?"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> api.Workspace:
    """Five ``make`` commands, then three questions about make asked and recorded."""
    mp = pytest.MonkeyPatch()
    root = init_workspace(tmp_path_factory.mktemp("askq") / "ws").root
    mp.setenv("XDG_STATE_HOME", str(root.parent / "state"))
    (root / "nerve.yaml").write_text("senses: {}\n")
    cmds = [f"make build {i}" for i in range(5)]
    logops.emit(
        WorkspaceDir(root), [Draft.of(source=5, line=c, payload={"command": c}) for c in cmds]
    )
    door = nerve.open(root)
    for question in QUESTIONS:
        door.ask(question)
    yield door
    mp.undo()


def _kinds(ws: api.Workspace, where: str = "TRUE") -> list[str]:
    return [str(r[0]) for r in ws.sql(f"SELECT kind FROM events WHERE {where}").fetchall()]


def _cli(ws: api.Workspace, *args: str) -> str:
    return run_cli("--workspace", str(ws.root), *args).stdout


def test_the_questions_are_in_the_log_and_are_bookkeeping(ws: api.Workspace) -> None:
    assert sorted(_kinds(ws, "kind LIKE 'ask.%'")) == ["ask.answer"] * 3 + ["ask.question"] * 3
    assert ASK_KINDS <= BOOKKEEPING_KINDS
    assert _kinds(ws, "NOT nerve_bookkeeping(kind)") == ["observation"] * 5
    assert _kinds(ws, f"NOT {bookkeeping_sql()}") == ["observation"] * 5


def test_tail_hides_them_unless_a_kind_or_all_kinds_asks(ws: api.Workspace) -> None:
    assert "ask:" not in _cli(ws, "tail", "-n", "50")
    asked = _cli(ws, "tail", "-n", "50", "--kind", "ask.question").splitlines()
    assert len(asked) == 3 and all("ask: " in line for line in asked)
    assert _cli(ws, "tail", "-n", "50", "--all-kinds").count("ask: ") == 3


def test_mcp_recent_and_search_leave_them_out(ws: api.Workspace) -> None:
    call = tools.Call(ws, Screen(ws.settings.config.privacy), Allowance(500, 1 << 20), 5_000)
    assert {e.kind for e in tools.recent(call, limit=50).events} == {"observation"}
    everything = tools.recent(call, limit=50, include_bookkeeping=True).events
    assert sum(e.kind == "ask.question" for e in everything) == 3
    hits = tools.search(call, "make", limit=50).hits
    assert len(hits) == 5 and {h.kind for h in hits} == {"observation"}


def test_the_ui_search_timeline_and_charts_leave_them_out(ws: api.Workspace) -> None:
    c = client(ws._dir)
    found = as_json(c, "/events?text=make&since=1h")["events"]
    assert len(found) == 5 and {e["kind"] for e in found} == {"observation"}
    every = as_json(c, "/events?text=make&since=1h&all=1")["events"]
    assert sum(e["kind"] == "ask.question" for e in every) == 3
    asked = as_json(c, "/events?kind=ask.question&since=1h")["events"]
    assert len(asked) == 3
    day = as_json(c, "/timeline/counts?since=1h")  # the event-count lanes
    assert {lane["source"] for lane in day["lanes"]} == {"shell"}
    assert {e["kind"] for e in day["events"]} == {"observation"}


def test_forget_match_counts_only_the_persons_events(ws: api.Workspace) -> None:
    def erased(*args: str) -> int:
        out = _cli(ws, "forget", "--match", "make", *args, "--dry-run", "--json")
        return int(json.loads(out)["erased"])

    assert erased() == 5
    # the questions name make, and so does every answer that says make's runs
    answers = _kinds(ws, "kind = 'ask.answer' AND contains(lower(line), 'make')")
    assert answers and erased("--all-kinds") == 5 + 3 + len(answers)
    assert erased("--kind", "ask.question") == 3
    result = ws.privacy.forget(match="make", dry_run=True)
    assert result.to_json()["erased"] == 5


def test_ask_neither_answers_from_nor_cites_its_own_records(ws: api.Workspace) -> None:
    result = ws.ask("what did make build do?", record=False)
    kinds = {s.kind for s in result.envelope.spans}
    assert kinds and not kinds & BOOKKEEPING_KINDS
    assert "ask:" not in result.text


def test_the_macro_is_in_an_exported_database(ws: api.Workspace, tmp_path: Path) -> None:
    import duckdb

    out = tmp_path / "nerve.duckdb"
    ws.log.export(out)
    conn = duckdb.connect(str(out), read_only=True)
    try:
        rows = conn.execute("SELECT count(*) FROM events WHERE NOT nerve_bookkeeping(kind)")
        assert rows.fetchone() == (5,)
    finally:
        conn.close()
