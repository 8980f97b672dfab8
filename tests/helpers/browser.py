"""What the UI tests share: a workspace with a day's events and attention decisions, the real
`nerve ui` process, and Debian's Chromium driven by Playwright (no browser is downloaded)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nerve.attention.service import replay
from nerve.attention.settings import parse_attention
from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers.lines import LineReader

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
XSS = [
    "<script>window.__pwned = 1</script>",
    '"><img src=x onerror="window.__pwned = 2">',
    "javascript:window.__pwned = 3",
]
STEP_NS = 3 * 10**9
CYCLE = 40
# Steady shell work, with app-focus switches and bursts of untrusted endpoint events: the
# attention gate surfaces some highlights and holds others (for value, then for budget).
ATTENTION = """
attention:
  window: 16
  detector: {warmup: 4, debounce: 3, k_milli: 2000}
  gate: {budget_capacity_uj: 500000, refill_uj_per_s: 1000}
  context: {modality_window: 2m}
  chain: {checkpoint_every: 4}
"""


def _observation(i: int, t0: int) -> Event:
    cycle, phase = divmod(i, CYCLE)
    if phase >= CYCLE - 4:
        source, trust = SourceClass.ENDPOINT, Trust.UNTRUSTED
    elif cycle % 2 == 1 and phase == 12:
        source, trust = SourceClass.APP_FOCUS, Trust.FIRST_PARTY
    else:
        source, trust = SourceClass.SHELL, Trust.FIRST_PARTY
    line = XSS[i % len(XSS)] if i % 97 == 5 else f"{source.name.lower()} make build #{i}"
    return Event(
        hlc=Hlc(t0 + i * STEP_NS, 0),
        node="n",
        kind="observation",
        subject=f"{source.name.lower()}-sense",
        source=int(source),
        trust=trust,
        line=line,
        payload={"i": i, "note": XSS[i % len(XSS)]},
    )


def attended_workspace(root: Path, *, cycles: int = 6, end_ns: int | None = None) -> WorkspaceDir:
    """Observations ending a minute before ``end_ns`` (now), hostile text among them, with
    attention replayed over them: decisions surfaced and held, sealed in the signed chain."""
    ws = init_workspace(root)
    (ws.root / "nerve.yaml").write_text("senses: {}\n" + ATTENTION)
    ws = WorkspaceDir(ws.root)
    count = cycles * CYCLE
    t0 = (end_ns or time.time_ns()) - 60 * 10**9 - count * STEP_NS
    with ws.open_log() as log:
        log.import_events([_observation(i, t0) for i in range(count)])
        replay(log, parse_attention(ws.config.attention), ws.data / "keys")
    return ws


def chromium_missing() -> str | None:
    """Why a browser test cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


class UiProcess:
    """A real `nerve ui` on a free loopback port (``args``: ``--port 0``, so many run at
    once), for one workspace; ``err`` is what it said on stderr, once stopped."""

    def __init__(
        self,
        root: Path,
        env: dict[str, str],
        preexec: Callable[[], None] | None = None,
        args: Sequence[str] = ("--port", "0"),
    ) -> None:
        self.err = ""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nerve", "--workspace", str(root), "ui", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1", **env},
            preexec_fn=preexec,  # noqa: PLW1509 (only setrlimit, before exec)
        )
        (self.login_url,) = LineReader(self.proc).take(1, timeout=60)
        self.base = self.login_url.split("/login")[0]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=20)
            if self.proc.stderr is not None and not self.proc.stderr.closed:  # stopped once
                self.err = self.proc.stderr.read().decode("utf-8", "replace")
            return code
        finally:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


@contextlib.contextmanager
def ui_process(
    root: Path, env: dict[str, str], preexec: Callable[[], None] | None = None
) -> Iterator[UiProcess]:
    ui = UiProcess(root, env, preexec)
    try:
        yield ui
    finally:
        ui.stop()


@contextlib.contextmanager
def chromium(downloads: Path) -> Iterator[Any]:
    """A Playwright browser context on Debian's Chromium, 1280×800, downloads accepted."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(
                viewport={"width": 1280, "height": 800}, accept_downloads=True
            )
            yield context
        finally:
            browser.close()
    shutil.rmtree(downloads, ignore_errors=True)


def wait_until(check: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def login_path(ws: Any) -> str:
    """``/login?token=<a new login code>`` for the workspace ``ws`` (its token made first)."""
    from nerve.ui.auth import Keys, token, token_path

    token(ws)
    return f"/login?token={Keys(token_path(ws)).login_code()}"
