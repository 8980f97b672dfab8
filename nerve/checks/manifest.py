"""Check manifests: Markdown files whose YAML front matter describes one check.

A workspace keeps them in ``workflows/checks/<id>.md``::

    ---
    id: required-sections            # must equal the file stem
    kind: deterministic              # the only kind today
    command: python tools/sections.py --strict
    default_severity: advisory       # or blocking
    description: Checks that a report has its H2 headings
    fire_on: gate                    # or write (the default)
    matches: "**/{docs,reports}/**"
    input_schema: {output_path: string}
    timeout_seconds: 300
    ---
    Prose about the check (kept as ``body``).

Unknown keys are kept in ``extra`` so older nerve versions read newer manifests; unknown
*values* of known keys (``kind: llm``, ``fire_on: save``) are refused.
"""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from nerve.config.issues import ConfigIssue, InvalidConfig
from nerve.config.models import CheckId
from nerve.config.yamlmap import YamlDoc, issues_from_validation, load_yaml
from nerve.errors import CheckError

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "SENSOR_FILE",
    "CheckManifest",
    "glob_regex",
    "load_manifests",
    "matches_path",
    "parse_manifest",
    "stem_ids",
]

DEFAULT_TIMEOUT_SECONDS = 1200
# AI-DLC's file naming: `aidlc-<id>.md` declares the check `<id>`.
SENSOR_FILE = re.compile(r"aidlc-([a-z][a-z0-9-]*)\.md")
# AI-DLC's shipped routing for manifests that declare no input_schema keys.
_FILE_PATH_IDS = frozenset({"linter", "type-check"})
_FENCE = "---"


def _kind(value: Any) -> Any:
    if value != "deterministic":
        raise PydanticCustomError(
            "nerve_kind",
            "kind {value} is not supported: only 'deterministic' checks run today"
            " (other kinds reserved for future releases)",
            {"value": repr(value)},
        )
    return value


