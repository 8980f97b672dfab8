"""Extract typed data with an LLM (seed 001's ``llmExtract``): :func:`extract`.

    WorkflowError (nerve.errors)
    └── ExtractError    an extraction call failed, with seed 001's kinds: "network_error",
                        "http_error", "invalid_response_json", "no_tool_call",
                        "tool_arguments_invalid_json" or "schema_validation_failed"

`extract` asks an OpenAI-compatible chat-completions endpoint to call one forced function,
named after the schema's title (the model's class name unless its config says otherwise;
`extract` when there is none), whose parameters are the pydantic model's JSON schema, and
validates the answer.
Nothing here logs; the API key only ever travels in the `Authorization` header.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from nerve.errors import WorkflowError

__all__ = ["ExtractError", "ExtractErrorKind", "extract", "tool_name"]

ExtractErrorKind = Literal[
    "network_error",
    "http_error",
    "invalid_response_json",
    "no_tool_call",
    "tool_arguments_invalid_json",
    "schema_validation_failed",
]

T = TypeVar("T", bound=BaseModel)

MIB = 1024 * 1024
_BODY_EXCERPT_CHARS = 500
_MAX_RESPONSE_BYTES = 16 * MIB
_TOOL_NAME = "extract"
_TOOL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


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
