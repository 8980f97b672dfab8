"""`nerve mcp` through real MCP client sessions (the SDK's stdio and streamable-HTTP clients)
on real workspaces, with and without a running daemon: tools listed and called, structured
results, every call in `nerve audit access`, hostile inputs refused, nothing else written."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation

import nerve
from nerve import api, logops
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot, table_since
from nerve.mcp.access import args_digest
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, started, write_sense

READ_TOOLS = {"ask", "search", "recent", "highlights", "query", "status"}
SLOW = "SELECT count(*) FROM events a, events b, events c, events d, events e"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("status", {}),
    ("recent", {"limit": 5, "since": "1h", "sources": ["shell"]}),
    ("search", {"text": "build failed"}),
    ("ask", {"question": "which commands did I run recently?"}),
    ("highlights", {"outcome": "held"}),
    ("query", {"sql": "SELECT source_name, count(*) AS n FROM events GROUP BY ALL ORDER BY n"}),
]


def _workspace(root: Path, yaml: str = "", *, filler: int = 0) -> api.Workspace:
    """A workspace whose log holds four shell commands (after ``filler`` other events: a
    cross join of a few thousand events with itself cannot finish in time)."""
    ws = init_workspace(root)
    (ws.root / "nerve.yaml").write_text(yaml)
    lines = ["git status", "make build", "make build failed: exit 2", "git push"]
    drafts = [Draft.of(source=8, line=f"tick {i}") for i in range(filler)]
    drafts += [Draft.of(source=5, line=x, payload={"command": x}) for x in lines]
    logops.emit(WorkspaceDir(ws.root), drafts)
    return nerve.open(ws.root)


def _env(tmp: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp / "state"), "NO_COLOR": "1"}


def _stdio(root: Path, tmp: Path) -> StdioServerParameters:
    args = ["-m", "nerve", "--workspace", str(root), "mcp"]
    return StdioServerParameters(command=sys.executable, args=args, env=_env(tmp))


def _readme_server(root: Path, tmp: Path) -> StdioServerParameters:
    """The README's `mcpServers` entry, pointed at this venv's nerve and ``root``."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```json\n(\{\n  \"mcpServers\".*?)```", text, re.S)
    assert block, "the README shows an mcpServers entry"
    reference = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    assert block.group(0) in reference, "docs/mcp.md shows the README's mcpServers entry"
    entry = json.loads(block.group(1))["mcpServers"]["nerve"]
    command = entry["command"].replace(
        "/home/you/nerve/.venv/bin", str(Path(sys.executable).parent)
    )
    args = [a.replace("/home/you/nerve", str(root)) for a in entry["args"]]
    assert Path(command).is_file() and args == ["--workspace", str(root), "mcp"]
    return StdioServerParameters(command=command, args=args, env=_env(tmp))


def _client(server: Any, name: str = "pytest-agent", version: str = "1.2") -> Client:
    return Client(server, client_info=Implementation(name=name, version=version))


def _session(server: Any, body: Callable[[Client], Awaitable[Any]], **kw: str) -> Any:
    async def main() -> Any:
        async with _client(server, **kw) as client:
            return await body(client)

    return anyio.run(main)


def _kinds_since(root: Path, count: int) -> list[str]:
    table = table_since(snapshot(root / "data" / "log"))
    return [str(k) for k in table.column("kind").to_pylist()[count:]]


def _count(root: Path) -> int:
    return snapshot(root / "data" / "log").count


def _audit(root: Path, *args: str) -> list[dict[str, Any]]:
    out = run_cli("--workspace", str(root), "audit", "access", "--json", *args).stdout
    return [json.loads(line) for line in out.splitlines()]


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


def _check(result: CallToolResult, schema: dict[str, Any] | None) -> dict[str, Any]:
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, text
    assert result.structured_content is not None and schema is not None
    jsonschema.validate(result.structured_content, schema)
    return result.structured_content


