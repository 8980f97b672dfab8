"""Helpers for workflow role authors: run a command or an agent CLI safely, read the
workspace's nerve.yaml, and extract typed data with an LLM (seed 001's workflow-utils:
``readNerveYaml`` → :func:`read_nerve_yaml`, ``nerveAgentContext`` → :data:`AGENT_CONTEXT`,
``nerveCommandEnv`` → :func:`command_env`, ``spawnSafe`` → :func:`run_argv`,
``cursorAgent`` → :func:`run_agent` with :data:`CURSOR_AGENT`, ``llmExtract`` →
:func:`extract`).

    WorkflowError (nerve.errors)
    ├── ArgvError       run_argv got a str, bytes, empty argv or a non-str item (a TypeError too)
    ├── CommandFailed   a command could not start (kind "spawn_failed"), exited non-zero ("exit")
    │                   or ran past its timeout ("timeout")
    ├── NerveYamlError  read_nerve_yaml: "PATH_TRAVERSAL" or "READ_FAILED" (its ``code``)
    └── ExtractError    an extraction call failed, with seed 001's kinds: "network_error",
                        "http_error", "invalid_response_json", "no_tool_call",
                        "tool_arguments_invalid_json" or "schema_validation_failed"

`run_argv` never goes through a shell: the program gets exactly the arguments it is given. The
child runs in a new session, so a timeout kills everything it started, not just the child.

`extract` asks an OpenAI-compatible chat-completions endpoint to call one forced function,
named after the schema's title (the model's class name unless its config says otherwise;
`extract` when there is none), whose parameters are the pydantic model's JSON schema, and
validates the answer.
Nothing here logs; the API key only ever travels in the `Authorization` header.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from nerve.errors import WorkflowError

__all__ = [
    "AGENT_CONTEXT",
    "CURSOR_AGENT",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "ArgvError",
    "CommandFailed",
    "CommandFailureKind",
    "CommandResult",
    "ExtractError",
    "ExtractErrorKind",
    "NerveYamlError",
    "command_env",
    "extract",
    "read_nerve_yaml",
    "run_agent",
    "run_argv",
    "tool_name",
]

MIB = 1024 * 1024
DEFAULT_MAX_OUTPUT_BYTES = 10 * MIB
"""Per stream: stdout and stderr are each kept up to this many bytes."""

CommandFailureKind = Literal["spawn_failed", "exit", "timeout"]
ExtractErrorKind = Literal[
    "network_error",
    "http_error",
    "invalid_response_json",
    "no_tool_call",
    "tool_arguments_invalid_json",
    "schema_validation_failed",
]
DEFAULT_TIMEOUT_S = 300.0
"""run_argv's and run_agent's default time limit (seed 001's 300,000 ms)."""

T = TypeVar("T", bound=BaseModel)

_READ_CHUNK = 64 * 1024
_DRAIN_GRACE_S = 2.0
_STDERR_TAIL_CHARS = 500
_BODY_EXCERPT_CHARS = 500
_MAX_RESPONSE_BYTES = 16 * MIB
_TOOL_NAME = "extract"
_TOOL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


# ---------------------------------------------------------------------------------------------
# Errors


class ArgvError(WorkflowError, TypeError):
    """Raised when run_argv gets a str or bytes, an empty argv, or an item that is not a str."""


class CommandFailed(WorkflowError):
    """Raised when a command cannot start, or by `CommandResult.check` when it did not succeed.

    `kind` is "spawn_failed" (not found, not executable, bad cwd), "exit" (non-zero exit or
    killed by a signal) or "timeout". `result` is None only for "spawn_failed".
    """

    def __init__(
        self,
        message: str,
        *,
        kind: CommandFailureKind,
        argv: tuple[str, ...],
        result: CommandResult | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.kind: CommandFailureKind = kind
        self.argv = argv
        self.result = result


class ExtractError(WorkflowError):
    """Raised when `extract` cannot turn the endpoint's reply into a valid model instance.

    kind "network_error": no answer (refused, DNS, timeout, dropped connection);
    "http_error": a non-2xx answer, `status` set; "invalid_response_json": the body is not a
    JSON object (or too large); "no_tool_call": no tool call and no JSON object in the
    content; "tool_arguments_invalid_json": the tool call's arguments are not a JSON object;
    "schema_validation_failed": the object fails pydantic validation, `errors` set. `body`
    holds the first 500 characters of the body (or of the extracted object) when there is
    one.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ExtractErrorKind,
        status: int | None = None,
        body: str = "",
        errors: Sequence[Mapping[str, object]] = (),
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.kind: ExtractErrorKind = kind
        self.status = status
        self.body = body
        self.errors: tuple[Mapping[str, object], ...] = tuple(errors)


# ---------------------------------------------------------------------------------------------
# run_argv


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or timed-out) command did.

    `exit_code` is None when the command was still running at its deadline, negative N when a
    signal N ended it. `truncated` is True when stdout or stderr went past the output cap.
    """

    argv: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.exit_code == 0 and not self.timed_out

    def check(self) -> CommandResult:
        """Return self when ok, else raise CommandFailed naming the program, code and stderr."""
        if self.ok:
            return self
        kind: CommandFailureKind = "timeout" if self.timed_out else "exit"
        message = f"{_outcome(self)}; {_stderr_tail(self.stderr)}"
        raise CommandFailed(message, kind=kind, argv=self.argv, result=self)


def run_argv(
    argv: Sequence[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: Path | None = None,
    input: bytes | None = None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
) -> CommandResult:
    """Run argv (never through a shell) and return what it did; a non-zero exit is not raised.

    `timeout_s` defaults to 300 s, as seed 001's spawnSafe. The child starts in a new
    session; at the deadline its whole process group is killed. `env` is laid over
    os.environ when `inherit_env`, else it is the child's entire environment. Raises
    ArgvError for a bad argv and CommandFailed("spawn_failed") when the program cannot be
    started.
    """
    args = _checked_argv(argv)
    _check_limits(timeout_s, max_output_bytes)
    started = time.monotonic()
    proc = _spawn(args, _child_env(env, inherit_env), cwd, with_input=input is not None)
    try:
        deadline = started + timeout_s
        return _supervise(proc, args, started, deadline, input=input, limit=max_output_bytes)
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise


def _checked_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, str | bytes | bytearray):
        raise ArgvError(
            f"argv must be a sequence of arguments, not a {type(argv).__name__}: {argv!r}",
            hint="nerve never runs a shell; split it yourself, e.g. ['git', 'status']",
        )
    args = tuple(argv)
    if not args:
        raise ArgvError("argv is empty; argv[0] must name the program to run")
    for arg in args:
        if not isinstance(arg, str) or "\0" in arg:
            raise ArgvError(f"every argv item must be a str without NUL bytes, got {arg!r}")
    return args


def _check_limits(timeout_s: float, max_output_bytes: int) -> None:
    if not timeout_s > 0:
        raise WorkflowError(f"timeout_s must be greater than 0, got {timeout_s!r}")
    if max_output_bytes < 0:
        raise WorkflowError(f"max_output_bytes must be 0 or more, got {max_output_bytes!r}")


def _child_env(env: Mapping[str, str] | None, inherit_env: bool) -> dict[str, str]:
    base = dict(os.environ) if inherit_env else {}
    return base | dict(env or {})


def _spawn(
    argv: tuple[str, ...], env: dict[str, str], cwd: Path | None, *, with_input: bool
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if with_input else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            bufsize=0,
            start_new_session=True,
        )
    except OSError as exc:
        message = f"could not start {argv[0]!r}: {exc}"
        raise CommandFailed(message, kind="spawn_failed", argv=argv) from exc


def _supervise(
    proc: subprocess.Popen[bytes],
    argv: tuple[str, ...],
    started: float,
    deadline: float,
    *,
    input: bytes | None,
    limit: int,
) -> CommandResult:
    assert proc.stdout is not None and proc.stderr is not None
    captures = (_Capture(proc.stdout, limit), _Capture(proc.stderr, limit))
    if input is not None and proc.stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True).start()
    exit_code = _wait_until(proc, deadline)
    timed_out = exit_code is None or not _join(captures, deadline)
    if timed_out:
        _kill_group(proc)
        proc.wait()
        _join(captures, time.monotonic() + _DRAIN_GRACE_S)
    out, err = captures
    return CommandResult(
        argv=argv,
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_ms=int((time.monotonic() - started) * 1000),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
    )


class _Capture:
    """Drains one pipe on a daemon thread, keeping at most `limit` bytes, then closes it."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._data = bytearray()
        self.truncated = False
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with self._stream:
            while chunk := self._stream.read(_READ_CHUNK):
                room = max(self._limit - len(self._data), 0)
                self._data += chunk[:room]
                self.truncated = self.truncated or len(chunk) > room

    def text(self) -> str:
        return bytes(self._data).decode("utf-8", errors="replace")


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError), stream:
        while data:
            data = data[stream.write(data) :]


def _wait_until(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    try:
        return proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        return None


def _join(captures: Sequence[_Capture], deadline: float) -> bool:
    for capture in captures:
        capture.thread.join(max(deadline - time.monotonic(), 0.0))
    return not any(capture.thread.is_alive() for capture in captures)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The child leads its own session, so its pid is the group id of everything it started.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _outcome(result: CommandResult) -> str:
    program = result.argv[0]
    if result.timed_out:
        return f"{program!r} timed out after {result.duration_ms} ms"
    code = result.exit_code
    if code is not None and code < 0:
        return f"{program!r} was killed by {signal.Signals(-code).name}"
    return f"{program!r} exited with code {code}"


def _stderr_tail(stderr: str) -> str:
    tail = stderr.strip()[-_STDERR_TAIL_CHARS:]
    return f"stderr: {tail}" if tail else "no stderr"


# ---------------------------------------------------------------------------------------------
# the workspace, for agents and commands


class NerveYamlError(WorkflowError):
    """Raised by read_nerve_yaml; ``code`` is "PATH_TRAVERSAL" (nerve.yaml leads out of the
    workspace) or "READ_FAILED" (missing, unreadable, not UTF-8), as seed 001 names them."""

    def __init__(self, message: str, *, code: Literal["PATH_TRAVERSAL", "READ_FAILED"]) -> None:
        super().__init__(message)
        self.code = code


def read_nerve_yaml(root: Path) -> str:
    """The text of ``<root>/nerve.yaml``; refused when it resolves outside ``root`` (a
    symlink leading out). Raises NerveYamlError."""
    base = Path(root).resolve()
    target = (base / "nerve.yaml").resolve()
    if not target.is_relative_to(base):
        message = f"{base / 'nerve.yaml'} resolves to {target}, outside the workspace {base}"
        raise NerveYamlError(message, code="PATH_TRAVERSAL")
    try:
        return target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NerveYamlError(f"cannot read {target}: {exc}", code="READ_FAILED") from None


AGENT_CONTEXT = """\
You are working in a nerve workspace. nerve is an ambient-context daemon: senses (Python
`compute(state)` functions under senses/<name>/) observe the world and record events in one
append-only log; nerve.yaml schedules them (interval, on: other senses' signals, throttle)
and declares workflows (workflows/<name>/workflow.py: roles and a moderator). The `nerve`
CLI reads and drives it: `nerve tail`, `nerve query SQL`, `nerve sense list|schema|query`,
`nerve workflow list|inspect`, `nerve validate`. Keep paths and commands consistent with
this workspace's nerve.yaml and its senses folder."""
"""What an agent a workflow runs should know about nerve (seed 001's nerveAgentContext)."""


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for commands a role runs: this process's, with the folder of the
    Python nerve runs on first on ``PATH`` (so ``nerve`` and ``python`` are this install's),
    then ``extra`` laid over it (seed 001's nerveCommandEnv)."""
    env = dict(os.environ)
    folder = str(Path(sys.executable).parent)
    parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != folder]
    env["PATH"] = os.pathsep.join([folder, *parts])
    return env | dict(extra or {})


CURSOR_AGENT: tuple[str, ...] = (
    "cursor-agent",
    "-p",
    "{prompt}",
    "--model",
    "auto",
    "--output-format",
    "text",
    "--trust",
    "--force",
)
"""Seed 001's cursorAgent call, for run_agent (append "--mode=plan" or "--mode=ask")."""


def run_agent(
    argv: Sequence[str],
    prompt: str,
    *,
    cwd: Path | None = None,
    context: str | None = AGENT_CONTEXT,
    env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
) -> str:
    """Run an agent CLI on ``prompt`` and return what it printed (trailing space removed).

    The prompt, after ``context`` and a blank line when ``context`` is given, is one argv
    item: it replaces an item that is exactly ``{prompt}``, else it is appended. The agent
    runs with :func:`command_env` (``env`` over it), never through a shell, and is killed
    with everything it started at ``timeout_s`` (300 s). Raises CommandFailed: kind
    "spawn_failed", "exit" (non-zero) or "timeout", its ``result`` holding the output.
    """
    text = prompt if context is None else f"{context}\n\n{prompt}"
    args = _checked_argv(argv)
    placed = [text if arg == "{prompt}" else arg for arg in args]
    if "{prompt}" not in args:
        placed.append(text)
    result = run_argv(
        placed,
        timeout_s=timeout_s,
        env=command_env(env),
        inherit_env=False,
        cwd=cwd,
        max_output_bytes=max_output_bytes,
    ).check()
    return result.stdout.rstrip()


# ---------------------------------------------------------------------------------------------
# extract


def extract(
    model: type[T],
    *,
    prompt: str,
    endpoint: str,
    api_key: str | None = None,
    llm_model: str,
    system: str | None = None,
    timeout_s: float = 60.0,
    temperature: float = 0.0,
) -> T:
    """Ask `{endpoint}/chat/completions` to fill `model` from `prompt`; return the instance.

    The request forces one function call, named by :func:`tool_name`, whose parameters are
    the model's JSON schema. The call's arguments are validated; when the reply has no tool
    call, a JSON object in the message content is accepted instead. `timeout_s` bounds each
    socket operation. Raises ExtractError (see its kinds).
    """
    url = _completions_url(endpoint)
    name = tool_name(model)
    payload = _request_payload(model, name, prompt, llm_model, system, temperature)
    body = _post_json(url, payload, api_key, timeout_s)
    return _validate(model, _extracted_object(body, name))


def tool_name(model: type[BaseModel]) -> str:
    """The forced function's name: the schema's ``title`` (the class name unless the model's
    config sets one), as seed 001 names it, made a valid function name (letters, digits,
    ``_`` and ``-``, at most 64); ``extract`` when that leaves nothing."""
    title = model.model_json_schema().get("title")
    name = _TOOL_NAME_CHARS.sub("_", title.strip()).strip("_") if isinstance(title, str) else ""
    return name[:64] or _TOOL_NAME


def _completions_url(endpoint: str) -> str:
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WorkflowError(f"endpoint must be an http(s) URL, got {endpoint!r}")
    return endpoint.rstrip("/") + "/chat/completions"


def _request_payload(
    model: type[BaseModel],
    name: str,
    prompt: str,
    llm_model: str,
    system: str | None,
    temperature: float,
) -> dict[str, object]:
    schema = model.model_json_schema()
    description = schema.get("description") or f"Record the {model.__name__} found in the text."
    function = {"name": name, "description": description, "parameters": schema}
    messages = [{"role": "system", "content": system}] if system is not None else []
    return {
        "model": llm_model,
        "messages": [*messages, {"role": "user", "content": prompt}],
        "temperature": temperature,
        "tools": [{"type": "function", "function": function}],
        "tool_choice": {"type": "function", "function": {"name": name}},
    }


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would resend the Authorization header to the new host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _post_json(
    url: str, payload: dict[str, object], api_key: str | None, timeout_s: float
) -> bytes:
    data = json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=_headers(api_key), method="POST")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=timeout_s) as response:
            body: bytes = response.read(_MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise _status_error(url, exc) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _network_error(url, exc, timeout_s) from exc
    if len(body) > _MAX_RESPONSE_BYTES:
        message = f"the reply from {url} is larger than {_MAX_RESPONSE_BYTES} bytes"
        raise ExtractError(message, kind="invalid_response_json", body=_excerpt(body))
    return body


def _status_error(url: str, exc: urllib.error.HTTPError) -> ExtractError:
    with exc:
        try:
            body: bytes = exc.read(_BODY_EXCERPT_CHARS * 4)
        except (OSError, http.client.HTTPException):
            body = b""
    excerpt = _excerpt(body)
    message = f"{url} answered HTTP {exc.code}: {excerpt or '(empty body)'}"
    return ExtractError(message, kind="http_error", status=exc.code, body=excerpt)


def _network_error(url: str, exc: BaseException, timeout_s: float) -> ExtractError:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):
        return ExtractError(f"no answer from {url} within {timeout_s} s", kind="network_error")
    why = reason or type(reason).__name__
    return ExtractError(f"could not reach {url}: {why}", kind="network_error")


class _Malformed(Exception):
    """Internal: the reply is not the JSON shape extract needs; becomes ExtractError."""

    def __init__(self, message: str, kind: ExtractErrorKind) -> None:
        super().__init__(message)
        self.kind: ExtractErrorKind = kind


def _extracted_object(body: bytes, name: str) -> dict[str, object]:
    try:
        response = _loads(body, "the response body", "invalid_response_json")
        return _object_from_message(_first_message(response), name)
    except _Malformed as exc:
        raise ExtractError(str(exc), kind=exc.kind, body=_excerpt(body)) from None


def _loads(raw: str | bytes, what: str, kind: ExtractErrorKind) -> object:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _Malformed(f"{what} is not JSON ({exc})", kind) from None


def _first_message(response: object) -> dict[str, object]:
    if not isinstance(response, dict):
        raise _Malformed("the response body is not a JSON object", "invalid_response_json")
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise _Malformed("the reply has no choices[0].message", "no_tool_call")
    return message


def _object_from_message(message: dict[str, object], name: str) -> dict[str, object]:
    arguments = _tool_call_arguments(message, name)
    if arguments is not None:
        return _as_object(arguments, "the tool call's argument text", "tool_arguments_invalid_json")
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        what = "the reply has no tool call and its content"
        return _as_object(_strip_fence(content), what, "no_tool_call")
    raise _Malformed("the reply has neither a tool call nor content", "no_tool_call")


def _tool_call_arguments(message: dict[str, object], name: str) -> object | None:
    calls = message.get("tool_calls")
    calls = calls if isinstance(calls, list) else []
    functions = [call.get("function") for call in calls if isinstance(call, dict)]
    candidates = [f for f in functions if isinstance(f, dict)]
    named = [f for f in candidates if f.get("name") == name]
    chosen = (named or candidates)[:1]
    return chosen[0].get("arguments") if chosen else None


def _as_object(raw: object, what: str, kind: ExtractErrorKind) -> dict[str, object]:
    parsed = _loads(raw, what, kind) if isinstance(raw, str) else raw
    if not isinstance(parsed, dict):
        raise _Malformed(f"{what} is not a JSON object", kind)
    return parsed


def _strip_fence(content: str) -> str:
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        inner = text[3:-3]
        return inner.split("\n", 1)[1] if "\n" in inner else inner
    return text


def _validate(model: type[T], obj: dict[str, object]) -> T:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        message = (
            f"the reply does not match {model.__name__}: {len(errors)} error(s), "
            f"first at {where}: {first['msg']}"
        )
        body = _excerpt(json.dumps(obj, default=str).encode("utf-8"))
        raise ExtractError(
            message, kind="schema_validation_failed", body=body, errors=errors
        ) from exc


def _excerpt(body: bytes) -> str:
    return body[: _BODY_EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:_BODY_EXCERPT_CHARS]
