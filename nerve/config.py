"""``nerve.yaml``: the models, durations, and validation errors that point at a line.

A workspace's ``nerve.yaml`` declares senses, reflexes (which only schedule senses), workflows
and a few engine settings. Loading it is strict: every problem is collected as a
:class:`ConfigIssue` naming file, line, column and the YAML path (``senses.cpu.throttle``,
``reflexes[0].on[1]``), and all of them are raised together in one :class:`InvalidConfig`.

The YAML helpers here (:func:`load_yaml`, :func:`issues_from_validation`) are also used by
other workspace files read with line numbers, such as gate-check manifests.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from nerve.contract import MAX_ROUNDS_LIMIT
from nerve.errors import ConfigError, EventError
from nerve.events import check_kind, parse_source
from nerve.fleet.settings import MODELS as FLEET_MODELS
from nerve.fleet.settings import FleetConfig
from nerve.mcp.settings import MODELS as MCP_MODELS
from nerve.mcp.settings import McpConfig
from nerve.privacy.settings import MODELS as PRIVACY_MODELS
from nerve.privacy.settings import PrivacyConfig

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "KEBAB_ID",
    "CheckId",
    "ConfigIssue",
    "DaemonConfig",
    "Duration",
    "InvalidConfig",
    "LogConfig",
    "NerveConfig",
    "PositiveDuration",
    "ReflexConfig",
    "RetentionConfig",
    "SenseConfig",
    "WorkflowConfig",
    "YamlDoc",
    "config_hints",
    "format_duration",
    "issues_from_validation",
    "load_config",
    "load_yaml",
    "parse_config",
    "parse_duration",
    "validate_config",
]

DEFAULT_TIMEOUT_MS = 30_000
KEBAB_ID = re.compile(r"[a-z][a-z0-9-]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_HINT = "use e.g. 500ms, 10s, 2m"
# An alias bomb or a self-referencing anchor must end in a clear error, not a hang.
_MAX_NODES = 100_000
_MAX_DEPTH = 64
_MAX_BYTES = 1 << 20  # a nerve.yaml is a few KiB; past this it is not a configuration
_MAX_DIGITS = 4300  # Python's own limit on int(text)
_INTEGER = re.compile(r"[-+]?[0-9][0-9_]*")  # decimal: the base int() limits

YamlPath = tuple[str | int, ...]


# issues and the error that carries them
@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a workspace file; ``line``/``column`` are 1-based, None when unknown."""

    file: str
    line: int | None
    column: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class InvalidConfig(ConfigError):
    """A :class:`ConfigError` listing every problem found; ``.issues`` holds them one by one."""

    def __init__(self, issues: Iterable[ConfigIssue], *, hint: str | None = None) -> None:
        self.issues: list[ConfigIssue] = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues), hint=hint)


