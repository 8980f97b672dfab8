"""`nerve.tokens`: where a workspace's token lives, how it is made, read and compared."""

from __future__ import annotations

import os
from pathlib import Path

import blake3
import pytest

from nerve import fsio, tokens


def _digest(root: Path) -> str:
    return blake3.blake3(os.fsencode(root)).hexdigest()[:32]


def test_the_token_lives_under_xdg_state_home_by_the_workspace_digest(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    path = tokens.token_path(root, "ui", env)
    assert path == tmp_path / "state" / "nerve" / "ui" / f"{_digest(root)}.token"
    assert tokens.token_path(tmp_path / "other", "ui", env) != path


def test_without_xdg_state_home_the_token_lives_in_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))  # not the one given
    root = tmp_path / "ws"
    home = tmp_path / "home" / ".local" / "state" / "nerve" / "mcp" / f"{_digest(root)}.token"
    assert tokens.token_path(root, "mcp", {}) == home
    assert tokens.token_path(root, "mcp", {"XDG_STATE_HOME": ""}) == home


def test_a_workspace_path_that_is_not_utf8_has_its_own_token(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/ws-\xff"))
    path = tokens.token_path(odd, "ui", env)
    assert path.name == f"{_digest(odd)}.token"


def test_a_token_is_made_once_kept_and_replaced_on_rotate(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    first = tokens.token(tmp_path / "ws", "ui", site="ui.token", environ=env)
    assert len(first) == 43  # 32 random bytes, url-safe base64
    assert tokens.token(tmp_path / "ws", "ui", site="ui.token", environ=env) == first
    path = tokens.token_path(tmp_path / "ws", "ui", env)
    assert tokens.read(path) == first
    second = tokens.token(tmp_path / "ws", "ui", site="ui.token", rotate=True, environ=env)
    assert second != first and tokens.read(path) == second


def test_a_token_write_fails_at_the_site_it_names(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    with fsio.inject("mcp.token") as fault, pytest.raises(OSError):
        tokens.token(tmp_path / "ws", "mcp", site="mcp.token", environ=env)
    assert fault.fired == 1
    assert tokens.read(tokens.token_path(tmp_path / "ws", "mcp", env)) is None


def test_a_damaged_token_file_reads_as_text_that_matches_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.token"
    path.write_bytes(b"\xff\xfeabc\n")
    text = tokens.read(path)
    assert text == "\ufffd\ufffdabc"
    assert not tokens.matches(text, "abc")
    path.write_bytes(b" \n")
    assert tokens.read(path) is None
    assert tokens.read(tmp_path / "missing.token") is None


def test_no_stored_token_matches_nothing() -> None:
    assert not tokens.matches(None, "abc") and not tokens.matches(None, "")
    assert not tokens.matches("", "") and not tokens.matches("", "a")
    assert tokens.matches("abc", "abc") and not tokens.matches("abc", "")
