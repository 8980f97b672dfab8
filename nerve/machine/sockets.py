"""TCP sockets in LISTEN from the kernel's socket diagnostics (Linux netlink ``sock_diag``).

One request per address family asks the kernel for listening sockets only, so the cost does
not grow with the host's connections; psutil's ``net_connections`` reads every connection
and every process's open files for each call. What comes back is the address, port and
socket inode; the process holding a socket is found from the inode only when asked
(:func:`holders`), which a sense does for sockets it has not seen before.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterator
from typing import NamedTuple

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_TCP_LISTEN = 10
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, seq, pid
_REQUEST = struct.Struct("=BBBBI")  # inet_diag_req_v2 up to its (zeroed) 48-byte socket id
_MESSAGE = struct.Struct("=BBBB2s2s16s16sIQIIIII")  # inet_diag_msg
_RECV = 1 << 16


class Listening(NamedTuple):
    address: str
    port: int
    inode: int


def listening() -> list[Listening] | None:
    """The TCP sockets in LISTEN (IPv4 and IPv6), or None where netlink cannot say."""
    if not hasattr(socket, "AF_NETLINK"):
        return None
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as sock:
            found: list[Listening] = []
            for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
                found += _dump(sock, family, seq)
            return found
    except (OSError, struct.error):
        return None


def _dump(sock: socket.socket, family: int, seq: int) -> Iterator[Listening]:
    body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN) + bytes(48)
    flags = _NLM_F_REQUEST | _NLM_F_DUMP
    sock.send(_HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, flags, seq, 0) + body)
    while True:
        data = sock.recv(_RECV)
        if not data:
            return
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, kind, _, _, _ = _HEADER.unpack_from(data, offset)
            if kind == _NLMSG_DONE:
                return
            if kind == _NLMSG_ERROR or length < _HEADER.size:
                raise OSError("sock_diag refused the request")
            yield _parsed(data, offset + _HEADER.size)
            offset += (length + 3) & ~3


def _parsed(data: bytes, at: int) -> Listening:
    fields = _MESSAGE.unpack_from(data, at)
    family, port, src, inode = fields[0], fields[4], fields[6], fields[14]
    if family == socket.AF_INET:
        ip = socket.inet_ntop(socket.AF_INET, src[:4])
    else:
        ip = socket.inet_ntop(socket.AF_INET6, src)
    return Listening(ip, int.from_bytes(port, "big"), int(inode))


def holders(inodes: set[int]) -> dict[int, int]:
    """pid holding each of ``inodes`` (those found), from the processes' open files."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    found: dict[int, int] = {}
    if not wanted:
        return found
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                found |= _held(int(entry.name), wanted)
                if len(found) == len(wanted):
                    break
    return found


def _held(pid: int, wanted: dict[str, int]) -> dict[int, int]:
    folder = f"/proc/{pid}/fd"
    found: dict[int, int] = {}
    try:
        for fd in os.listdir(folder):
            inode = wanted.get(_link(f"{folder}/{fd}"))
            if inode is not None:
                found[inode] = pid
    except OSError:
        pass  # gone, or not ours to read
    return found


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""