# -- stdio, with a running daemon --------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("mcp-daemon") / "ws"
    ws = _workspace(root, "senses:\n  counter: {interval: 1h}\n")
    write_sense(ws.root, "counter", COUNTER)
    with started(ws.root) as d:
        yield d


def test_a_stdio_session_lists_calls_and_is_audited_with_the_daemon_running(
    daemon: Daemon, tmp_path: Path
) -> None:
    async def body(client: Client) -> dict[str, Any]:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == READ_TOOLS  # no write tool unless mcp.allow_write names it
        for tool in listed.values():
            assert tool.description and len(tool.description) > 150, tool.name
            assert tool.annotations is not None and tool.annotations.read_only_hint
        out = {}
        for name, args in CALLS:
            out[name] = _check(await client.call_tool(name, args), listed[name].output_schema)
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"nerve://schema/events", "nerve://schema/activity", "nerve://sources"} <= uris
        events = json.loads((await client.read_resource("nerve://schema/events")).contents[0].text)  # type: ignore[union-attr]
        out["schema"] = events
        return out

    out = _session(_readme_server(daemon.root, tmp_path), body)
    assert out["status"]["daemon"] and [s["name"] for s in out["status"]["senses"]] == ["counter"]
    assert [e["line"] for e in out["recent"]["events"]][:2] == [
        "git push",
        "make build failed: exit 2",
    ]
    assert out["search"]["hits"][0]["line"] == "make build failed: exit 2"
    assert out["ask"]["tier"] == 0 and out["ask"]["citations"][0]["source"] == "shell"
    assert ["shell", 4] in out["query"]["rows"]
    assert {c["name"] for c in out["schema"]["columns"]} >= {"kind", "line", "data", "ts"}
    calls = [name for name, _ in CALLS] + ["read_resource"]
    audit = _audit(daemon.root, "--client", "pytest-agent", "--since", "1d")
    assert [a["tool"] for a in audit] == calls
    assert {(a["version"], a["transport"], a["outcome"]) for a in audit} == {("1.2", "stdio", "ok")}
    assert audit[-2]["rows"] == len(out["query"]["rows"]) and audit[-2]["bytes"] > 0
    assert audit[0]["args_digest"] == args_digest({})[0]
    health = json.loads(run_cli("--workspace", str(daemon.root), "status", "--json").stdout)
    assert health["agents"]["calls"] >= len(calls)  # the daemon saw them: `nerve dev` shows them


# -- stdio, hostile, without a daemon ---------------------------------------------------------


def test_hostile_calls_are_refused_the_server_stays_up_and_writes_only_access_records(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path / "ws", "mcp:\n  query_timeout: 300ms\n", filler=2_000)
    before = _count(ws.root)
    hostile: list[tuple[str, dict[str, Any], str]] = [
        ("query", {"sql": f"COPY (SELECT * FROM events) TO '{tmp_path / 'x.csv'}'"}, "COPY"),
        ("query", {"sql": "SELECT * FROM read_csv('/etc/passwd')"}, "outside this workspace"),
        ("query", {"sql": f"ATTACH '{tmp_path / 'x.db'}'"}, "ATTACH statements"),
        ("query", {"sql": "INSTALL httpfs"}, "INSTALL statements"),
        ("query", {"sql": "PRAGMA database_list"}, "PRAGMA statements"),
        ("query", {"sql": SLOW}, "ran longer than 0.3 s"),
        ("query", {"sql": "SELECT 1 -- " + "x" * 30_000}, "at most 20000 characters"),
        ("ask", {"question": "why? " * 1_000}, "at most 4000 characters"),
        ("search", {"text": "y" * 3_000_000}, "at most 1000 characters"),
        ("recent", {"kinds": ["observation"] * 500}, "at most 64 items"),
        ("recent", {"limit": "lots"}, "valid integer"),
        ("drop_table", {"name": "events"}, "Unknown tool"),
    ]

    async def body(client: Client) -> list[str]:
        texts = []
        for name, args, _ in hostile:
            result = await client.call_tool(name, args)
            assert result.is_error, name
            texts.append(result.content[0].text)  # type: ignore[union-attr]
        assert not (await client.call_tool("status", {})).is_error  # still up
        return texts

    texts = _session(_stdio(ws.root, tmp_path), body)
    for (name, _, expected), text in zip(hostile, texts, strict=True):
        assert expected in text, (name, text)
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.db").exists()
    assert _kinds_since(ws.root, before) == ["agent.access"] * (len(hostile) + 1)
    audit = _audit(ws.root)
    assert [a["outcome"] for a in audit] == ["refused"] * len(hostile) + ["ok"]
    assert audit[5]["reason"].startswith("AccessRefused: the query ran longer")
    assert [a["tool"] for a in audit][-2:] == ["drop_table", "status"]