# durations
def parse_duration(value: Any) -> int:
    """Read ``500ms``, ``10s``, ``1.5s``, ``2m``, ``1h`` or a bare integer (ms) as milliseconds.

    Raises ``ConfigError`` for junk, booleans, negatives and fractions of a millisecond.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"invalid duration {value!r} ({_DURATION_HINT})")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"duration must not be negative (got {value})")
        return value
    return _parse_duration_text(value)


def _parse_duration_text(text: str) -> int:
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"invalid duration {text!r} ({_DURATION_HINT})")
    ms = Decimal(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]
    if ms != ms.to_integral_value():
        raise ConfigError(f"duration {text!r} is not a whole number of milliseconds")
    return int(ms)


def format_duration(ms: int) -> str:
    """Shortest exact text for ``ms``: ``1h``, ``2m``, ``10s``, else ``1500ms``."""
    if ms < 0:
        raise ConfigError(f"duration must not be negative (got {ms})")
    for unit in ("h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"


def _duration(value: Any) -> int:
    try:
        return parse_duration(value)
    except ConfigError as exc:
        raise PydanticCustomError("nerve_duration", "{reason}", {"reason": str(exc)}) from None


def _positive(ms: int) -> int:
    if ms == 0:
        raise PydanticCustomError("nerve_duration", "must be longer than 0ms")
    return ms


Duration = Annotated[int, BeforeValidator(_duration)]
"""Milliseconds, written in nerve.yaml as ``500ms``, ``10s``, ``2m``, ``1h`` or a bare integer."""
PositiveDuration = Annotated[int, BeforeValidator(_duration), AfterValidator(_positive)]


def _matching(pattern: re.Pattern[str], what: str, rule: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            message = f"{what} {{value}} must be {rule}"
            raise PydanticCustomError("nerve_pattern", message, {"value": repr(value)})
        return value

    return AfterValidator(check)


# Sense and workflow names become folder names, so they may not walk the file system.
Name = Annotated[str, _matching(_NAME, "name", "letters, digits, '-' or '_'")]
CheckId = Annotated[str, _matching(KEBAB_ID, "check id", "kebab-case (a-z, 0-9, '-')")]


# models
class _Model(BaseModel):
    # strict: YAML already has types, so "yes" must not quietly become True nor "5" become 5.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _cron(expr: str) -> str:
    from cronsim import CronSim, CronSimError

    try:
        CronSim(expr, datetime.now(UTC))
    except CronSimError as exc:
        raise PydanticCustomError(
            "nerve_cron",
            "invalid cron expression {expr}: {reason} (five fields: minute hour day-of-month"
            " month day-of-week, e.g. '0 9 * * 1-5')",
            {"expr": repr(expr), "reason": str(exc).lower()},
        ) from None
    return expr


def _timezone(name: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise PydanticCustomError(
            "nerve_timezone",
            "unknown time zone {name} (an IANA name such as 'Europe/Berlin' or 'UTC')",
            {"name": repr(name)},
        ) from None
    return name


def _jitter(value: Any) -> Any:
    if isinstance(value, str) and value.strip().endswith("%"):
        number = value.strip()[:-1].strip()
        try:
            percent = Decimal(number)
        except ArithmeticError:
            percent = Decimal(-1)
        if not number or not 0 <= percent <= 100:
            raise PydanticCustomError(
                "nerve_jitter",
                "jitter {value} must be a percentage from 0% to 100%",
                {"value": repr(value)},
            )
        return value.strip()
    return _duration(value)


Cron = Annotated[str, AfterValidator(_cron)]
TimeZone = Annotated[str, AfterValidator(_timezone)]
Jitter = Annotated[int | str, BeforeValidator(_jitter)]
"""``10%`` (of the interval) or a duration; kept as the percentage text or milliseconds."""


class SenseConfig(_Model):
    """How one sense is scheduled and run."""

    group: Name
    interval: PositiveDuration | None = None
    schedule: Cron | None = None
    timezone: TimeZone | None = None
    jitter: Jitter | None = None
    catch_up: Literal["skip", "once", "all"] = "once"
    catch_up_window: PositiveDuration | None = None
    on: list[str] = Field(default_factory=list)
    throttle: Duration | None = None
    timeout: PositiveDuration | None = None
    grace_period: Duration | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True
    path: str | None = None

    @model_validator(mode="after")
    def _one_timer(self) -> SenseConfig:
        if self.schedule is not None and self.interval is not None:
            raise PydanticCustomError(
                "nerve_schedule",
                "give 'schedule' (cron) or 'interval', not both",
                {"at_key": "schedule"},
            )
        if self.timezone is not None and self.schedule is None:
            raise PydanticCustomError(
                "nerve_schedule",
                "'timezone' applies to a cron 'schedule'; this sense has none",
                {"at_key": "timezone"},
            )
        if isinstance(self.jitter, str) and self.interval is None:
            raise PydanticCustomError(
                "nerve_jitter",
                "a percentage jitter is a share of 'interval'; with 'schedule' or 'on' give a"
                " duration (e.g. 30s)",
                {"at_key": "jitter"},
            )
        return self

    @property
    def effective_timeout_ms(self) -> int:
        """The compute time limit: the configured timeout, else the 30 s default."""
        return DEFAULT_TIMEOUT_MS if self.timeout is None else self.timeout

    @property
    def jitter_ms(self) -> int | None:
        """The most a tick is shifted by: ``jitter`` as milliseconds (a percentage of the
        interval worked out), or None when unset."""
        if isinstance(self.jitter, str):
            share = Decimal(self.jitter.rstrip("%").strip()) / 100
            return int(share * (self.interval or 0))
        return self.jitter


class ReflexConfig(_Model):
    """A rule that schedules a sense's compute: every ``interval``, on other senses' signals."""

    kind: Literal["sense"] = "sense"
    sense: str
    interval: PositiveDuration | None = None
    on: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _refuse_workflows(cls, data: Any) -> Any:
        key = _workflow_key(data)
        if key is None:
            return data
        raise PydanticCustomError(
            "nerve_reflex_workflow",
            "reflexes only schedule senses; declare the workflow under 'workflows:' and"
            " start it from a sense's compute() or `nerve workflow trigger`",
            {"at_key": key},
        )

    @model_validator(mode="after")
    def _needs_a_schedule(self) -> ReflexConfig:
        if self.interval is None and not self.on:
            raise PydanticCustomError(
                "nerve_reflex_schedule",
                "a reflex needs 'interval', 'on' or both, to say when it fires",
            )
        return self


def _workflow_key(reflex: Any) -> str | None:
    """The key by which a reflex tries to start a workflow, if it does."""
    if not isinstance(reflex, dict):
        return None
    if "workflow" in reflex:
        return "workflow"
    return "kind" if reflex.get("kind") == "workflow" else None


Overlap = Literal["skip", "buffer_one", "buffer_all", "cancel_other", "allow_all"]
OLD_OVERFLOW: dict[str, Overlap] = {"drop": "skip", "queue": "buffer_all"}


class WorkflowConfig(_Model):
    """Run limits for one workflow. ``overlap`` says what a run does when all ``concurrency``
    slots are taken (Temporal's words); ``overflow: drop|queue`` is its old spelling."""

    concurrency: int = Field(default=1, ge=1)
    overlap: Overlap | None = None
    overflow: Literal["drop", "queue"] = "drop"
    max_queue: int = Field(default=10, ge=0)
    dedupe_window: PositiveDuration | None = None
    max_rounds: int | None = Field(default=None, ge=1, le=MAX_ROUNDS_LIMIT)
    drain_timeout: Duration | None = None
    idle_exit: Duration | None = None
    checks: list[CheckId] = Field(default_factory=list)
    path: str | None = None

    @model_validator(mode="after")
    def _one_policy(self) -> WorkflowConfig:
        if self.overlap is not None and "overflow" in self.model_fields_set:
            raise PydanticCustomError(
                "nerve_overlap",
                "give 'overlap' alone ('overflow' is its old spelling)",
                {"at_key": "overflow"},
            )
        return self

    @property
    def policy(self) -> Overlap:
        """The overlap policy: ``overlap``, else the old ``overflow`` mapped (``skip`` unset)."""
        return self.overlap if self.overlap is not None else OLD_OVERFLOW[self.overflow]


def _checked_keys(
    value: dict[str, int], check: Callable[[str], object], code: str
) -> dict[str, int]:
    """``value`` unchanged if ``check`` accepts every key; else the error, at that key."""
    for name in value:
        try:
            check(name)
        except EventError as exc:
            raise PydanticCustomError(
                code, "{reason}", {"reason": str(exc), "at_key": name}
            ) from None
    return value


class RetentionConfig(_Model):
    """How long payloads and lines live (``log.retention``); off unless a limit is set.

    An event's limit is its kind's, else its source's, else ``default``; older events are
    erased as ``nerve forget`` erases (reason ``retention``), by the daemon every ``every``
    and by ``nerve forget --retention``.
    """

    default: PositiveDuration | None = None
    sources: dict[str, PositiveDuration] = Field(default_factory=dict)
    kinds: dict[str, PositiveDuration] = Field(default_factory=dict)
    every: PositiveDuration = 3_600_000

    @field_validator("sources")
    @classmethod
    def _known_sources(cls, value: dict[str, int]) -> dict[str, int]:
        return _checked_keys(value, parse_source, "nerve_source")

    @field_validator("kinds")
    @classmethod
    def _valid_kinds(cls, value: dict[str, int]) -> dict[str, int]:
        return _checked_keys(value, check_kind, "nerve_kind")

    @property
    def active(self) -> bool:
        return self.default is not None or bool(self.sources) or bool(self.kinds)


class LogConfig(_Model):
    """When the write-ahead log is sealed, how it is made durable, and clock tolerance;
    how long payloads are kept, and where archived segments are."""

    seal_max_events: int = Field(default=100_000, ge=1)
    seal_max_age: PositiveDuration = 300_000
    durability: Literal["fsync", "os"] = "fsync"
    max_clock_offset: Duration = 500
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    archives: list[str] = Field(default_factory=list)


class DaemonConfig(_Model):
    """Where the daemon listens and how large one request may be."""

    socket: str = "data/nerve.sock"
    max_request_bytes: int = Field(default=1 << 20, ge=1)


_KEY_HEX = re.compile(r"^[0-9a-f]{64}$")


class AttestationConfig(_Model):
    """The Ed25519 public keys (64 lower-case hex digits each) whose signature earns an
    event trust ``Attested`` (see ``nerve.log.attest``); none by default."""

    keys: list[str] = Field(default_factory=list)

    @field_validator("keys")
    @classmethod
    def _hex_keys(cls, keys: list[str]) -> list[str]:
        for key in keys:
            if not _KEY_HEX.match(key):
                raise ValueError(f"{key!r} is not an Ed25519 public key in 64 lower-case hex")
        return keys


class NerveConfig(_Model):
    """A whole ``nerve.yaml``."""

    node: str | None = Field(default=None, min_length=1)
    max_rounds: int = Field(default=100, ge=1, le=MAX_ROUNDS_LIMIT)
    senses: dict[Name, SenseConfig] = Field(default_factory=dict)
    reflexes: list[ReflexConfig] = Field(default_factory=list)
    workflows: dict[Name, WorkflowConfig] = Field(default_factory=dict)
    log: LogConfig = Field(default_factory=LogConfig)
    attention: dict[str, Any] = Field(default_factory=dict)
    recall: dict[str, Any] = Field(default_factory=dict)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    attestation: AttestationConfig = Field(default_factory=AttestationConfig)
    fleet: FleetConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _fill_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # An empty section (`senses:` with nothing under it) reads as null; it means "none".
        filled = {key: value for key, value in data.items() if value is not None}
        for section in ("senses", "workflows"):
            if isinstance(filled.get(section), dict):
                filled[section] = {k: _body(section, k, v) for k, v in filled[section].items()}
        return filled

    def schedule_for(self, sense: str) -> tuple[int | None, list[str]]:
        """The sense's interval (ms, the shortest declared) and the union of its ``on`` lists.

        Merges the sense's own ``interval``/``on`` shorthand with every reflex naming it.
        """
        if sense not in self.senses:
            raise ConfigError(f"no sense named {sense!r} in nerve.yaml")
        own = self.senses[sense]
        plans = [(own.interval, own.on)]
        plans += [(r.interval, r.on) for r in self.reflexes if r.sense == sense]
        intervals = [interval for interval, _ in plans if interval is not None]
        on = list(dict.fromkeys(name for _, names in plans for name in names))
        return (min(intervals) if intervals else None, on)


def _body(section: str, name: str, body: Any) -> Any:
    body = {} if body is None else body
    if section == "senses" and isinstance(body, dict) and "group" not in body:
        return {"group": name, **body}  # a sense runs in a group of its own unless told
    return body


_MODELS = (
    NerveConfig,
    SenseConfig,
    ReflexConfig,
    WorkflowConfig,
    LogConfig,
    RetentionConfig,
    DaemonConfig,
    AttestationConfig,
    *PRIVACY_MODELS,
    *MCP_MODELS,
    *FLEET_MODELS,
)
_KNOWN_KEYS = sorted({key for model in _MODELS for key in model.model_fields})


# YAML with positions


@dataclass(frozen=True, slots=True)
class YamlDoc:
    """Plain Python data read from YAML, with the 1-based (line, column) of every entry."""

    filename: str
    data: Any
    positions: Mapping[YamlPath, tuple[int, int]]

    def where(self, path: Iterable[str | int]) -> tuple[int, int]:
        """Position of ``path``, or of its nearest ancestor present in the file."""
        steps = tuple(path)
        for end in range(len(steps), -1, -1):
            if steps[:end] in self.positions:
                return self.positions[steps[:end]]
        return (1, 1)

    def issue(self, path: Iterable[str | int], message: str) -> ConfigIssue:
        """A :class:`ConfigIssue` for ``path`` located in this file."""
        steps = tuple(path)
        line, column = self.where(steps)
        return ConfigIssue(self.filename, line, column, format_path(steps), message)


def format_path(path: Iterable[str | int]) -> str:
    """``("reflexes", 0, "on", 1)`` → ``reflexes[0].on[1]``."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", step):
            text += f".{step}" if text else step
        else:
            text += f"[{step!r}]"
    return text


def load_yaml(text: str, filename: str, *, first_line: int = 1) -> YamlDoc:
    """Parse one YAML document; raise :class:`InvalidConfig` on a syntax error or duplicate key.

    ``first_line`` is the file line the text starts on (front matter starts after ``---``).
    """
    try:
        _check_limits(text, filename, first_line)
        root = YAML(typ="rt", pure=True).load(text)
    except MarkedYAMLError as exc:
        raise InvalidConfig([_syntax_issue(exc, filename, first_line)]) from None
    except YAMLError as exc:  # no position to give, e.g. a control character in the text
        issue = ConfigIssue(filename, None, None, "", "invalid YAML: " + " ".join(str(exc).split()))
        raise InvalidConfig([issue]) from None
    except RecursionError:  # the YAML parser recurses once per level: far too deep to read
        message = f"YAML is nested too deeply to read (at most {_MAX_DEPTH} levels are allowed)"
        raise InvalidConfig([ConfigIssue(filename, None, None, "", message)]) from None
    except ValueError as exc:  # a value the constructor cannot build, e.g. int() refusing
        issue = ConfigIssue(filename, None, None, "", "invalid YAML value: " + str(exc))
        raise InvalidConfig([issue]) from None
    return _Flattener(filename, first_line).document(root)


def _check_limits(text: str, filename: str, first_line: int) -> None:
    """Refuse, before anything is built, a text too large, an integer too long to convert,
    or aliases and merges that expand past ``_MAX_NODES`` entries (a YAML bomb): the
    events are counted as they stream, so a bomb fails at its first excess."""
    if len(text) > _MAX_BYTES:
        message = f"file is {len(text):,} characters; at most {_MAX_BYTES:,} are allowed"
        raise InvalidConfig([ConfigIssue(filename, None, None, "", message)])
    sizes: dict[str, int] = {}  # anchor -> entries its node expands to
    open_nodes: list[tuple[str | None, int]] = []
    expanded = 0
    for event in YAML(typ="rt", pure=True).parse(text):
        kind = type(event).__name__
        if kind in ("MappingStartEvent", "SequenceStartEvent"):
            open_nodes.append((event.anchor, expanded))
            expanded += 1
        elif kind in ("MappingEndEvent", "SequenceEndEvent"):
            anchor, start = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = expanded - start
        elif kind == "ScalarEvent":
            expanded += 1
            _check_scalar(event, filename, first_line)
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif kind == "AliasEvent":
            expanded += sizes.get(event.anchor, 1)
        if expanded > _MAX_NODES:
            message = (
                f"YAML expands too many aliases: past {_MAX_NODES:,} entries (an alias or "
                "`<<:` merge counts its whole node each time it is used)"
            )
            raise InvalidConfig([_marked(event, filename, first_line, message)])


def _check_scalar(event: Any, filename: str, first_line: int) -> None:
    value = event.value
    if event.style is None and len(value) > _MAX_DIGITS and _INTEGER.fullmatch(value):
        message = f"integer of {len(value):,} digits; at most {_MAX_DIGITS:,} are allowed"
        raise InvalidConfig([_marked(event, filename, first_line, message)])


def _marked(event: Any, filename: str, first_line: int, message: str) -> ConfigIssue:
    mark = event.start_mark
    return ConfigIssue(filename, mark.line + first_line, mark.column + 1, "", message)


def _syntax_issue(exc: MarkedYAMLError, filename: str, first_line: int) -> ConfigIssue:
    mark = exc.problem_mark or exc.context_mark
    message = "invalid YAML: " + str(exc.problem or exc.context).splitlines()[0]
    if "duplicate key" in message:
        message += "; each key may appear once"
    if mark is None:
        return ConfigIssue(filename, None, None, "", message)
    return ConfigIssue(filename, mark.line + first_line, mark.column + 1, "", message)


class _Flattener:
    """Turns ruamel's round-trip nodes into plain data while noting where each entry sits."""

    def __init__(self, filename: str, first_line: int) -> None:
        self.filename = filename
        self.offset = first_line
        self.positions: dict[YamlPath, tuple[int, int]] = {}
        self.nodes = 0

    def document(self, root: Any) -> YamlDoc:
        lc = getattr(root, "lc", None)  # a bare scalar or an empty file has no position
        line, col = (lc.line, lc.col) if lc is not None and lc.line is not None else (0, 0)
        self.positions[()] = (int(line) + self.offset, int(col) + 1)
        data = self.plain(root, ())
        return YamlDoc(self.filename, data, self.positions)

    def plain(self, node: Any, path: YamlPath) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_NODES or len(path) > _MAX_DEPTH:
            raise InvalidConfig([self._too_big(path)])
        if isinstance(node, CommentedMap):
            return dict(self._entries(node, path))
        if isinstance(node, CommentedSeq):
            return list(self._items(node, path))
        return _scalar(node)

    def _items(self, node: CommentedSeq, path: YamlPath) -> Iterator[Any]:
        for i, item in enumerate(node):
            self._note((*path, i), node.lc.item, i)
            yield self.plain(item, (*path, i))

    def _entries(self, node: CommentedMap, path: YamlPath) -> Iterator[tuple[str, Any]]:
        for key, value in node.items():
            step = key if isinstance(key, str) else str(key)
            self._note((*path, step), node.lc.key, key)
            yield step, self.plain(value, (*path, step))

    def _note(self, path: YamlPath, locate: Any, key: Any) -> None:
        try:
            line, col = locate(key)
        except (KeyError, IndexError, TypeError):
            return  # an entry pulled in by a `<<:` merge has no place of its own
        self.positions[path] = (line + self.offset, col + 1)

    def _too_big(self, path: YamlPath) -> ConfigIssue:
        line, col = self.positions.get(path, (self.offset, 1))
        message = "YAML is nested too deeply or expands too many aliases"
        return ConfigIssue(self.filename, line, col, format_path(path), message)


def _scalar(node: Any) -> Any:
    # ruamel keeps formatting in subclasses (HexInt, ScalarFloat, quoted strings); drop it.
    if node is None or isinstance(node, bool):
        return node
    kind = next((kind for kind in (int, float, str) if isinstance(node, kind)), None)
    return node if kind is None else kind(node)


# validation errors → issues
def issues_from_validation(doc: YamlDoc, error: ValidationError) -> list[ConfigIssue]:
    """One issue per pydantic error, located at the YAML entry it is about.

    Validators that raise ``PydanticCustomError`` with a type named ``nerve_*`` supply a
    finished message; a context key ``at_key`` points the issue at that sub-key.
    """
    issues = []
    for detail in error.errors():
        path = _error_path(detail)
        issues.append(doc.issue(path, _error_message(detail, path)))
    return issues


def _error_path(detail: Any) -> YamlPath:
    path = tuple(step for step in detail["loc"] if step != "[key]")
    extra_key = (detail.get("ctx") or {}).get("at_key")
    return (*path, extra_key) if extra_key else path


def _error_message(detail: Any, path: YamlPath) -> str:
    kind, ctx, value = detail["type"], detail.get("ctx") or {}, detail.get("input")
    if kind == "extra_forbidden":
        return _unknown_key(str(path[-1]))
    if kind == "missing":
        return f"required key {path[-1]!r} is missing"
    if kind.startswith("nerve_"):
        return str(detail["msg"])
    if "[key]" in detail["loc"]:
        return f"key {_generic(detail['msg'], value)}"
    if kind == "literal_error":
        return f"must be {ctx['expected']} (got {_show(value)})"
    return _generic(detail["msg"], value)


def _unknown_key(key: str) -> str:
    close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
    return f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _generic(message: str, value: Any) -> str:
    text = message.replace("Input should be", "must be").replace("Value error, ", "")
    return f"{text} (got {_show(value)})"


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# cross-references (read from the raw data, so they are reported next to type errors)
def _cross_reference_issues(doc: YamlDoc) -> list[ConfigIssue]:
    senses: dict[str, Any] = _section(doc.data, "senses", dict)
    issues = []
    for name, body in senses.items():
        on = body.get("on") if isinstance(body, dict) else None
        issues += _on_issues(doc, ("senses", name), on, name, senses, _paced(senses, name))
    reflexes: list[Any] = _section(doc.data, "reflexes", list)
    for i, reflex in enumerate(reflexes):
        if isinstance(reflex, dict):
            issues += _reflex_issues(doc, i, reflex, senses)
    return issues


def _section(data: Any, key: str, kind: type[Any]) -> Any:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, kind) else kind()


