"""A daemon socket at any path: ``sun_path`` holds 107 bytes, and a workspace can be anywhere
(a long user name, a deep folder). Served and reached through ``nerve.runtime.sockaddr``, on
Linux by ``/proc/self/fd`` and, as where there is no ``/proc`` (macOS), by a short link."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.errors import DaemonError, UnsafePath
from nerve.runtime import ipc, sockaddr
from nerve.runtime.sockaddr import unix_address
from tests.helpers.longpath import path_of


@pytest.fixture(params=["proc", "links"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each way to a long path: ``/proc/self/fd``, and links in a private folder as on a
    system without ``/proc``."""
    if request.param == "links":
        monkeypatch.setattr(sockaddr, "PROC_FDS", Path("/nonexistent/proc/self/fd"))
        with tempfile.TemporaryDirectory(prefix="nrun") as run:
            monkeypatch.setenv("XDG_RUNTIME_DIR", run)
            yield request.param
    else:
        yield request.param


async def _answer(request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "type": request["type"]}


async def _two_lines(
    request: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    writer.write(b'{"ok":true}\n{"n":1}\n{"n":2}\n')
    await writer.drain()


def _server(path: Path) -> ipc.IpcServer:
    return ipc.IpcServer(path, _answer, streams={"follow": _two_lines})


def _stream(path: Path) -> list[bytes]:
    stream = ipc.LineStream(path, {"type": "follow"})
    try:
        return [line for lines in stream.lines() for line in lines]
    finally:
        stream.close()


async def _serve_and_ask(path: Path) -> None:
    server = _server(path)
    await server.start()
    try:
        info = os.lstat(path)
        assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        reply = await asyncio.to_thread(ipc.request, path, {"type": "status"})
        assert reply == {"ok": True, "type": "status"}
        assert await asyncio.to_thread(_stream, path) == [b'{"n":1}', b'{"n":2}']
        with pytest.raises(DaemonError, match="already listening"):  # from another loop
            await asyncio.to_thread(asyncio.run, _server(path).start())
        assert stat.S_ISSOCK(os.lstat(path).st_mode)  # the refused one left it alone
    finally:
        await server.close()
    assert not path.exists()
    assert not await asyncio.to_thread(ipc.ping, path)


@pytest.mark.parametrize("size", [108, 150, 4000])
def test_a_socket_at_any_length_serves_streams_and_refuses_a_second(
    tmp_path: Path, way: str, size: int
) -> None:
    path = path_of(tmp_path, size)
    asyncio.run(_serve_and_ask(path))


def _leave_stale(path: Path) -> None:
    """A socket file at ``path`` with nobody listening: what a killed daemon leaves."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, unix_address(path) as at:
        sock.bind(at)


async def _start_over_stale(path: Path) -> None:
    server = _server(path)
    await server.start()
    try:
        assert (await asyncio.to_thread(ipc.request, path, {"type": "x"}))["ok"]
    finally:
        await server.close()


def test_a_stale_socket_at_a_long_path_is_cleared(tmp_path: Path, way: str) -> None:
    path = path_of(tmp_path, 150)
    path.parent.mkdir(parents=True)
    _leave_stale(path)
    assert stat.S_ISSOCK(os.lstat(path).st_mode) and not ipc.ping(path)
    asyncio.run(_start_over_stale(path))


def test_a_path_past_path_max_is_one_clear_error(tmp_path: Path) -> None:
    path = path_of(tmp_path, sockaddr.path_max() + 10)
    with pytest.raises(DaemonError, match=r"PATH_MAX \d+\): /") as caught:
        asyncio.run(_server(path).start())
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(DaemonError, match="PATH_MAX"):
        ipc.request(path, {"type": "status"})


def test_links_go_in_a_private_folder_and_follow_a_moved_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tempfile.TemporaryDirectory(prefix="nrun") as run:
        monkeypatch.setenv("XDG_RUNTIME_DIR", run)
        links = sockaddr.runtime_dir()
        assert stat.S_IMODE(os.lstat(links).st_mode) == 0o700
        (tmp_path / "a").mkdir()
        link = sockaddr.folder_link(tmp_path / "a", links)
        assert sockaddr.folder_link(tmp_path / "a", links) == link
        os.replace(link, links / "elsewhere")
        os.symlink(tmp_path, link)  # pointing at another folder: replaced, not trusted
        assert os.readlink(sockaddr.folder_link(tmp_path / "a", links)) == str(tmp_path / "a")
        os.chmod(links, 0o755)
        with pytest.raises(UnsafePath, match="only they can enter"):
            sockaddr.runtime_dir()