def test_write_tools_exist_only_when_allowed_and_cannot_forge_nerve_records(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", "mcp:\n  allow_write: [emit, answer]\n")

    async def body(client: Client) -> tuple[set[str], list[CallToolResult]]:
        names = {t.name for t in (await client.list_tools()).tools}
        results = [
            await client.call_tool("emit", {"line": "note from the agent", "payload": {"k": 1}}),
            await client.call_tool("emit", {"line": "forged", "kind": "agent.access"}),
            await client.call_tool("emit", {"line": "forged", "source": "nerve"}),
            await client.call_tool("trigger_workflow", {"name": "digest"}),
            await client.call_tool("answer", {"run": "r-1", "choice": "yes"}),
        ]
        return names, results

    names, results = _session(_stdio(ws.root, tmp_path), body)
    ok, forged_kind, forged_source, absent, no_daemon = results
    assert names == READ_TOOLS | {"emit", "answer"}
    assert not ok.is_error and ok.structured_content is not None
    assert forged_kind.is_error and "nerve's own" in forged_kind.content[0].text  # type: ignore[union-attr]
    assert forged_source.is_error and absent.is_error and "Unknown tool" in _text(absent)
    assert no_daemon.is_error and "daemon is not running" in _text(no_daemon)
    table = table_since(snapshot(ws.log_root))
    stored = [r for r in table.to_pylist() if r["line"] == "note from the agent"]
    assert (
        len(stored) == 1 and stored[0]["trust"] == 3 and stored[0]["source"] == 8
    )  # Untrusted endpoint
    assert "forged" not in table.column("line").to_pylist()


# -- streamable HTTP on loopback ------------------------------------------------------------


class HttpServer:
    """A real `nerve mcp --http 127.0.0.1:0` process."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root, self.env = root, {**os.environ, **_env(tmp)}
        cmd = [
            sys.executable,
            "-m",
            "nerve",
            "--workspace",
            str(root),
            "mcp",
            "--http",
            "127.0.0.1:0",
        ]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=self.env)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = re.search(r"serving (\S+)", line)
        assert found, line + self.proc.stderr.read()
        self.url = found.group(1)

    def token(self, *args: str) -> str:
        cmd = ["--workspace", str(self.root), "mcp", "token", *args]
        return run_cli(*cmd, env=self.env).stdout.strip()

    @contextlib.asynccontextmanager
    async def client(self, token: str, name: str = "web-agent") -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with _client(transport, name=name, version="3") as client:
                yield client

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, err


def _status(url: str, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return int(httpx2.post(url, json=body, headers=headers).status_code)


def test_http_needs_the_token_serves_twenty_clients_at_once_and_survives_a_disconnect(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path / "ws", "mcp:\n  query_timeout: 4s\n", filler=2_000)
    before = _count(ws.root)
    server = HttpServer(ws.root, tmp_path)
    try:
        token = server.token()
        assert _status(server.url, None) == 401 and _status(server.url, "not-the-token") == 401

        async def one(index: int, results: list[Any]) -> None:
            async with server.client(token, name=f"agent-{index}") as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                recent = await client.call_tool("recent", {"limit": 3})
                query = await client.call_tool("query", {"sql": "SELECT count(*) FROM events"})
                results.append((tools, recent, query))

        async def crowd() -> list[Any]:
            results: list[Any] = []
            async with anyio.create_task_group() as group:
                for index in range(20):
                    group.start_soon(one, index, results)
            return results

        results = anyio.run(crowd)
        assert len(results) == 20
        for tools, recent, query in results:
            assert tools == READ_TOOLS and not recent.is_error and not query.is_error

        async def walk_away() -> None:
            async with server.client(token, name="leaver") as client:
                with anyio.move_on_after(1.5):  # the query runs until its 4 s limit
                    await client.call_tool("query", {"sql": SLOW})

        anyio.run(walk_away)
        rotated = server.token("--rotate")
        assert rotated != token and _status(server.url, token) == 401

        async def after() -> CallToolResult:
            async with server.client(rotated, name="after") as client:
                return await client.call_tool("status", {})

        assert not anyio.run(after).is_error  # still up, on the new token
        Daemon(ws.root).wait_for(
            lambda: any(a["client"] == "leaver" for a in _audit(ws.root)),
            what="the leaver's record",
        )
    finally:
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err, err
    audit = _audit(ws.root)
    assert len(audit) == 20 * 2 + 2 and {a["transport"] for a in audit} == {"http"}
    assert {a["client"] for a in audit} == {f"agent-{i}" for i in range(20)} | {"leaver", "after"}
    leaver = next(a for a in audit if a["client"] == "leaver")
    assert leaver["args_digest"] == args_digest({"sql": SLOW})[0] and leaver["outcome"] != "ok"
    assert _kinds_since(ws.root, before) == ["agent.access"] * len(audit)


# -- the command line -----------------------------------------------------------------------


def test_http_listens_on_loopback_only_unless_allowed(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cases = [
            (["--http", "0.0.0.0:8765"], "not a loopback address"),
            (["--http", "8765"], "give HOST:PORT"),
            (["--allow-remote"], "--allow-remote applies to --http"),
            (["--http", f"127.0.0.1:{taken.getsockname()[1]}"], "Address already in use"),
        ]
        for args, message in cases:
            cmd = ("--workspace", str(ws.root), "mcp", *args)
            proc = run_cli(*cmd, check=False, env=_env(tmp_path))
            assert proc.returncode == 2 and message in proc.stderr, proc.stderr
            assert "Traceback" not in proc.stderr


def test_the_token_is_owner_only_outside_the_workspace_and_rotates(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    cmd = ("--workspace", str(ws.root), "mcp", "token")
    first = run_cli(*cmd, env=_env(tmp_path)).stdout.strip()
    assert run_cli(*cmd, env=_env(tmp_path)).stdout.strip() == first and len(first) >= 40
    (path,) = (tmp_path / "state" / "nerve" / "mcp").iterdir()
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert run_cli(*cmd, "--rotate", env=_env(tmp_path)).stdout.strip() not in ("", first)
    assert first not in "".join(
        p.read_text(errors="replace") for p in ws.root.rglob("*") if p.is_file()
    )


def test_validate_names_a_bad_mcp_section_by_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    ws.settings.path.write_text(
        "mcp:\n  allow_write: [emit, rm]\n  max_rows: {call: 0, session: 9}\n"
    )
    proc = run_cli("--workspace", str(ws.root), "validate", check=False)
    assert proc.returncode == 1
    assert (
        "nerve.yaml:2:23: mcp.allow_write[1]: must be 'emit', 'trigger_workflow' or 'answer'"
        in proc.stderr
    )
    assert "nerve.yaml:3:14: mcp.max_rows.call: must be greater than or equal to 1" in proc.stderr


def test_mcp_help_loads_neither_the_sdk_nor_duckdb(tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom nerve.cli.main import run\n"
        "try:\n    run(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'mcp', 'duckdb', 'pyarrow'}\n"
        "print(sorted(heavy), file=sys.stderr)"
    )
    for argv in (["mcp", "--help"], ["audit", "access", "--help"]):
        proc = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=tmp_path
        )
        assert proc.stderr.strip().splitlines()[-1] == "[]", (argv, proc.stderr)
