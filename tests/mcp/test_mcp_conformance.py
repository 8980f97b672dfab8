"""The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, on Node 22
from npm's `node@22`) against a real `nerve mcp --http`, through a proxy adding the token.

`.ci/run` installs both under ``NERVE_NPM_DIR`` and sets ``NERVE_REQUIRE_CONFORMANCE=1``:
there a missing suite fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.helpers.mcp_proxy import HeaderProxy

ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = Path(os.environ.get("NERVE_NPM_DIR", ROOT / ".ci" / "npm"))
BIN = NPM_DIR / "node_modules" / ".bin"
PASSING = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
]
# Each passes, or the server does not declare the capability it needs (as the spec asks).
OPTIONAL = {"logging-set-level": "logging", "completion-complete": "completions"}


def _suite() -> Path:
    tool = BIN / "conformance"
    if not (tool.exists() and (BIN / "node").exists()):
        why = f"the MCP conformance suite is not installed under {NPM_DIR} (.ci/run installs it)"
        if os.environ.get("NERVE_REQUIRE_CONFORMANCE") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return tool


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, object]]]:
    """The proxy's URL, and the capabilities nerve declares."""
    _suite()
    tmp = tmp_path_factory.mktemp("mcp-conformance")
    root = init_workspace(tmp / "ws").root
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "nerve", "--workspace", str(root), "mcp", "--http", "127.0.0.1:0"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"serving (\S+)", line)
        assert found, line
        token = run_cli("--workspace", str(root), "mcp", "token", env=env).stdout.strip()
        with HeaderProxy(found.group(1), ("Authorization", f"Bearer {token}")) as proxy:
            yield proxy.url, _capabilities(proxy.url)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def _capabilities(url: str) -> dict[str, object]:
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "capabilities-probe", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    reply = httpx2.post(url, json=hello, headers=headers, timeout=60)
    text = reply.text
    body = text if text.lstrip().startswith("{") else _sse_data(text)
    return dict(json.loads(body)["result"]["capabilities"])


def _sse_data(text: str) -> str:
    return next(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))


def _run(url: str, scenario: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [str(_suite()), "server", "--url", url, "--scenario", scenario, "-o", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("scenario", PASSING)
def test_the_official_suite_passes(
    served: tuple[str, dict[str, object]], scenario: str, tmp_path: Path
) -> None:
    proc = _run(served[0], scenario, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("scenario", sorted(OPTIONAL))
def test_a_capability_is_declared_only_when_its_scenario_passes(
    served: tuple[str, dict[str, object]], scenario: str, tmp_path: Path
) -> None:
    url, capabilities = served
    if OPTIONAL[scenario] not in capabilities:
        return  # absent from the declared capabilities, as the spec requires of a server without it
    proc = _run(url, scenario, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
