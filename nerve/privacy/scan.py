"""Replacing secrets in text and in JSON payloads, and counting which rules fired.

A :class:`Redactor` runs the built-in detectors it was given (each only where
:func:`~nerve.privacy.detectors.candidates` says it may match), then the regex rules, over a
``line`` and every string of a JSON payload. Matches become ``[redacted:<rule>]``; the counts
say which rules fired, never what they matched. A payload is only decoded when its JSON text
might hold a match, so a clean event costs a few substring tests.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from nerve.canonical import canonical_json
from nerve.events import decode_payload
from nerve.privacy.detectors import BITS, DETECTORS, SECRET_KEYWORDS, candidates

__all__ = ["MARKER", "Counts", "Pass", "Redactor", "label", "merge_counts"]

MARKER = "_redacted"  # the payload field that records which rules fired
Counts = dict[str, int]
_REDACTED = "[redacted:"
_WORD = re.compile(r"\w+")
_NON_WORD = re.compile(r"\W+")
_SECRET_KEY = re.compile(rf"(?i:{SECRET_KEYWORDS})\Z")


def label(rule: str) -> str:
    return f"{_REDACTED}{rule}]"


def merge_counts(*parts: Counts) -> Counts:
    """Per rule, the largest count among ``parts`` (a line usually repeats its payload, so
    one secret in both counts once), sorted by rule name."""
    out: Counts = {}
    for part in parts:
        for rule, count in part.items():
            out[rule] = max(out.get(rule, 0), count)
    return dict(sorted(out.items()))


class Pass:
    """One rule's regex: its matches, or only their ``secret…`` groups, become its label.

    A ``folded`` pass holds a lower-case pattern run over the lower-cased text (much faster
    than a case-insensitive one); the spans it finds are replaced in the original text.
    """

    __slots__ = ("any_case", "check", "folded", "groups", "label", "name", "rx")

    def __init__(
        self,
        name: str,
        rx: re.Pattern[str],
        check: Callable[[str], bool] | None = None,
        *,
        folded: bool = False,
    ) -> None:
        self.name, self.rx, self.check, self.folded = name, rx, check, folded
        self.any_case = re.compile(rx.pattern, re.IGNORECASE) if folded else rx
        self.label = label(name)
        self.groups = tuple(g for g in rx.groupindex if g.startswith("secret"))

    def sub(self, text: str, counts: Counts) -> str:
        spans = self.spans(text)
        if not spans:
            return text
        counts[self.name] = counts.get(self.name, 0) + len(spans)
        return _replaced(text, spans, self.label)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """What to replace in ``text``: each match, or its ``secret…`` group."""
        target, rx = text, self.rx
        if self.folded:
            low = text.lower()
            if len(low) == len(text):  # then every character kept its place
                target = low
            else:
                rx = self.any_case
        if self.check is not None:
            return list(self._checked(target, rx))
        return [self._span(m) for m in rx.finditer(target)]

    def _span(self, match: re.Match[str]) -> tuple[int, int]:
        for group in self.groups:
            start, end = match.span(group)
            if start >= 0:
                return start, end
        return match.span()

    def _checked(self, text: str, rx: re.Pattern[str]) -> Iterator[tuple[int, int]]:
        """Spans that match and pass the check. A vetoed match is retried with fewer words
        at its end, then from its next word on: a greedy match can swallow a number just
        before or after a card's."""
        pos = 0
        while (match := rx.search(text, pos)) is not None:
            start = match.start()
            end = self._passing_end(text, rx, start, match.end())
            if end is not None:
                yield start, end
                pos = end
            elif (gap := _NON_WORD.search(text, start)) is not None:
                pos = gap.end()
            else:
                return

    def _passing_end(self, text: str, rx: re.Pattern[str], start: int, stop: int) -> int | None:
        assert self.check is not None
        ends = [m.end() + start for m in _WORD.finditer(text[start:stop])]
        for end in reversed(ends):
            part = text[start:end]
            if self.check(part) and rx.fullmatch(part):
                return end
        return None

    def found(self, text: str) -> bool:
        """Whether ``sub`` would replace anything in ``text``."""
        return bool(self.spans(text))


def _replaced(text: str, spans: list[tuple[int, int]], label: str) -> str:
    out, done = [], 0
    for start, end in spans:
        out += [text[done:start], label]
        done = end
    return "".join([*out, text[done:]])


@functools.cache
def detector_pass(name: str) -> Pass:
    """The compiled pass of one built-in detector (compiled on first use)."""
    detector = next(d for d in DETECTORS if d.name == name)
    return Pass(name, re.compile(detector.pattern), detector.check, folded=detector.folded)