def _reflex_issues(
    doc: YamlDoc, index: int, reflex: dict[str, Any], senses: Mapping[str, Any]
) -> list[ConfigIssue]:
    sense = reflex.get("sense")
    issues = []
    if isinstance(sense, str) and sense not in senses:
        issues.append(doc.issue(("reflexes", index, "sense"), _unknown_sense(sense, senses)))
    paced = bool(reflex.get("interval")) or _paced(senses, sense)
    issues += _on_issues(doc, ("reflexes", index), reflex.get("on"), sense, senses, paced)
    return issues


def _paced(senses: Mapping[str, Any], name: Any) -> bool:
    """Whether a sense has a throttle or an interval: then listening to its own signal is a
    paced repeat (seed 001's configuration does it), not a loop."""
    body = senses.get(name) if isinstance(name, str) else None
    return isinstance(body, dict) and bool(body.get("throttle") or body.get("interval"))


def _on_issues(
    doc: YamlDoc, at: YamlPath, on: Any, target: Any, senses: Mapping[str, Any], paced: bool
) -> list[ConfigIssue]:
    if not isinstance(on, list):
        return []
    issues = []
    for i, name in enumerate(on):
        if not isinstance(name, str):
            continue  # the type error is reported by validation
        if name == target:
            if not paced:
                message = (
                    f"sense {name!r} cannot be scheduled on its own signal without a"
                    " 'throttle' or 'interval': it would loop"
                )
                issues.append(doc.issue((*at, "on", i), message))
        elif name not in senses:
            issues.append(doc.issue((*at, "on", i), _unknown_sense(name, senses)))
    return issues


