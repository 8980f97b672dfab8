"""nerve.flow.utils against real processes and a real HTTP server on loopback."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest
from pydantic import BaseModel

from nerve.errors import WorkflowError
from nerve.flow.utils import (
    ArgvError,
    CommandFailed,
    ExtractError,
    extract,
    run_argv,
)

PY = sys.executable

# ---------------------------------------------------------------------------------------------
# run_argv


def test_argv_is_passed_literally_and_success_is_ok() -> None:
    hostile = "$(echo BAD); rm -rf / `id`"
    result = run_argv([PY, "-c", "import sys; print(sys.argv[1])", hostile], timeout_s=10)
    assert result.ok
    assert result.exit_code == 0
    assert result.stdout == hostile + "\n"
    assert not result.timed_out and not result.truncated
    assert result.check() is result
    assert result.argv[0] == PY


def test_input_is_fed_to_stdin() -> None:
    result = run_argv(["cat"], timeout_s=10, input=b"hello\nworld")
    assert result.ok and result.stdout == "hello\nworld"


def test_non_zero_exit_is_returned_and_check_raises() -> None:
    result = run_argv(["sh", "-c", "echo partial; echo 'disk on fire' >&2; exit 7"], timeout_s=10)
    assert not result.ok
    assert (result.exit_code, result.stdout, result.stderr) == (7, "partial\n", "disk on fire\n")
    with pytest.raises(CommandFailed) as caught:
        result.check()
    err = caught.value
    assert isinstance(err, WorkflowError)
    assert (err.kind, err.result, err.argv) == ("exit", result, ("sh", "-c", result.argv[2]))
    assert "'sh'" in str(err) and "code 7" in str(err) and "disk on fire" in str(err)


def _gone(pid: int) -> bool:
    try:
        status: str = psutil.Process(pid).status()
        return bool(status == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def _wait_gone(*pids: int) -> bool:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if all(_gone(pid) for pid in pids):
            return True
        time.sleep(0.02)
    return False


def test_timeout_kills_the_whole_process_group() -> None:
    script = 'sleep 30 & echo "$$ $!"; wait'
    result = run_argv(["sh", "-c", script], timeout_s=0.5)
    child, grandchild = (int(pid) for pid in result.stdout.split())
    assert result.timed_out and not result.ok
    assert result.exit_code is None
    assert 400 <= result.duration_ms < 3000
    assert _wait_gone(child, grandchild)
    with pytest.raises(CommandFailed) as caught:
        result.check()
    assert caught.value.kind == "timeout"
    assert "'sh' timed out after" in str(caught.value)


def test_grandchild_holding_the_pipes_past_the_deadline_is_a_timeout() -> None:
    result = run_argv(["sh", "-c", 'sleep 30 & echo "$!"'], timeout_s=0.5)
    assert result.timed_out and result.exit_code == 0 and not result.ok
    assert _wait_gone(int(result.stdout))


def test_env_is_merged_over_the_parent_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NERVE_UTILS_PARENT", "parent")
    monkeypatch.setenv("NERVE_UTILS_SHARED", "parent")
    env = {"NERVE_UTILS_CHILD": "child", "NERVE_UTILS_SHARED": "child"}
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    seen = json.loads(run_argv([PY, "-c", code], timeout_s=10, env=env).check().stdout)
    assert seen["NERVE_UTILS_PARENT"] == "parent"
    assert seen["NERVE_UTILS_CHILD"] == "child"
    assert seen["NERVE_UTILS_SHARED"] == "child"


def test_env_without_inheritance_is_exactly_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NERVE_UTILS_PARENT", "parent")
    env_program = shutil.which("env")
    assert env_program is not None
    result = run_argv([env_program], timeout_s=10, env={"ONLY": "this"}, inherit_env=False)
    assert result.check().stdout == "ONLY=this\n"


def test_cwd_is_used(tmp_path: Path) -> None:
    assert run_argv(["pwd"], timeout_s=10, cwd=tmp_path).check().stdout == f"{tmp_path}\n"


@pytest.mark.parametrize("case", ["missing", "not_executable", "bad_cwd"])
def test_spawn_failure_raises_spawn_failed(tmp_path: Path, case: str) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    argv, cwd = {
        "missing": ([str(tmp_path / "no-such-program")], None),
        "not_executable": ([str(script)], None),
        "bad_cwd": (["true"], tmp_path / "no-such-dir"),
    }[case]
    with pytest.raises(CommandFailed) as caught:
        run_argv(argv, timeout_s=10, cwd=cwd)
    assert caught.value.kind == "spawn_failed"
    assert caught.value.result is None
    assert "could not start" in str(caught.value)


@pytest.mark.parametrize("argv", ["echo hi", b"echo hi", [], ["echo", 3], ["echo", "a\0b"]])
def test_bad_argv_is_refused(argv: object) -> None:
    with pytest.raises(ArgvError) as caught:
        run_argv(argv, timeout_s=10)  # type: ignore[arg-type]
    assert isinstance(caught.value, WorkflowError)
    assert isinstance(caught.value, TypeError)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(WorkflowError, match="timeout_s"):
        run_argv(["true"], timeout_s=0)
    with pytest.raises(WorkflowError, match="max_output_bytes"):
        run_argv(["true"], timeout_s=10, max_output_bytes=-1)


def test_output_is_capped_and_the_child_still_finishes() -> None:
    code = "import sys; sys.stdout.write('x' * 300_000); sys.stderr.write('tail')"
    result = run_argv([PY, "-c", code], timeout_s=10, max_output_bytes=1000)
    assert result.ok and result.truncated
    assert result.stdout == "x" * 1000
    assert result.stderr == "tail"


def test_output_is_decoded_with_replacement() -> None:
    code = "import sys; sys.stdout.buffer.write(b'caf\\xc3\\xa9 \\xff!')"
    result = run_argv([PY, "-c", code], timeout_s=10)
    assert result.stdout == "café \ufffd!"


# ---------------------------------------------------------------------------------------------
# extract, against a canned OpenAI-compatible server


class Sense(BaseModel):
    """Metadata for a new sense."""

    name: str
    interval_s: int


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeLLM:
    url: str = ""
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    received: list[Received] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def reply(self, status: int, body: bytes | str, **headers: str) -> None:
        self.status, self.headers = status, headers
        self.body = body.encode() if isinstance(body, str) else body


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {key.lower(): value for key, value in self.headers.items()}
            fake.received.append(Received(self.path, headers, json.loads(raw)))
            if fake.stop.wait(fake.delay_s):
                return
            self.send_response(fake.status)
            for key, value in {"Content-Length": str(len(fake.body)), **fake.headers}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(fake.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("no_proxy", "*")
    fake = FakeLLM()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1/"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield fake
    fake.stop.set()
    server.shutdown()
    server.server_close()
    thread.join()


def tool_reply(arguments: str, name: str = "extract") -> str:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return json.dumps({"choices": [{"index": 0, "message": message}]})


def content_reply(content: str) -> str:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})


def ask(fake: FakeLLM, **overrides: object) -> Sense:
    options: dict[str, object] = {
        "prompt": "watch cpu every 5 s",
        "endpoint": fake.url,
        "api_key": "sk-secret-key",
        "llm_model": "small-model",
        **overrides,
    }
    return extract(Sense, **options)  # type: ignore[arg-type]


def test_tool_call_becomes_a_model_instance(llm: FakeLLM) -> None:
    llm.reply(200, tool_reply('{"name": "cpu", "interval_s": 5}'))
    assert ask(llm, system="Be terse.") == Sense(name="cpu", interval_s=5)


def test_request_forces_the_extract_tool_with_the_schema_and_bearer(llm: FakeLLM) -> None:
    llm.reply(200, tool_reply('{"name": "cpu", "interval_s": 5}'))
    ask(llm, system="Be terse.", temperature=0.25)
    (request,) = llm.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-secret-key"
    assert request.headers["content-type"] == "application/json"
    body = request.body
    assert body["model"] == "small-model"
    assert body["temperature"] == 0.25
    # the tool is named after the schema's title, as seed 001 names it
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Sense"}}
    (tool,) = body["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "Sense"
    assert tool["function"]["parameters"] == Sense.model_json_schema()
    assert tool["function"]["description"] == "Metadata for a new sense."
    assert body["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "watch cpu every 5 s"},
    ]


def test_json_object_in_content_is_the_fallback(llm: FakeLLM) -> None:
    llm.reply(200, content_reply('```json\n{"name": "disk", "interval_s": 60}\n```'))
    assert ask(llm, api_key=None) == Sense(name="disk", interval_s=60)
    (request,) = llm.received
    assert "authorization" not in request.headers
    assert [m["role"] for m in request.body["messages"]] == ["user"]


def test_http_error_status_is_http_error(llm: FakeLLM) -> None:
    llm.reply(500, "upstream exploded " + "!" * 1000)
    with pytest.raises(ExtractError) as caught:
        ask(llm)
    err = caught.value
    assert (err.kind, err.status) == ("http_error", 500)
    assert err.body.startswith("upstream exploded") and len(err.body) == 500
    assert "500" in str(err)
    assert "sk-secret-key" not in f"{err} {err!r} {err.body} {err.__cause__}"


def test_redirect_is_not_followed(llm: FakeLLM) -> None:
    llm.reply(307, "", Location=llm.url + "elsewhere")
    with pytest.raises(ExtractError) as caught:
        ask(llm)
    assert (caught.value.kind, caught.value.status) == ("http_error", 307)
    assert len(llm.received) == 1


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        pytest.param("<html>bad gateway</html>", "invalid_response_json", id="body-not-json"),
        pytest.param("[1, 2]", "invalid_response_json", id="body-not-object"),
        pytest.param(
            tool_reply('{"name": "cpu", '), "tool_arguments_invalid_json", id="arguments-not-json"
        ),
        pytest.param(
            tool_reply('["cpu", 5]'), "tool_arguments_invalid_json", id="arguments-not-object"
        ),
        pytest.param(json.dumps({"choices": []}), "no_tool_call", id="no-choices"),
        pytest.param(content_reply("Sure! The name is cpu."), "no_tool_call", id="content-prose"),
        pytest.param(
            json.dumps({"choices": [{"message": {"role": "assistant"}}]}),
            "no_tool_call",
            id="empty",
        ),
    ],
)
def test_unusable_replies_have_the_seeds_error_kinds(llm: FakeLLM, body: str, kind: str) -> None:
    llm.reply(200, body)
    with pytest.raises(ExtractError) as caught:
        ask(llm)
    assert caught.value.kind == kind
    assert caught.value.body == body[:500]


def test_schema_mismatch_carries_the_pydantic_errors(llm: FakeLLM) -> None:
    llm.reply(200, tool_reply('{"name": "cpu", "interval_s": "often"}'))
    with pytest.raises(ExtractError) as caught:
        ask(llm)
    err = caught.value
    assert err.kind == "schema_validation_failed"
    assert [e["loc"] for e in err.errors] == [("interval_s",)]
    assert "interval_s" in str(err) and "Sense" in str(err)
    assert '"often"' in err.body


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_connection_refused_is_network() -> None:
    with pytest.raises(ExtractError) as caught:
        extract(
            Sense,
            prompt="x",
            endpoint=f"http://127.0.0.1:{_closed_port()}/v1",
            api_key="sk-secret-key",
            llm_model="m",
            timeout_s=5,
        )
    assert caught.value.kind == "network_error"
    assert "sk-secret-key" not in str(caught.value)


def test_server_slower_than_the_timeout_is_network(llm: FakeLLM) -> None:
    llm.reply(200, tool_reply('{"name": "cpu", "interval_s": 5}'))
    llm.delay_s = 30
    started = time.monotonic()
    with pytest.raises(ExtractError) as caught:
        ask(llm, timeout_s=0.3)
    assert caught.value.kind == "network_error"
    assert "within 0.3 s" in str(caught.value)
    assert time.monotonic() - started < 3


def test_non_http_endpoint_is_refused() -> None:
    with pytest.raises(WorkflowError, match="http"):
        extract(Sense, prompt="x", endpoint="ftp://example.com", llm_model="m")