class Redactor:
    """Built-in detectors (in the pack's order: specific tokens before generic assignments,
    so ``TOKEN=ghp_…`` is credited to ``github-token``), then regex rules, in order."""

    def __init__(self, detectors: Iterable[str] = (), rules: Iterable[Pass] = ()) -> None:
        chosen = set(detectors)
        self.detectors = [
            (BITS[d.name], detector_pass(d.name)) for d in DETECTORS if d.name in chosen
        ]
        self.mask = sum(bit for bit, _ in self.detectors)
        self.rules = list(rules)
        self.secret_keys = "password-assignment" in chosen

    def __bool__(self) -> bool:
        return bool(self.detectors or self.rules)

    def text(self, text: str, counts: Counts) -> str:
        mask = candidates(text) & self.mask if self.mask else 0
        if mask:
            for bit, step in self.detectors:
                if bit & mask:
                    text = step.sub(text, counts)
        for rule in self.rules:
            text = rule.sub(text, counts)
        return text

    def untouched(self, line: str, payload: bytes, subject: str = "") -> bool:
        """Whether nothing in ``line``, ``subject`` or ``payload`` can match: a few substring
        tests, so a clean event (most of them) costs no more."""
        if self.rules:
            return False
        if not self.mask:
            return True
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            text = ""  # binary: there is no text to scan
        return "\\" not in text and not candidates(f"{line}\n{subject}\n{text}") & self.mask

    def found(self, text: str) -> bool:
        """Whether a detector's regex matches anywhere in ``text`` (checks not applied).

        On a payload's JSON text (no escapes in it) this finds whatever a scan of its
        strings would, and more: every string is there verbatim, between quotes.
        """
        mask = candidates(text) & self.mask if self.mask else 0
        return bool(mask) and any(step.found(text) for bit, step in self.detectors if bit & mask)

    def value(self, value: Any, counts: Counts) -> Any:
        """A JSON value with every string redacted; under a key that names a secret
        (``"password"``, ``"api_key"``) the whole scalar value is."""
        if isinstance(value, str):
            return self.text(value, counts)
        if isinstance(value, list):
            return [self.value(v, counts) for v in value]
        if isinstance(value, dict):
            return _keyed(
                (self.text(k, counts), self._entry(k, v, counts)) for k, v in value.items()
            )
        return value

    def _entry(self, key: str, value: Any, counts: Counts) -> Any:
        if (
            self.secret_keys
            and isinstance(value, str | int | float)
            and not isinstance(value, bool)
            and value != ""
            and not (isinstance(value, str) and value.startswith((_REDACTED, "$")))
            and _SECRET_KEY.search(key)
        ):
            counts["password-assignment"] = counts.get("password-assignment", 0) + 1
            return label("password-assignment")
        return self.value(value, counts)

    def payload(self, data: bytes, counts: Counts) -> Any:
        """The payload's redacted value (JSON, or text when it is not JSON), or ``data``
        itself when nothing in it can match (then ``counts`` stays as it was)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data  # binary: there is no text to scan
        if not self.rules and "\\" not in text and not self.found(text):
            return data
        value = decode_payload(data)
        if value is None and text.strip() != "null":
            return self.text(text, counts)
        return self.value(value, counts)

    def event(self, line: str, payload: bytes) -> tuple[str, bytes, Counts]:
        """``line`` and payload bytes redacted, and the counts; the payload records them
        in a ``_redacted`` field (a payload that is not an object is wrapped as ``value``)."""
        new_line, _, new_payload, counts = self.fields(line, "", payload)
        return new_line, new_payload, counts

    def fields(self, line: str, subject: str, payload: bytes) -> tuple[str, str, bytes, Counts]:
        """An event's ``line``, ``subject`` and payload bytes redacted, and the counts (a
        secret the line repeats from the subject or payload counts once), recorded in the
        payload's ``_redacted`` field."""
        line_counts: Counts = {}
        subject_counts: Counts = {}
        payload_counts: Counts = {}
        new_line = self.text(line, line_counts) if line else line
        new_subject = self.text(subject, subject_counts) if subject else subject
        value = self.payload(payload, payload_counts) if payload else None
        counts = merge_counts(line_counts, subject_counts, payload_counts)
        if not counts:
            return line, subject, payload, counts
        marked = canonical_json(_marked(value, payload, counts))
        return new_line, new_subject, marked, counts


def _keyed(entries: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """An object from redacted keys and their values: a key is text a rule may hide as much
    as a value; two keys redacted alike both stay (the second as ``<key> #2``)."""
    out: dict[str, Any] = {}
    for key, value in entries:
        name, n = key, 1
        while name in out:
            n += 1
            name = f"{key} #{n}"
        out[name] = value
    return out


def _marked(value: Any, original: bytes, counts: Counts) -> Any:
    if value is original:  # unchanged: only the line fired
        value = _as_value(original)
    if isinstance(value, dict):
        return {**value, MARKER: counts}
    return {MARKER: counts} if value is None else {MARKER: counts, "value": value}


def _as_value(data: bytes) -> Any:
    """Payload bytes as a JSON value: JSON, else its text, else base64 under ``b64``."""
    value = decode_payload(data)
    if value is not None or not data or data.strip() == b"null":
        return value
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode()}
