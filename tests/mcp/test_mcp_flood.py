"""`nerve mcp --http` under a local crowd: 2,000 connections that never finish a request,
against the real server at the default open-file limit; the token's holder still gets in, and
the server does not exit."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.helpers.flood import alive, crowd, default_file_limit, status, within

HELLO = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "owner", "version": "1"}},
}  # fmt: skip


def test_the_token_holder_gets_in_while_two_thousand_connections_hang(tmp_path: Path) -> None:
    root = init_workspace(tmp_path / "ws").root
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "NO_COLOR": "1"}
    secret = run_cli("--workspace", str(root), "mcp", "token", env=env).stdout.strip()
    cmd = [sys.executable, "-m", "nerve", "--workspace", str(root), "mcp", "--http", "127.0.0.1:0"]
    proc = subprocess.Popen(
        cmd,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_file_limit,  # noqa: PLW1509 (only setrlimit, before exec)
    )
    try:
        assert proc.stderr is not None
        found = re.search(r"serving (http://127\.0\.0\.1:(\d+)/mcp)", proc.stderr.readline())
        assert found
        url, port = found.group(1), int(found.group(2))
        headers = {
            "authorization": f"Bearer {secret}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }

        def owner() -> int:
            return status(url, headers, json.dumps(HELLO).encode())

        with crowd(port) as held:
            assert alive(proc)
            assert held >= 1_900
            assert within(6, owner) == 200
        assert within(6, owner) == 200
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
