"""Escalation: a real HTTP server on loopback, a real command, and how each one fails."""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nerve.attention.energy import Energy, Provenance
from nerve.log.select import TailFilter
from nerve.logops import tail_rows
from nerve.recall import SYSTEM_PROMPT, FallbackError, ask
from nerve.workspace import WorkspaceDir
from tests.recall.test_recall import activity, seed

OPEN_QUESTION = "why is the network slow this afternoon?"


@dataclass
class Model:
    """What the fake endpoint answers, and every request it received."""

    status: int = 200
    body: bytes = b""
    delay_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, content: str, total_tokens: int | None = 42) -> None:
        message = {"role": "assistant", "content": content}
        payload: dict[str, Any] = {"choices": [{"index": 0, "message": message}]}
        if total_tokens is not None:
            payload["usage"] = {"total_tokens": total_tokens}
        self.status, self.body = 200, json.dumps(payload).encode()


def _handler(model: Model) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            model.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": self.rfile.read(length)}
            )
            time.sleep(model.delay_s)
            try:
                self.send_response(model.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(model.body)))
                self.end_headers()
                self.wfile.write(model.body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (a timeout): no one to tell

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def model() -> Iterator[tuple[Model, str]]:
    state = Model()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def day(workspace: WorkspaceDir) -> WorkspaceDir:
    seed(workspace, activity())
    return workspace


def configure(ws: WorkspaceDir, fallback: str) -> WorkspaceDir:
    ws.config_path.write_text(f"recall:\n  fallback: {fallback}\n")
    return WorkspaceDir.at(ws.root)


def http_fallback(ws: WorkspaceDir, endpoint: str, extra: str = "") -> WorkspaceDir:
    spec = f"{{kind: http, endpoint: '{endpoint}', model: tiny, api_key_env: TEST_KEY{extra}}}"
    return configure(ws, spec)


def kinds_recorded(ws: WorkspaceDir) -> list[dict[str, Any]]:
    filt = TailFilter.of(["ask.question", "ask.answer", "ask.error"], None)
    return tail_rows(ws, count=None, filt=filt)[0]


# -- HTTP ----------------------------------------------------------------------------------------


def test_an_open_question_escalates_to_the_http_fallback(
    day: WorkspaceDir, model: tuple[Model, str]
) -> None:
    state, endpoint = model
    state.reply("  The network is busy with a large download.  ", total_tokens=42)
    ws = http_fallback(day, endpoint, ", uj_per_token: 500")
    result = ask(ws, OPEN_QUESTION, environ={"TEST_KEY": "sk-test"})
    assert result.answered and result.tier == 1 and result.model_call
    assert result.text == "The network is busy with a large download."
    assert result.energy == Energy.estimate(42 * 500)
    assert result.energy.provenance is Provenance.ESTIMATOR and result.energy.measured_uj is None
    assert result.spans == tuple(s.id for s in result.envelope.spans)
    assert result.fallback is not None and result.fallback["tokens_from"] == "usage"

    (request,) = state.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = json.loads(request["body"])
    assert body["model"] == "tiny" and body["temperature"] == 0
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["content"].encode() == result.envelope.canonical
    assert json.loads(user["content"])["query"] == OPEN_QUESTION

    question, answered = kinds_recorded(ws)
    assert question["kind"] == "ask.question" and answered["kind"] == "ask.answer"
    assert answered["payload"]["answer"] == result.text
    assert answered["payload"]["model_call"] is True and answered["payload"]["tier"] == 1
    assert answered["payload"]["energy"]["estimated_uj"] == 21_000


def test_the_same_question_sends_the_same_bytes(
    day: WorkspaceDir, model: tuple[Model, str]
) -> None:
    state, endpoint = model
    state.reply("ok")
    ws = http_fallback(day, endpoint)
    for _ in range(2):
        ask(ws, OPEN_QUESTION, environ={"TEST_KEY": "k"})
    first, second = state.requests
    assert first["body"] == second["body"]


def test_without_usage_tokens_are_estimated_from_bytes(
    day: WorkspaceDir, model: tuple[Model, str]
) -> None:
    state, endpoint = model
    state.reply("fine", total_tokens=None)
    ws = http_fallback(day, endpoint, ", uj_per_token: 10")
    result = ask(ws, OPEN_QUESTION, environ={"TEST_KEY": "k"})
    tokens = (len(state.requests[0]["body"]) + len(state.body)) // 4
    assert result.fallback is not None and result.fallback["tokens_from"] == "bytes/4"
    assert result.energy == Energy.estimate(tokens * 10)


def test_tier0_answers_never_reach_the_fallback(
    day: WorkspaceDir, model: tuple[Model, str]
) -> None:
    state, endpoint = model
    state.reply("should not be asked")
    result = ask(http_fallback(day, endpoint), "what did I run?", environ={"TEST_KEY": "k"})
    assert result.tier == 0 and not result.model_call and state.requests == []


def _failing(ws: WorkspaceDir, kind: str, match: str) -> FallbackError:
    with pytest.raises(FallbackError, match=match) as caught:
        ask(ws, OPEN_QUESTION, environ={"TEST_KEY": "k"})
    assert caught.value.kind == kind
    recorded = kinds_recorded(ws)
    assert [r["kind"] for r in recorded] == ["ask.question", "ask.error"]
    assert recorded[1]["payload"]["kind"] == kind
    assert recorded[0]["subject"] == recorded[1]["subject"]
    return caught.value


def test_an_http_500_is_a_clear_error_and_the_question_is_kept(
    day: WorkspaceDir, model: tuple[Model, str]
) -> None:
    state, endpoint = model
    state.status, state.body = 500, b'{"error": "overloaded"}'
    _failing(http_fallback(day, endpoint), "http_status", r"answered HTTP 500: \{\"error\"")


def test_a_junk_reply_is_a_clear_error(day: WorkspaceDir, model: tuple[Model, str]) -> None:
    state, endpoint = model
    state.body = b"<html>not json</html>"
    _failing(http_fallback(day, endpoint), "invalid_reply", "did not send a chat completion")


def test_an_empty_answer_is_a_clear_error(day: WorkspaceDir, model: tuple[Model, str]) -> None:
    state, endpoint = model
    state.reply("   ")
    _failing(http_fallback(day, endpoint), "invalid_reply", "empty answer")


def test_a_slow_endpoint_times_out(day: WorkspaceDir, model: tuple[Model, str]) -> None:
    state, endpoint = model
    state.reply("late")
    state.delay_s = 1.5
    error = _failing(http_fallback(day, endpoint, ", timeout: 200ms"), "timeout", "no answer")
    assert error.hint is not None and "timeout" in error.hint


def test_the_fake_model_is_quiet_when_the_client_hung_up(
    model: tuple[Model, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A client that timed out and left (as above) is no traceback on stderr."""
    state, endpoint = model
    state.reply("late")
    state.delay_s = 0.3
    host, port = endpoint.removeprefix("http://").removesuffix("/v1").split(":")
    with socket.create_connection((host, int(port))) as client:
        client.sendall(b"POST /v1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        for _ in range(100):  # hang up once the request is read: the reply meets a reset
            if state.requests:
                break
            time.sleep(0.01)
    time.sleep(state.delay_s + 0.4)  # the handler has written by now, or failed to
    assert state.requests and "Traceback" not in capsys.readouterr().err


def test_an_unreachable_endpoint_is_a_network_error(day: WorkspaceDir) -> None:
    _failing(http_fallback(day, "http://127.0.0.1:9/v1"), "network", "could not reach")


def test_an_unset_key_variable_is_named(day: WorkspaceDir, model: tuple[Model, str]) -> None:
    _, endpoint = model
    ws = http_fallback(day, endpoint)
    with pytest.raises(FallbackError, match="TEST_KEY, which is not set") as caught:
        ask(ws, OPEN_QUESTION, environ={})
    assert caught.value.kind == "config"


# -- command -------------------------------------------------------------------------------------

ANSWER_SCRIPT = """
import json, sys
envelope = json.load(sys.stdin)
print("answered " + envelope["query"] + " from " + str(len(envelope["spans"])) + " spans")
"""


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "answer.py"
    path.write_text(body)
    return f"{{kind: command, argv: ['{sys.executable}', '{path}'], watts: 20, timeout: 5s}}"


def test_an_open_question_escalates_to_the_command_fallback(
    day: WorkspaceDir, tmp_path: Path
) -> None:
    ws = configure(day, script(tmp_path, ANSWER_SCRIPT))
    result = ask(ws, OPEN_QUESTION)
    assert (
        result.text == f"answered {OPEN_QUESTION} from 11 spans"
    )  # every candidate fits in k = 12
    assert result.tier == 1 and result.model_call
    assert result.fallback is not None and result.fallback["kind"] == "command"
    assert result.energy == Energy.estimate(result.fallback["elapsed_ms"] * 20 * 1000)
    assert [r["kind"] for r in kinds_recorded(ws)] == ["ask.question", "ask.answer"]


@pytest.mark.parametrize(
    ("body", "timeout", "kind", "match"),
    [
        # Commands that end by themselves keep the 5 s timeout: on a loaded machine an
        # interpreter can take longer than a short one just to start.
        (
            "import sys; sys.stderr.write('model missing'); sys.exit(4)",
            "5s",
            "exit",
            "code 4: model",
        ),
        ("import sys; sys.stdin.read()", "5s", "invalid_reply", "printed no answer"),
        ("import time; time.sleep(30)", "300ms", "timeout", "gave no answer within"),
    ],
)
def test_a_failing_command_is_a_clear_error(
    day: WorkspaceDir, tmp_path: Path, body: str, timeout: str, kind: str, match: str
) -> None:
    spec = script(tmp_path, body).replace("timeout: 5s", f"timeout: {timeout}")
    _failing(configure(day, spec), kind, match)


def test_a_missing_program_is_a_clear_error(day: WorkspaceDir, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-program"
    _failing(configure(day, f"{{kind: command, argv: ['{missing}']}}"), "spawn_failed", "start")


def test_with_no_fallback_the_answer_says_so_plainly(day: WorkspaceDir) -> None:
    result = ask(day, "why is the network slow?")
    assert not result.answered and result.tier is None and not result.model_call
    assert result.text.startswith("I could not answer that from what this machine has recorded")
    assert "Tier" not in result.text and "recall.fallback" in result.text
    _, answered = kinds_recorded(day)
    assert answered["payload"]["answered"] is False
    assert answered["line"].startswith("unanswered: ")


def test_with_no_fallback_a_time_the_log_does_not_cover_is_said_with_what_was_read(
    day: WorkspaceDir,
) -> None:
    result = ask(day, OPEN_QUESTION)
    assert not result.answered and result.tier is None and not result.model_call
    before_noon = result.text.startswith("This afternoon has not begun yet: it starts at 12:00")
    assert before_noon or result.text.startswith("Nothing was recorded this afternoon (")
    assert before_noon or "the log covers" in result.text  # asked today, the log is of May
    assert "I understood" in result.text and "recall.fallback" not in result.text
