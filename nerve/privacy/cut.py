"""Shortening text without splitting a secret.

Senses shorten what they report (a command line to 120 characters, a window title to 200)
before the privacy rules run at capture. A cut through a secret leaves its first part, which
no detector recognises any more (``ghp_A1b2…`` is too short to be a GitHub token). So
:func:`shorten` looks for the built-in detectors' matches in the whole text first, and a cut
that would fall inside one moves to that match's end: the secret stays whole, and the rules
replace it when the event is captured. A regex rule of the workspace's is not known where a
sense runs; only the built-in pack is.
"""

from __future__ import annotations

from collections.abc import Iterator

from nerve.privacy.detectors import BITS, DETECTORS, candidates
from nerve.privacy.scan import detector_pass

__all__ = ["shorten"]


def shorten(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, or past a detector match the cut would split."""
    if len(text) <= limit:
        return text
    end = limit
    for start, stop in sorted(_matches(text)):
        if start < end < stop:
            end = stop  # a later match may start before this end: it is looked at too
    return text[:end]


def _matches(text: str) -> Iterator[tuple[int, int]]:
    """The spans of every built-in detector's whole matches in ``text`` (not only their
    ``secret`` part: ``https://me:pw@`` without its ``@`` no longer matches)."""
    mask = candidates(text)
    for detector in DETECTORS:
        if not BITS[detector.name] & mask:
            continue
        step = detector_pass(detector.name)
        for match in step.any_case.finditer(text):
            if step.check is None or step.check(match.group()):
                yield match.span()