def _command(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:  # an unclosed quote
            message = "cannot split command: {why}"
            raise PydanticCustomError("nerve_command", message, {"why": str(exc)}) from None
    elif isinstance(value, list) and all(isinstance(part, str) for part in value):
        argv = list(value)
    else:
        raise PydanticCustomError("nerve_command", "command must be a string or a list of strings")
    if not argv:
        raise PydanticCustomError("nerve_command", "command is empty")
    return tuple(argv)


def _no_empty_glob(value: Any) -> Any:
    return None if value == "" else value  # `matches: ""` means no glob, as if omitted


class CheckManifest(BaseModel):
    """One parsed manifest: the front-matter fields, unknown keys in ``extra``, and the body."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: CheckId
    kind: Annotated[Literal["deterministic"], BeforeValidator(_kind)]
    command: Annotated[tuple[str, ...], BeforeValidator(_command)]
    default_severity: Literal["advisory", "blocking"]
    description: str = Field(min_length=1)
    category: str | None = None
    fire_on: Literal["write", "gate"] = "write"
    matches: Annotated[str | None, BeforeValidator(_no_empty_glob)] = None
    input_schema: dict[str, Any] = Field(default_factory=dict)
    output_schema: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: int = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    extra: dict[str, Any] = Field(default_factory=dict)
    body: str = ""
    path: str = ""

    @property
    def path_flag(self) -> str:
        """``--file-path`` when ``input_schema`` declares ``file_path``, else ``--output-path``.

        A manifest that declares no ``input_schema`` keys keeps AI-DLC's shipped routing:
        ``--file-path`` for the ids ``linter`` and ``type-check`` only.
        """
        if not self.input_schema:
            return "--file-path" if self.id in _FILE_PATH_IDS else "--output-path"
        return "--file-path" if "file_path" in self.input_schema else "--output-path"

    def describe(self) -> dict[str, Any]:
        """The manifest as ``nerve check describe`` shows it (unset optional fields left out)."""
        shown: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "command": shlex.join(self.command),
            "default_severity": self.default_severity,
            "description": self.description,
            "category": self.category,
            "fire_on": self.fire_on,
            "matches": self.matches,
            "input_schema": self.input_schema or None,
            "output_schema": self.output_schema or None,
            "timeout_seconds": self.timeout_seconds,
            "path_flag": self.path_flag,
            "path": self.path,
            "extra": self.extra or None,
        }
        return {key: value for key, value in shown.items() if value is not None}


_FRONT_MATTER_KEYS = frozenset(CheckManifest.model_fields) - {"extra", "body", "path"}


def parse_manifest(path: Path) -> CheckManifest:
    """Read and validate one manifest; raise ``CheckError`` naming file, line and field."""
    name = str(path)
    front, first_line, body = _split(_read(path), name)
    try:
        doc = load_yaml(front, name, first_line=first_line)
    except InvalidConfig as exc:
        raise CheckError(str(exc)) from None
    return _validate(doc, Path(path), body)


def load_manifests(folder: Path) -> dict[str, CheckManifest]:
    """Every manifest in ``folder`` by id; a missing folder has none.

    ``README.md`` and files starting with ``_`` or ``.`` are not manifests.
    """
    if not Path(folder).is_dir():
        return {}
    found = {}
    for path in sorted(Path(folder).glob("*.md")):
        if path.name.lower() != "readme.md" and not path.name.startswith(("_", ".")):
            manifest = parse_manifest(path)
            found[manifest.id] = manifest
    return found


def stem_ids(path: Path) -> tuple[str, ...]:
    """The ids a manifest file may declare: its stem, and for ``aidlc-<id>.md`` also ``<id>``."""
    match = SENSOR_FILE.fullmatch(Path(path).name)
    return (Path(path).stem,) if match is None else (match.group(1), Path(path).stem)


def _read(path: Path) -> str:
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except OSError as exc:
        raise CheckError(f"{path}: cannot read manifest: {exc.strerror or exc}") from None
    return text.removeprefix("\ufeff")


def _split(text: str, name: str) -> tuple[str, int, str]:
    """Front matter text, the file line it starts on, and the body after it."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != _FENCE:
        raise CheckError(f"{name}:1: no front matter: a manifest starts with a '---' line")
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() == _FENCE:
            return "".join(lines[1:index]), 2, "".join(lines[index + 1 :])
    raise CheckError(f"{name}:1: front matter opened with '---' is never closed")


def _validate(doc: YamlDoc, path: Path, body: str) -> CheckManifest:
    if not isinstance(doc.data, dict):
        shape = "is empty" if doc.data is None else "must be a mapping of fields"
        raise CheckError(str(doc.issue((), f"front matter {shape}")))
    known = {k: v for k, v in doc.data.items() if k in _FRONT_MATTER_KEYS}
    extra = {k: v for k, v in doc.data.items() if k not in _FRONT_MATTER_KEYS}
    issues = _stem_issues(doc, path)
    try:
        manifest = CheckManifest.model_validate(
            {**known, "extra": extra, "body": body, "path": str(path)}
        )
    except ValidationError as exc:
        issues += issues_from_validation(doc, exc)
    if issues:
        raise CheckError("\n".join(str(issue) for issue in _sorted(issues)))
    return manifest


def _stem_issues(doc: YamlDoc, path: Path) -> list[ConfigIssue]:
    given = doc.data.get("id")
    allowed = stem_ids(path)
    if not isinstance(given, str) or given in allowed:
        return []
    if len(allowed) == 1:
        return [doc.issue(("id",), f"id {given!r} must equal the file name stem {path.stem!r}")]
    why = f"id {given!r} must equal the file name stem without 'aidlc-' ({allowed[0]!r})"
    return [doc.issue(("id",), why)]


def _sorted(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    return sorted(issues, key=lambda issue: (issue.line or 0, issue.column or 0))


def matches_path(manifest: CheckManifest, relpath: str) -> bool:
    """Whether a check applies to ``relpath`` (relative to the workspace, ``/``-separated).

    Without a glob a gate check applies to every output and a write check to none.
    """
    if manifest.matches is None:
        return manifest.fire_on == "gate"
    return glob_regex(manifest.matches).fullmatch(relpath.removeprefix("./")) is not None


_GLOB_TOKEN = re.compile(r"\*\*/|\*\*|\*|\?|\{|\}|,|[^*?{},]+")
_GLOB_WILDCARDS = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob with ``**`` (any folders), ``*``, ``?`` and ``{a,b}`` alternatives."""
    braces = _balanced(pattern)
    parts, depth = [], 0
    for token in _GLOB_TOKEN.findall(pattern):
        if braces and token in {"{", "}"}:
            depth += 1 if token == "{" else -1
            parts.append("(?:" if token == "{" else ")")
        elif token == "," and depth > 0:
            parts.append("|")
        else:
            parts.append(_GLOB_WILDCARDS.get(token) or re.escape(token))
    return re.compile("".join(parts))


def _balanced(pattern: str) -> bool:
    # Unbalanced braces are read as plain characters, as shells do.
    depth = 0
    for char in pattern:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0