def _unknown_sense(name: str, senses: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, list(senses), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else " (declare it under 'senses:')"
    return f"unknown sense {name!r}{hint}"


# entry points
def parse_config(text: str, filename: str = "nerve.yaml") -> NerveConfig:
    """Validate ``nerve.yaml`` text; raise :class:`InvalidConfig` listing every problem."""
    config, issues = _check(text, filename)
    if config is None:
        raise InvalidConfig(issues, hint="run `nerve validate` to list every problem")
    return config


def load_config(path: Path) -> NerveConfig:
    """Read and validate a ``nerve.yaml``; raise :class:`InvalidConfig` on any problem."""
    return parse_config(_read(path), str(path))


def validate_config(path: Path) -> list[ConfigIssue]:
    """Every problem in the file at ``path``, sorted by position; empty when it is valid."""
    try:
        return _check(_read(path), str(path))[1]
    except InvalidConfig as exc:
        return exc.issues


def config_hints(path: Path) -> list[ConfigIssue]:
    """Spellings still accepted that have a newer form (``overflow`` → ``overlap``), for
    ``nerve validate`` to mention without failing; empty when the file cannot be read."""
    try:
        doc = load_yaml(_read(path), str(path))
    except InvalidConfig:
        return []
    hints = []
    for name, body in _section(doc.data, "workflows", dict).items():
        old = body.get("overflow") if isinstance(body, dict) else None
        if isinstance(old, str) and old in OLD_OVERFLOW:
            message = (
                f"'overflow: {old}' is the old spelling of 'overlap: {OLD_OVERFLOW[old]}'"
                " (still accepted)"
            )
            hints.append(doc.issue(("workflows", name, "overflow"), message))
    return hints


def _read(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        message = "file not found"
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 text (bad byte at offset {exc.start})"
    except OSError as exc:
        message = f"cannot read: {exc.strerror or exc}"
    raise InvalidConfig([ConfigIssue(str(path), None, None, "", message)])


def _check(text: str, filename: str) -> tuple[NerveConfig | None, list[ConfigIssue]]:
    doc = load_yaml(text, filename)
    if doc.data is None:
        return NerveConfig(), []  # an empty file is a workspace with nothing declared yet
    if not isinstance(doc.data, dict):
        message = f"the top level must be a mapping of settings (got {_show(doc.data)})"
        return None, [doc.issue((), message)]
    issues = _cross_reference_issues(doc)
    try:
        config: NerveConfig | None = NerveConfig.model_validate(doc.data)
    except ValidationError as exc:
        config, issues = None, issues + issues_from_validation(doc, exc)
    return (config if not issues else None), _tidy(issues)


def _tidy(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    # One mistake can surface twice (a bad sense name is also its default group): say it once.
    unique = {(i.line, i.column, i.message): i for i in reversed(issues)}
    return sorted(unique.values(), key=lambda i: (i.line or 0, i.column or 0, i.path))
