"""A sense's cut never splits a secret: a command line, a window title or a process's
command line with a secret placed across the cut is stored with the secret redacted, not
its first part in the clear."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.contract import Observation
from nerve.events import SourceClass
from nerve.log.drafts import Draft
from nerve.privacy.cut import shorten
from nerve.privacy.policy import Policy
from nerve.shellhook import SpoolRecord
from senses.focus import sense as focus
from senses.processes import sense as processes
from senses.shell import sense as shell

GHP = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
URL = "https://deploy:Hunter2Hunter2@deploy.example.com/app.git"
AWS = "AKIAIOSFODNN7EXAMPLE"
CORE = {GHP: "A1b2C3", URL: "Hunter2", AWS: "IOSF"}  # a part of each that tells it


def _across(limit: int, secret: str, *, before: int = 12) -> str:
    """Text whose ``secret`` starts ``before`` characters ahead of the cut at ``limit``."""
    return "x" * (limit - before - 1) + " " + secret + " and more after it"


def _stored(obs: Observation, sense: str) -> Draft:
    draft = Draft.of("observation", source=int(obs.source), line=obs.line,
                     payload=obs.payload, subject=sense)  # fmt: skip
    kept = Policy().capture(draft)
    assert kept is not None
    return kept


def _clear(draft: Draft, secret: str) -> bool:
    return CORE[secret] not in draft.line + draft.payload.decode()


def test_shorten_keeps_a_match_the_cut_would_split_whole() -> None:
    text = _across(120, GHP)
    assert shorten(text, 120) == text[: text.index(GHP) + len(GHP)]
    assert shorten("a" * 300, 120) == "a" * 120  # no secret: the cut as before
    assert shorten("short", 120) == "short"
    url = "git push " + URL
    assert shorten(url, 30).endswith("@")  # the whole match, which the rules recognise


@given(st.integers(min_value=1, max_value=len(AWS) - 1), st.sampled_from([GHP, URL, AWS]))
def test_no_cut_leaves_a_part_of_a_secret_the_rules_miss(before: int, secret: str) -> None:
    line = shorten(_across(120, secret, before=before), 120)
    kept = Policy().capture(Draft.of("observation", source=SourceClass.ENDPOINT, line=line))
    assert kept is not None
    assert CORE[secret] not in kept.line


@pytest.mark.parametrize("secret", [GHP, URL, AWS])
def test_the_shell_line_is_cut_after_the_secret(secret: str) -> None:
    command = _across(120, secret)
    history = _stored(shell._observation({"command": command, "timestamp": None}, "h"), "shell")
    record = SpoolRecord("bash", "1.1", 0, 0, 2, "/", command)
    hooked = _stored(shell._hook_observation(record, {}), "shell")
    for draft in (history, hooked):
        assert _clear(draft, secret), draft.line
        assert "[redacted:" in draft.line
    assert hooked.line.endswith(" [exit 2]")
    plain = "y" * 200
    assert shell._line(plain) == f"$ {'y' * 120}…"  # a clean command: cut as before
    failed = shell._hook_observation(SpoolRecord("bash", "1.1", 0, 0, 1, "/", plain), {})
    assert failed.line == f"$ {'y' * 120} [exit 1]"


def _quartz(title: str) -> Any:
    window = {"kCGWindowLayer": 0, "kCGWindowOwnerName": "Terminal",
              "kCGWindowName": title, "kCGWindowOwnerPID": 7, "kCGWindowNumber": 3}  # fmt: skip
    return SimpleNamespace(
        CGWindowListCopyWindowInfo=lambda *a: [window],
        CGEventSourceSecondsSinceLastEventType=lambda *a: 1.0,
        kCGWindowListOptionOnScreenOnly=1, kCGWindowListExcludeDesktopElements=2,
        kCGNullWindowID=0, kCGEventSourceStateHIDSystemState=1,
    )  # fmt: skip


@pytest.mark.parametrize("secret", [GHP, URL, AWS])
@pytest.mark.parametrize("cut", [200, 200 - len("focus Terminal: ")])
def test_the_focus_title_and_line_are_cut_after_the_secret(secret: str, cut: int) -> None:
    options = focus._Options(300_000, frozenset(), None, 0)
    seen, _ = focus._read_quartz(_quartz(_across(cut, secret)), options)
    assert seen is not None
    draft = _stored(focus._focused(seen, None), "focus")
    assert _clear(draft, secret), draft.line
    assert "[redacted:" in (draft.line if cut < 200 else json.loads(draft.payload)["title"])


@pytest.fixture
def leaky_process() -> Iterator[subprocess.Popen[bytes]]:
    arg = _across(200 - len(sys.executable) - 30, URL)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", arg])
    time.sleep(0.3)
    yield proc
    proc.kill()
    proc.wait()


def test_a_process_command_line_is_cut_after_the_secret(
    leaky_process: subprocess.Popen[bytes],
) -> None:
    cmdline = processes._cmdline(leaky_process.pid)
    assert "Hunter2Hunter2@" in cmdline  # the cut at 200 kept the whole match
    payload = {"event": "started", "cmdline": cmdline,
               "top": shorten(cmdline, processes._TOP_CMDLINE_MAX)}  # fmt: skip
    obs = Observation(SourceClass.PROCESS_TREE, "process started python", payload)
    assert _clear(_stored(obs, "processes"), URL)
