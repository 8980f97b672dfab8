"""The ``privacy:`` section of nerve.yaml (validated with the rest of the file)::

    privacy:
      detectors:
        enabled: true                 # the built-in pack, for every event captured
        disable: [card-number]        # by name: `nerve privacy test --list` shows them
      rules:
        - name: corp-hosts            # [redacted:corp-hosts]
          regex: '[a-z0-9-]+\\.corp\\.example\\.com'
          source: shell               # match on source, kind and/or sense (each a name or list)
        - name: no-browser
          action: drop                # the event is not stored at all
          sense: browser
        - detector: card-number       # a detector for one scope only (named after it)
          source: shell
      files: {exclude: ["**/.env", "secrets/**"]}   # path globs, as the files sense reports
      shell: {exclude: ["pass", "vault *"]}         # a program name, or a glob on the command
      processes: {exclude: [keepassxc]}             # process names (globs)

A regex rule replaces its whole match, or only its ``(?P<secret>…)`` group when it has one.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic import model_validator as _model_validator
from pydantic_core import PydanticCustomError

from nerve.errors import EventError
from nerve.events import parse_source
from nerve.privacy.detectors import detector_names

__all__ = [
    "MODELS",
    "DetectorConfig",
    "ExcludeConfig",
    "PrivacyConfig",
    "RuleConfig",
]

_RULE_NAME = re.compile(r"[a-z][a-z0-9._-]*")


def _detector(name: str) -> str:
    known = detector_names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "one of " + ", ".join(known)
        raise PydanticCustomError(
            "nerve_detector", "unknown detector {name} ({hint})", {"name": repr(name), "hint": hint}
        )
    return name


def _rule_name(name: str) -> str:
    if not _RULE_NAME.fullmatch(name):
        raise PydanticCustomError(
            "nerve_rule_name",
            "rule name {name} must be lower-case letters, digits, '-', '_' or '.'",
            {"name": repr(name)},
        )
    return name


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise PydanticCustomError(
            "nerve_regex",
            "bad regex {pattern}: {reason}",
            {"pattern": repr(pattern), "reason": str(exc)},
        ) from None
    return pattern


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _non_empty(items: list[str]) -> list[str]:
    if any(not item.strip() for item in items):
        raise PydanticCustomError("nerve_empty", "entries must not be empty")
    return items


def _sources(names: list[str]) -> list[str]:
    for name in names:
        try:
            parse_source(name)
        except EventError as exc:
            raise PydanticCustomError("nerve_source", "{reason}", {"reason": str(exc)}) from None
    return names


DetectorName = Annotated[str, AfterValidator(_detector)]
RuleName = Annotated[str, AfterValidator(_rule_name)]
Names = Annotated[list[str], BeforeValidator(_one_or_many), AfterValidator(_non_empty)]
Sources = Annotated[Names, AfterValidator(_sources)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DetectorConfig(_Model):
    """The built-in pack: on for every event captured, less the ``disable``d detectors."""

    enabled: bool = True
    disable: list[DetectorName] = Field(default_factory=list)


class RuleConfig(_Model):
    """A regex or a detector, applied to events matching ``source``, ``kind`` and ``sense``
    (each empty means any); ``drop`` keeps the whole event out of the log."""

    name: RuleName | None = None
    regex: Annotated[str, AfterValidator(_regex)] | None = None
    detector: DetectorName | None = None
    action: Literal["redact", "drop"] = "redact"
    source: Sources = Field(default_factory=list)
    kind: Names = Field(default_factory=list)
    sense: Names = Field(default_factory=list)

    @_model_validator(mode="after")
    def _complete(self) -> RuleConfig:
        if self.regex is not None and self.detector is not None:
            raise PydanticCustomError(
                "nerve_rule", "give either regex or detector, not both", {"at_key": "detector"}
            )
        if self.action == "redact" and self.regex is None and self.detector is None:
            raise PydanticCustomError(
                "nerve_rule", "a redact rule needs a regex or a detector to say what to replace"
            )
        if self.name is None and self.detector is None:
            raise PydanticCustomError("nerve_rule", "required key 'name' is missing")
        if self.regex is not None and self.name in detector_names():
            raise PydanticCustomError(
                "nerve_rule",
                "{name} is a built-in detector's name; give the regex rule its own",
                {"name": repr(self.name), "at_key": "name"},
            )
        return self

    @property
    def label(self) -> str:
        """The name in ``[redacted:<name>]``: the rule's, else its detector's."""
        return self.name or self.detector or ""


class ExcludeConfig(_Model):
    """Observations a built-in sense makes that are never stored."""

    exclude: Names = Field(default_factory=list)


class PrivacyConfig(_Model):
    """A whole ``privacy:`` section."""

    detectors: DetectorConfig = Field(default_factory=DetectorConfig)
    rules: list[RuleConfig] = Field(default_factory=list)
    files: ExcludeConfig = Field(default_factory=ExcludeConfig)
    shell: ExcludeConfig = Field(default_factory=ExcludeConfig)
    processes: ExcludeConfig = Field(default_factory=ExcludeConfig)

    @_model_validator(mode="after")
    def _unique_names(self) -> PrivacyConfig:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.label in seen and rule.regex is not None:
                raise PydanticCustomError(
                    "nerve_rule", "two rules are named {name}", {"name": repr(rule.label)}
                )
            seen.add(rule.label)
        return self

    @property
    def active_detectors(self) -> list[str]:
        if not self.detectors.enabled:
            return []
        return [name for name in detector_names() if name not in self.detectors.disable]


MODELS = (PrivacyConfig, DetectorConfig, RuleConfig, ExcludeConfig)
