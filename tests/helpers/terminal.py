"""The CLI run in this process with stdout on a stand-in terminal of a given size."""

from __future__ import annotations

import io
import re
import sys

import pytest

from nerve.cli.main import run

_STYLE = re.compile(r"\x1b\[[0-9;]*m")


class FakeTerminal(io.StringIO):
    """Says it is a terminal; has no file descriptor, so nothing can page it."""

    def isatty(self) -> bool:
        return True


def sized(monkeypatch: pytest.MonkeyPatch, width: int, height: int) -> FakeTerminal:
    """A stand-in terminal of ``width`` × ``height`` for ``sys.stdout`` (stderr kept)."""
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("LINES", str(height))
    monkeypatch.setenv("NO_COLOR", "1")
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", term)
    return term


def drawn(monkeypatch: pytest.MonkeyPatch, width: int, height: int, *argv: str) -> str:
    """What ``nerve ARGV`` shows on the terminal, then what it says on stderr (styles out)."""
    term, err = sized(monkeypatch, width, height), io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as done:
        run(list(argv))
    assert done.value.code in (0, None), err.getvalue()
    return _STYLE.sub("", term.getvalue()) + _STYLE.sub("", err.getvalue())


def plain(text: str) -> str:
    return _STYLE.sub("", text)
