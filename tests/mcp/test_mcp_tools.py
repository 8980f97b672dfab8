"""The read tools of `nerve mcp` as library calls: the SQL sandbox refuses everything but one
SELECT over the log, privacy applies to what leaves, budgets bound it, nothing is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import nerve
from nerve import api, logops
from nerve.errors import AccessRefused, PrivacyError, UsageError
from nerve.log.drafts import Draft
from nerve.log.reader import replay_digest
from nerve.mcp import tools
from nerve.mcp.access import Access, Recorder, accesses
from nerve.mcp.budgets import Allowance, Budgets, fit
from nerve.mcp.sandbox import open_sandbox, run_sql
from nerve.mcp.settings import McpConfig
from nerve.privacy.screen import Screen
from nerve.workspace import WorkspaceDir, init_workspace

GHP = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
NO_DETECTORS = "privacy:\n  detectors: {enabled: false}\n"


def _shell(line: str, command: str | None = None) -> Draft:
    return Draft.of(source=5, line=line, payload={"command": command or line})


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> api.Workspace:
    """A log with sealed and unsealed events, and a token stored while detectors were off
    (as if the rule came later)."""
    root = init_workspace(tmp_path_factory.mktemp("mcp") / "ws").root
    (root / "nerve.yaml").write_text(NO_DETECTORS)
    early = WorkspaceDir(root)
    logops.emit(early, [_shell(f"make build {i}") for i in range(300)])
    logops.emit(early, [_shell(f"export GITHUB_TOKEN={GHP}")])
    logops.seal(early)
    logops.emit(early, [_shell("make build failed: exit 2"), _shell("rm -rf build/", "pass show")])
    (root / "nerve.yaml").write_text("senses: {}\n")
    return nerve.open(root)


def _call(
    ws: api.Workspace, rows: int = 500, size: int = 1 << 20, timeout_ms: int = 5_000
) -> tools.Call:
    return tools.Call(ws, Screen(ws.settings.config.privacy), Allowance(rows, size), timeout_ms)


HOSTILE = {
    "COPY (SELECT * FROM events) TO '{out}'": "COPY statements are refused",
    "SELECT * FROM read_csv('/etc/passwd')": "reaches outside this workspace's log",
    "SELECT * FROM read_text('{out}')": "reaches outside this workspace's log",
    "ATTACH '{out}' AS other": "ATTACH statements are refused",
    "INSTALL httpfs": "INSTALL statements are refused",
    "LOAD httpfs": "LOAD statements are refused",
    "PRAGMA database_list": "PRAGMA statements are refused",
    "SET enable_external_access = true": "SET statements are refused",
    "CREATE TABLE t AS SELECT 1": "CREATE statements are refused",
    "SELECT 1; SELECT 2": "holds 2 statements",
    "SELECT count(*) FROM events a, events b, events c, events d": "ran longer than 0.3 s",
}


@pytest.mark.parametrize("sql", sorted(HOSTILE))
def test_hostile_sql_is_refused_or_cut_off_with_a_clear_message(
    ws: api.Workspace, tmp_path: Path, sql: str
) -> None:
    before = replay_digest(ws.log_root)
    out = tmp_path / "out.csv"
    with pytest.raises(AccessRefused, match=HOSTILE[sql]):
        tools.query(_call(ws, timeout_ms=300), sql.format(out=out))
    assert not out.exists()
    assert replay_digest(ws.log_root) == before


def test_the_sandbox_is_locked_even_past_the_statement_check(
    ws: api.Workspace, tmp_path: Path
) -> None:
    conn = open_sandbox(ws)
    out = tmp_path / "x.csv"
    for sql in (f"COPY (SELECT 1) TO '{out}'", f"ATTACH '{tmp_path / 'x.db'}'", "LOAD httpfs"):
        with pytest.raises(duckdb.PermissionException):
            conn.execute(sql)
    with pytest.raises(duckdb.InvalidInputException, match="locked"):
        conn.execute("SET enable_external_access = true")
    with pytest.raises(duckdb.CatalogException):  # no Python object of this process is a table
        conn.execute("SELECT * FROM out").fetchall()
    assert not out.exists() and not (tmp_path / "x.db").exists()


def test_a_group_by_reads_sealed_and_unsealed_events_and_rows_are_capped(ws: api.Workspace) -> None:
    out = tools.query(_call(ws), "SELECT source_name, count(*) AS n FROM events GROUP BY ALL")
    assert out.columns == ["source_name", "n"] and out.rows == [["shell", 303]] and not out.more
    capped = tools.query(_call(ws, rows=5), "SELECT line, data FROM events ORDER BY ts")
    assert len(capped.rows) == 5 and capped.more
    assert capped.rows[0][1] == {"command": "make build 0"}  # JSON columns as JSON
    conn = open_sandbox(ws)
    assert run_sql(conn, "SELECT * FROM sense_state", limit=3, timeout_ms=5_000).rows == []


def test_bad_sql_is_a_usage_error_naming_the_problem(ws: api.Workspace) -> None:
    with pytest.raises(UsageError, match="syntax error"):
        tools.query(_call(ws), "SELEC 1")
    with pytest.raises(AccessRefused, match="0 statements"):
        tools.query(_call(ws), "-- nothing")


def test_a_secret_stored_before_its_rule_does_not_leave(ws: api.Workspace) -> None:
    assert GHP in str(
        run_sql(open_sandbox(ws), "SELECT line FROM events", limit=999, timeout_ms=5000).rows
    )
    seen = [
        tools.query(_call(ws), "SELECT line, data FROM events WHERE line LIKE 'export%'").rows,
        [e.model_dump() for e in tools.recent(_call(ws), limit=5).events],
        [h.model_dump() for h in tools.search(_call(ws), "GITHUB_TOKEN export").hits],
    ]
    text = str(seen)
    assert GHP not in text and "[redacted:github-token]" in text


def test_a_drop_rule_added_later_withholds_stored_events_everywhere(tmp_path: Path) -> None:
    root = init_workspace(tmp_path / "ws").root
    logops.emit(WorkspaceDir(root), [_shell("vault read secret/db"), _shell("ls")])
    (root / "nerve.yaml").write_text(
        "privacy:\n  shell: {exclude: ['vault *']}\n"
        "  rules: [{name: no-ls, regex: '^ls$', action: drop, source: shell}]\n"
    )
    ws = nerve.open(root)
    recent = tools.recent(_call(ws)).events
    assert [e.line for e in recent] == ["[withheld:no-ls]", "[withheld:shell.exclude]"]
    assert all(e.data is None for e in recent)
    assert [e.subject for e in recent] == [e.line for e in recent]  # not what they named
    rows = tools.query(_call(ws), "SELECT line FROM events").rows
    assert rows == []  # the sandbox's events view holds only what may leave
    assert tools.query(_call(ws), "SELECT 'ls' AS x").rows == [["[withheld:no-ls]"]]


def test_an_erased_event_is_shown_as_erased(ws: api.Workspace) -> None:
    row = {
        "physical_ns": 1, "logical": 0, "id": b"\x01" * 32, "source": 5, "kind": "observation",
        "subject": "", "trust": 3, "line": "", "payload": b"", "erased": True,
    }  # fmt: skip
    shown = tools._event(Screen(ws.settings.config.privacy), row, "t")
    assert (shown.line, shown.data, shown.erased) == ("[erased]", None, True)


def test_recent_search_and_highlights_take_windows_and_hide_bookkeeping(ws: api.Workspace) -> None:
    newest = tools.recent(_call(ws), limit=2)
    assert [e.line for e in newest.events] == ["rm -rf build/", "make build failed: exit 2"]
    assert newest.more and newest.events[0].source == "shell" and "T" in newest.events[0].time
    assert tools.recent(_call(ws), since="2000-01-01T00:00", until="2000-01-02T00:00").events == []
    with pytest.raises(UsageError, match="since"):
        tools.recent(_call(ws), since="yesterday-ish")
    hits = tools.search(_call(ws), "build failed", limit=3)
    assert hits.hits[0].line == "make build failed: exit 2" and hits.terms == ["build", "failed"]
    assert tools.search(_call(ws), "build", sources=["nerve"]).hits == []
    with pytest.raises(UsageError, match="no word"):
        tools.search(_call(ws), "the ?")
    assert tools.highlights(_call(ws)).decisions == []


def test_budgets_bound_each_call_and_each_session() -> None:
    cfg = McpConfig.model_validate(
        {"max_rows": {"call": 10, "session": 25}, "max_bytes": {"call": 10_000, "session": 10**6}}
    )
    budgets = Budgets(cfg)
    assert budgets.allowance("s") == Allowance(10, 10_000)
    budgets.charge("s", 10, 100)
    budgets.charge("s", 10, 100)
    assert budgets.allowance("s") == Allowance(5, 10_000)  # what the session has left
    assert budgets.allowance("other") == Allowance(10, 10_000)
    budgets.charge("s", 5, 100)
    with pytest.raises(AccessRefused, match="25 rows"):
        budgets.allowance("s")
    items: list[Any] = [{"line": "x" * 90}] * 50
    kept, cut = fit(items, Allowance(100, 256 + 10 * 100))
    assert len(kept) == 9 and cut
    assert fit(items, Allowance(3, 10**6)) == (items[:3], True)


def test_ask_cites_events_with_time_and_source(ws: api.Workspace) -> None:
    out = tools.ask(_call(ws), "which commands did I run recently?")
    assert out.answered and out.tier == 0 and out.citations
    assert {c.source for c in out.citations} == {"shell"} and GHP not in out.answer


def test_an_access_record_a_drop_rule_would_swallow_fails_the_call(tmp_path: Path) -> None:
    root = init_workspace(tmp_path / "ws").root
    (root / "nerve.yaml").write_text(
        "privacy:\n  rules: [{name: quiet, action: drop, kind: agent.access, sense: spy}]\n"
    )
    recorder = Recorder(nerve.open(root))
    recorder.record(Access("claude-code", "1", "stdio", "s", "recent", {"limit": 3}))
    with pytest.raises(PrivacyError, match="cannot be recorded"):
        recorder.record(Access("spy", "1", "stdio", "s", "recent", {}))
    lines = [a["client"] for a in accesses(nerve.open(root))]
    assert lines == ["claude-code"]


def test_a_withheld_or_redacted_events_subject_does_not_leave_either(tmp_path: Path) -> None:
    """The subject names what the event is about: a rule added later that withholds the row
    or redacts a value must hide it in the subject too."""
    root = init_workspace(tmp_path / "ws").root
    vault = Draft.of(source=5, line="vault read", subject="secret/db-prod", payload={"a": 1})
    code = Draft.of(source=5, line="open", subject="ticket 7391-sesame", payload={"a": 2})
    logops.emit(WorkspaceDir(root), [vault, code])
    (root / "nerve.yaml").write_text(
        "privacy:\n  rules:\n"
        "    - {name: no-vault, regex: 'vault', action: drop, source: shell}\n"
        "    - {name: sesame, regex: 'sesame', action: redact}\n"
    )
    recent = tools.recent(_call(nerve.open(root))).events
    assert [e.subject for e in recent] == ["ticket 7391-[redacted:sesame]", "[withheld:no-vault]"]
    assert "secret/db-prod" not in str([e.model_dump() for e in recent])


def test_a_decisions_cause_leaves_screened_and_not_at_all_when_its_observation_is_withheld() -> (
    None
):
    """The cause of a decision copies facts from its observation's payload (a command, a
    process): a rule added after capture hides them as it hides the observation's line."""
    from nerve.attention.reason import reason_of
    from nerve.privacy.settings import PrivacyConfig

    config = PrivacyConfig.model_validate(
        {"rules": [{"name": "key", "regex": "sesame", "action": "redact"}]}
    )
    screen = Screen(config)
    stored = {
        "probe": "novelty", "outcome": "surface", "source_event": "ab" * 32,
        "source_line": "curl https://x/?k=sesame failed",
        "cause": {"sense": "shell", "command": "curl https://x/?k=sesame", "exit": 7},
    }  # fmt: skip
    withheld = {"ab" * 32: ("cd" * 32, "[withheld:secret]")}
    shown = tools.screened_decision(screen, withheld, stored)
    assert shown["cause"] == {} and "sesame" not in reason_of(shown).cause
    assert shown["source_event"] == "cd" * 32
    redacted = {"ab" * 32: ("ab" * 32, stored["source_line"])}  # the line as stored
    shown = tools.screened_decision(screen, redacted, stored)
    assert "sesame" not in str(shown["cause"]) and shown["cause"]["exit"] == 7
