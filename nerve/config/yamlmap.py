"""YAML read with the position of every entry, and pydantic errors turned into issues there.

Used for ``nerve.yaml`` and for other workspace files read with line numbers, such as
check manifests.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from nerve.config.issues import ConfigIssue, InvalidConfig

__all__ = ["YamlDoc", "YamlPath", "format_path", "issues_from_validation", "load_yaml", "show"]

YamlPath = tuple[str | int, ...]

# An alias bomb or a self-referencing anchor must end in a clear error, not a hang.
_MAX_NODES = 100_000
_MAX_DEPTH = 64
_TOO_DEEP = f"YAML is nested too deeply to read (at most {_MAX_DEPTH} levels are allowed)"
_MAX_BYTES = 1 << 20  # a nerve.yaml is a few KiB; past this it is not a configuration
_MAX_DIGITS = 4300  # Python's own limit on int(text)
_INTEGER = re.compile(r"[-+]?[0-9][0-9_]*")  # decimal: the base int() limits


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
        raise InvalidConfig([ConfigIssue(filename, None, None, "", _TOO_DEEP)]) from None
    except TypeError:  # a key that is a list or a mapping (`? [a, b]`): it cannot be hashed
        issue = ConfigIssue(filename, None, None, "", "invalid YAML: a key must be a plain value")
        raise InvalidConfig([issue]) from None
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
            if len(open_nodes) > _MAX_DEPTH:  # here: the parser slows on deep text (47 s)
                raise InvalidConfig([_marked(event, filename, first_line, _TOO_DEEP)])
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
        return f"must be {ctx['expected']} (got {show(value)})"
    return _generic(detail["msg"], value)


def _unknown_key(key: str) -> str:
    from nerve.config.models import KNOWN_KEYS  # only for a key nothing knows

    close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
    return f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _generic(message: str, value: Any) -> str:
    text = message.replace("Input should be", "must be").replace("Value error, ", "")
    return f"{text} (got {show(value)})"


def show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
