"""The models of ``nerve.yaml``: one per section, each strict (an unknown key is an error).

Sections owned by a feature are that feature's models (``privacy:``, ``mcp:``, ``fleet:``,
``attention:``); ``recall:`` is :mod:`nerve.config.recall`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from nerve.attention.settings import MODELS as ATTENTION_MODELS
from nerve.attention.settings import AttentionConfig
from nerve.categories import CategoryRule
from nerve.config.recall import MODELS as RECALL_MODELS
from nerve.config.recall import RecallConfig
from nerve.contract import MAX_ROUNDS_LIMIT
from nerve.durations import Duration, PositiveDuration, validate_duration
from nerve.errors import ConfigError, EventError
from nerve.events import check_kind, parse_source
from nerve.fleet.settings import MODELS as FLEET_MODELS
from nerve.fleet.settings import FleetConfig
from nerve.mcp.settings import MODELS as MCP_MODELS
from nerve.mcp.settings import McpConfig
from nerve.privacy.settings import MODELS as PRIVACY_MODELS
from nerve.privacy.settings import PrivacyConfig
from nerve.sync.settings import MODELS as SYNC_MODELS
from nerve.sync.settings import SyncConfig

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "KEBAB_ID",
    "KNOWN_KEYS",
    "OLD_OVERFLOW",
    "AttestationConfig",
    "CheckId",
    "DaemonConfig",
    "LogConfig",
    "NerveConfig",
    "ReflexConfig",
    "RetentionConfig",
    "SenseConfig",
    "UiConfig",
    "WorkflowConfig",
]

DEFAULT_TIMEOUT_MS = 30_000
KEBAB_ID = re.compile(r"[a-z][a-z0-9-]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


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
    return validate_duration(value)


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


class EncryptionConfig(_Model):
    """Encryption at rest (``nerve init --encrypt``): what unlocks the data key."""

    key: Literal["file", "passphrase", "systemd-creds", "pkcs11"] = "file"


class LogConfig(_Model):
    """When the write-ahead log is sealed, how it is made durable, and clock tolerance;
    how long payloads are kept, and where archived segments are; encryption at rest."""

    seal_max_events: int = Field(default=100_000, ge=1)
    seal_max_age: PositiveDuration = 300_000
    durability: Literal["fsync", "os"] = "fsync"
    max_clock_offset: Duration = 500
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    archives: list[str] = Field(default_factory=list)
    encryption: EncryptionConfig | None = None


class DaemonConfig(_Model):
    """Where the daemon listens and how large one request may be."""

    socket: str = "data/nerve.sock"
    max_request_bytes: int = Field(default=1 << 20, ge=1)


_KEY_HEX = re.compile(r"^[0-9a-f]{64}$")


UI_PORT = 5290  # nerve ui's port unless nerve.yaml or --port says: fixed, so bookmarks hold


class UiConfig(_Model):
    """Where ``nerve ui`` listens and how long its login link and sessions last: ``port`` on
    loopback (taken: the next free one above it; 0: any free one); a login link works once
    and only within ``login``; a session ends after ``idle`` without a request, and
    ``session`` after it began, whatever its use."""

    port: int = Field(default=UI_PORT, ge=0, le=65535)
    login: PositiveDuration = 3_600_000  # 1 h
    idle: PositiveDuration = 12 * 3_600_000  # 12 h
    session: PositiveDuration = 7 * 86_400_000  # 7 d


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


class SealConfig(_Model):
    """Epoch seals (docs/sealing.md): the epoch ``nerve audit seal-setup`` uses unless told
    (the set-up's own epoch is what the daemon seals by), and whether the daemon seals."""

    epoch: PositiveDuration = 900_000  # 15 min, as journald's sealing
    enabled: bool = True


class AuditConfig(_Model):
    """The audit's settings: epoch seals."""

    seal: SealConfig = Field(default_factory=SealConfig)


class NerveConfig(_Model):
    """A whole ``nerve.yaml``."""

    node: str | None = Field(default=None, min_length=1)
    max_rounds: int = Field(default=100, ge=1, le=MAX_ROUNDS_LIMIT)
    senses: dict[Name, SenseConfig] = Field(default_factory=dict)
    reflexes: list[ReflexConfig] = Field(default_factory=list)
    workflows: dict[Name, WorkflowConfig] = Field(default_factory=dict)
    log: LogConfig = Field(default_factory=LogConfig)
    attention: AttentionConfig = Field(default_factory=AttentionConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    ui: UiConfig = Field(default_factory=UiConfig)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    attestation: AttestationConfig = Field(default_factory=AttestationConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    fleet: FleetConfig | None = None
    categories: list[CategoryRule] = Field(default_factory=list)
    sync: SyncConfig = Field(default_factory=SyncConfig)

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
    UiConfig,
    AttestationConfig,
    SealConfig,
    AuditConfig,
    CategoryRule,
    *PRIVACY_MODELS,
    *MCP_MODELS,
    *FLEET_MODELS,
    *SYNC_MODELS,
    *ATTENTION_MODELS,
    *RECALL_MODELS,
)
KNOWN_KEYS = sorted({key for model in _MODELS for key in model.model_fields})
