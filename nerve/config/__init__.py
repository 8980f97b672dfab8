"""``nerve.yaml``: loading and validating it, with errors that point at a line.

A workspace's ``nerve.yaml`` declares senses, reflexes (which only schedule senses), workflows
and a few engine settings. Loading it is strict: every problem is collected as a
:class:`~nerve.config.issues.ConfigIssue` naming file, line, column and the YAML path
(``senses.cpu.throttle``, ``reflexes[0].on[1]``, ``attention.budget_uj``), and all of them
are raised together in one :class:`~nerve.config.issues.InvalidConfig`.

    nerve/config/models.py   the models, one per section (NerveConfig for the whole file)
    nerve/config/recall.py   the ``recall:`` section
    nerve/config/yamlmap.py  YAML with positions; pydantic errors to located issues
    nerve/config/issues.py   ConfigIssue and InvalidConfig
    nerve/durations.py       ``500ms``, ``10s``, ``2m`` as milliseconds
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nerve.config.issues import ConfigIssue, InvalidConfig
from nerve.config.models import OLD_OVERFLOW, NerveConfig
from nerve.config.yamlmap import YamlDoc, YamlPath, issues_from_validation, load_yaml, show

__all__ = ["config_hints", "load_config", "parse_config", "validate_config"]


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
@functools.lru_cache(maxsize=8)
def parse_config(text: str, filename: str = "nerve.yaml") -> NerveConfig:
    """Validate ``nerve.yaml`` text; raise :class:`InvalidConfig` listing every problem.
    The same text gives the same (frozen) config, so a long-lived process asking often
    parses a file once per change."""
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
        message = f"the top level must be a mapping of settings (got {show(doc.data)})"
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
