"""`nerve mcp` over stdio through a raw client: every line gets an answer as JSON-RPC 2.0
requires, refusals say what is wrong in words, and access records never quote arguments."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.mcp.access import Access, scrub
from nerve.mcp.recorder import in_words
from nerve.workspace import init_workspace
from tests.conftest import run_cli

SECRET = "hunter2-Zq8"


class Raw:
    """A `nerve mcp` process spoken to line by line."""

    def __init__(self, root: Path, tmp: Path) -> None:
        env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "NO_COLOR": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nerve", "--workspace", str(root), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._buf = b""

    def send(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        data = line.encode() if isinstance(line, str) else line
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                raise AssertionError("no reply within the deadline")
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the server closed its output"
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return dict(json.loads(line))

    def ask(self, line: str | bytes) -> dict[str, Any]:
        self.send(line)
        return self.receive()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Raw]:
    tmp = tmp_path_factory.mktemp("mcp-stdio")
    root = init_workspace(tmp / "ws").root
    client = Raw(root, tmp)
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-client", "version": "9"},
        },
    }
    assert "result" in client.ask(json.dumps(hello))
    client.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    client.root = root  # type: ignore[attr-defined]
    yield client
    client.close()


def _call(request_id: int, tool: str, arguments: Any) -> str:
    params = {"name": tool, "arguments": arguments}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message)


NOT_MESSAGES: list[tuple[str | bytes, int, Any, str]] = [
    ("this is not json", -32700, None, "Parse error"),
    ('{"jsonrpc": "2.0", "id": 1, "method": ', -32700, None, "Parse error"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}', -32700, None, "not UTF-8"),
    ("[" * 100_000 + "]" * 100_000, -32700, None, "nested too deeply"),
    ('[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]', -32600, None, "batch"),
    ("[]", -32600, None, "batch"),
    ("42", -32600, None, "not an object"),
    ('{"id": 3, "method": "ping"}', -32600, 3, '"jsonrpc"'),
    ('{"jsonrpc": "1.0", "id": 4, "method": "ping"}', -32600, 4, '"jsonrpc"'),
    ('{"jsonrpc": "2.0", "id": 5}', -32600, 5, '"method"'),
    ('{"jsonrpc": "2.0", "id": 6, "method": 7}', -32600, 6, "not a string"),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600, None, "string or an integer"),
    (
        '{"jsonrpc":"2.0","id":8,"method":"tools/call",'
        '"params":{"name":"search","arguments":{"text":"\\ud800 build"}}}',
        -32602,
        8,
        "lone surrogate",
    ),
]


@pytest.mark.parametrize(("line", "code", "request_id", "words"), NOT_MESSAGES)
def test_every_line_that_is_no_message_gets_a_json_rpc_error(
    raw: Raw, line: str | bytes, code: int, request_id: Any, words: str
) -> None:
    reply = raw.ask(line)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id
    assert reply["error"]["code"] == code and words in reply["error"]["message"]
    assert raw.ask('{"jsonrpc": "2.0", "id": "after", "method": "ping"}') == {
        "jsonrpc": "2.0",
        "id": "after",
        "result": {},
    }


def test_argument_errors_are_words_and_records_never_quote_arguments(raw: Raw) -> None:
    calls = [
        ("recent", {"limit": SECRET}),
        ("recent", {"since": SECRET}),
        ("search", {"text": "?? ¿¿"}),
        ("search", {"text": SECRET * 2000}),
        ("query", {"sql": f"SELECT nonsense_{SECRET.replace('-', '_')} FROM events"}),
        ("ask", {"question": 17}),
    ]
    for n, (tool, args) in enumerate(calls, start=100):
        reply = raw.ask(_call(n, tool, args))
        text = reply["result"]["content"][0]["text"]
        assert reply["result"]["isError"] and "\n" not in text, text
        assert "errors.pydantic.dev" not in text and "input_value" not in text, text
    surrogate = raw.ask(_call(200, "search", {"text": "\ud800"}))
    assert surrogate["error"]["code"] == -32602
    want = [t for t, _ in calls] + ["search"]
    deadline = time.monotonic() + 30
    while True:  # a reply may go out before its access record is stored
        records = run_cli("--workspace", str(raw.root), "audit", "access", "--json").stdout  # type: ignore[attr-defined]
        rows = [json.loads(line) for line in records.splitlines()]
        if [r["tool"] for r in rows][-7:] == want or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [r["tool"] for r in rows][-7:] == want
    assert all(r["outcome"] == "refused" and r["reason"] for r in rows[-7:])
    for row in rows:
        assert SECRET not in row["reason"] and SECRET[:6] not in row["reason"], row["reason"]
        assert "errors.pydantic.dev" not in row["reason"], row["reason"]


def test_scrub_takes_out_every_quote_of_an_argument() -> None:
    arguments = {"text": "correct horse battery staple", "n": ["zebra-77", "ok"]}
    reasons = [
        "UsageError: cannot read 'correct horse battery staple' as a time",
        "no word in 'correct horse batt…'",  # a cut quote
        "bad value [type=x, input_value='zebra-77', input_type=str]",
        "repr: 'correct horse battery staple'.upper() and zebra-77",
    ]
    for reason in reasons:
        shown = scrub(reason, arguments)
        assert "horse" not in shown and "zebra" not in shown and "batt" not in shown, shown
    assert scrub("limit must be at most 500", {"limit": 900}) == "limit must be at most 500"
    access = Access("c", "1", "stdio", "s", "recent", {"since": SECRET}, "refused", SECRET)
    assert SECRET not in json.dumps(access.payload()) and SECRET not in access.line()


def test_pydantic_reports_become_one_line_of_words() -> None:
    text = (
        "Error executing tool recent: 2 validation errors for recentArguments\n"
        "limit\n  Input should be a valid integer [type=int_parsing, input_value='x', "
        "input_type=str]\n    For further information visit https://errors.pydantic.dev/2/v/x\n"
        "kinds.0\n  Input should be a valid string [type=string_type, input_value=3, "
        "input_type=int]\n"
    )
    assert in_words(text) == (
        "invalid arguments for recent: limit: Input should be a valid integer; "
        "kinds.0: Input should be a valid string"
    )
