"""What privacy withholds never leaves through `nerve mcp`, whatever the SQL: the sandbox
holds only the rows the rules let leave, redacted at the source, and `ask` reads only those."""

from __future__ import annotations

import base64

import pytest

import nerve
from nerve import api, logops
from nerve.errors import NerveError
from nerve.log.drafts import Draft
from nerve.mcp import tools
from nerve.mcp.budgets import Allowance
from nerve.privacy.screen import Screen
from nerve.workspace import WorkspaceDir, init_workspace

GHP = "ghp_" + "Z9y8X7w6V5" * 3 + "U4t3S2"
EXCLUDED = "vault read secret/prod-db"


def _shell(command: str) -> Draft:
    return Draft.of(source=5, line=command, payload={"command": command})


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> api.Workspace:
    """Events stored before their rules: a token (detectors were off) and a command an
    exclusion added later withholds; some sealed, some in the unsealed tail."""
    root = init_workspace(tmp_path_factory.mktemp("mcp-privacy") / "ws").root
    (root / "nerve.yaml").write_text("privacy:\n  detectors: {enabled: false}\n")
    early = WorkspaceDir(root)
    logops.emit(early, [_shell(f"export GITHUB_TOKEN={GHP}"), _shell(EXCLUDED)])
    logops.seal(early)
    logops.emit(early, [_shell(f"echo {GHP}"), _shell(EXCLUDED + " --tail"), _shell("ls")])
    (root / "nerve.yaml").write_text("privacy:\n  shell: {exclude: ['vault *']}\n")
    return nerve.open(root)


def _call(ws: api.Workspace, timeout_ms: int = 5_000) -> tools.Call:
    return tools.Call(ws, Screen(ws.settings.config.privacy), Allowance(500, 1 << 20), timeout_ms)


def _forms(secret: str) -> list[str]:
    """The secret and what common SQL transforms make of it."""
    raw = secret.encode()
    return [
        secret,
        secret[::-1],
        secret[4:],
        secret.upper(),
        raw.hex(),
        raw.hex().upper(),
        base64.b64encode(raw).decode()[:24],
    ]


def _leaked(ws: api.Workspace, sql: str) -> str:
    """Everything a query shows an agent: its rows, or its error's message."""
    try:
        return str(tools.query(_call(ws), sql).model_dump())
    except NerveError as exc:
        return str(exc)


PAST_THE_VIEW = [
    "SELECT * FROM read_parquet(current_setting('allowed_paths'))",
    "SELECT line FROM read_parquet('data/log/segments/*.parquet')",
    "SELECT * FROM _tail",
    "SELECT line FROM query_table('_tail')",
    "SELECT current_setting('allowed_paths') AS p",
    "SELECT * FROM events",
    "SELECT line, payload, data FROM events",
]
TRANSFORMS = [
    "SELECT reverse(line) FROM events",
    "SELECT to_base64(line::BLOB) FROM events",
    "SELECT hex(line) FROM events",
    "SELECT replace(line, 'ghp_', 'x') FROM events",
    "SELECT upper(line) FROM events",
    "SELECT substr(line, 5) FROM events",
    "SELECT payload FROM events",
    "SELECT hex(payload) FROM events",
    "SELECT reverse(data->>'command') FROM events",
    "SELECT string_agg(reverse(line), '|') FROM events",
]


@pytest.mark.parametrize("sql", PAST_THE_VIEW + TRANSFORMS)
def test_no_sql_brings_back_what_the_rules_withhold_or_redact(ws: api.Workspace, sql: str) -> None:
    shown = _leaked(ws, sql)
    for form in _forms(GHP) + _forms(EXCLUDED):
        assert form not in shown, f"{form!r} left through {sql!r}"


def test_the_sandbox_still_reads_every_row_it_may(ws: api.Workspace) -> None:
    rows = tools.query(_call(ws), "SELECT line FROM events ORDER BY ts").rows
    assert [r[0] for r in rows] == [
        "export GITHUB_TOKEN=[redacted:github-token]",
        "echo [redacted:github-token]",
        "ls",
    ]


PERIODS = ["what did I run today?", "which commands did I run in the last hour?",
           "what commands did I run in the last 10 minutes?"]  # fmt: skip


@pytest.mark.parametrize("question", [*PERIODS, "vault read secret", "what did I read?"])
def test_ask_neither_quotes_nor_cites_a_withheld_event(ws: api.Workspace, question: str) -> None:
    out = tools.ask(_call(ws), question)
    text = str(out.model_dump())
    for form in _forms(EXCLUDED) + _forms(GHP):
        assert form not in text, f"{form!r} left through ask {question!r}"
    if question in PERIODS:  # the plan answered, over the period, from screened rows
        assert out.intent == "plan:command.list" and out.answered, out
        assert "ls" in out.answer and "echo [redacted:github-token]" in out.answer
        assert out.citations[0].line == "ls"


SLOW_OK = 120_000


def test_a_huge_result_is_cut_at_the_byte_budget_before_the_screen(
    ws: api.Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve.mcp.sandbox import open_sandbox, run_sql

    conn = open_sandbox(ws)
    # What is under test is the byte budget; a loaded machine may take long to build the
    # 80 MB value, and a timeout there would be a different answer.
    huge = "SELECT repeat('password=hunter2 ', 5000000) AS x"
    result = run_sql(conn, huge, limit=10, timeout_ms=SLOW_OK, max_bytes=10_000)
    assert result.rows == [] and result.truncated
    many = run_sql(
        conn,
        "SELECT repeat('y', 1000) FROM range(100)",
        limit=50,
        timeout_ms=SLOW_OK,
        max_bytes=10_000,
    )
    assert 5 <= len(many.rows) <= 10 and many.truncated
    seen: list[int] = []
    screen = Screen.value

    def spy(self: Screen, value: object) -> object:
        seen.append(len(str(value)))
        return screen(self, value)

    monkeypatch.setattr(Screen, "value", spy)
    out = tools.query(_call(ws), huge)
    assert out.rows == [] and out.more and "hunter2" not in str(out.model_dump())
    assert max(seen) <= 1 << 20  # the screen never had the 80 MB value to scan
