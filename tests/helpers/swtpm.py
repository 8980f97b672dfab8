"""An emulated TPM behind libtpm2-pkcs11, for the tests of a key-encryption key kept in a TPM.

swtpm emulates the TPM on loopback TCP, in a temporary state folder. The TPM holds only
three transient objects at a time and ``tpm2_ptool`` (which drives ``tpm2-tools``) leaves
its objects loaded, so a resource manager stands between: ``tpm2-abrmd`` on a private D-Bus
session bus (its own ``dbus-daemon``, its socket in the folder). libtpm2-pkcs11 is pointed at
it by ``TPM2_PKCS11_TCTI=tabrmd:bus_type=session`` and at a store in the folder by
``TPM2_PKCS11_STORE``; ``tpm2_ptool`` makes a token and, in it, the HMAC-SHA256 key
``nerve-kek`` (libtpm2-pkcs11 cannot make one through ``C_GenerateKey``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PIN = "1234"
SO_PIN = "5678"
BUS_NAME = "com.intel.tss2.Tabrmd"
TCTI = "tabrmd:bus_type=session"
PUB_BLOB = 0x8F000002  # libtpm2-pkcs11's attribute holding a key's TPM2B_PUBLIC


def module() -> str | None:
    """Debian's libtpm2-pkcs11 module (under the machine's multiarch folder), if installed."""
    found = sorted(glob.glob("/usr/lib/*/pkcs11/libtpm2_pkcs11.so"))
    return found[0] if found else None


def why_not() -> str | None:
    """What is missing for an emulated TPM token here, or None."""
    tools = ("swtpm", "tpm2-abrmd", "tpm2_ptool", "tpm2_create", "dbus-daemon", "dbus-send")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if module() is None:
        missing.append("libtpm2_pkcs11.so")
    if missing:
        return f"missing {', '.join(missing)} (.ci/run installs swtpm, tpm2-abrmd, libtpm2-pkcs11)"
    return None


_MISSING = why_not()
needs_swtpm = pytest.mark.skipif(_MISSING is not None, reason=f"an emulated TPM: {_MISSING}")


def _free_port_pair() -> int:
    """A loopback port free with the one after it (swtpm's server and control ports)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port < 65535 and _free(port) and _free(port + 1):
            return port
    raise RuntimeError("no two free loopback ports in a row")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _until(what: str, ready: Callable[[], bool], timeout: float = 10) -> None:
    """Wait until ``ready()`` is true; ``RuntimeError`` naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout} s")
        time.sleep(0.05)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _bus_has(env: dict[str, str], name: str) -> bool:
    said = subprocess.run(
        ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/",
         "org.freedesktop.DBus.NameHasOwner", f"string:{name}"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    return "boolean true" in said.stdout


def _ptool(env: dict[str, str], *args: str) -> str:
    """What ``tpm2_ptool ARGS`` prints; ``RuntimeError`` with its complaint if it fails."""
    done = subprocess.run(["tpm2_ptool", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"tpm2_ptool {args[0]} failed: {done.stderr.strip()[-1000:]}")
    return done.stdout


@contextlib.contextmanager
def tpm_token(folder: Path, label: str, key_label: str) -> Iterator[str]:
    """A token ``label`` on an emulated TPM (user PIN :data:`PIN`) holding the HMAC-SHA256
    key ``key_label``, reached by libtpm2-pkcs11 in this process and those it starts (their
    environment names the bus, the resource manager and the store); yields the module.

    The module reads its environment when it is initialised, once per process, so it is
    initialised again here."""
    import pkcs11

    lib = module()
    assert lib is not None
    port = _free_port_pair()
    store, state = folder / "store", folder / "state"
    store.mkdir()
    state.mkdir()
    env = {
        **os.environ,
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={folder / 'bus'}",
        "TPM2_PKCS11_TCTI": TCTI,
        "TPM2TOOLS_TCTI": TCTI,
        "TPM2_PKCS11_STORE": str(store),
    }
    with contextlib.ExitStack() as stack:
        swtpm = _start(stack, folder, "swtpm", [
            "swtpm", "socket", "--tpm2", "--tpmstate", f"dir={state}",
            "--server", f"type=tcp,port={port},bindaddr=127.0.0.1",
            "--ctrl", f"type=tcp,port={port + 1},bindaddr=127.0.0.1",
            "--flags", "not-need-init,startup-clear",
        ], env)  # fmt: skip
        _until("swtpm", lambda: _alive(swtpm, folder, "swtpm") and _listening(port))
        _start(stack, folder, "dbus", [
            "dbus-daemon", "--session", "--nofork", "--nopidfile",
            f"--address=unix:path={folder / 'bus'}",
        ], env)  # fmt: skip
        _until("the D-Bus session bus", (folder / "bus").exists)
        _start(stack, folder, "abrmd", [
            "tpm2-abrmd", "--session", "--allow-root", f"--dbus-name={BUS_NAME}",
            f"--tcti=swtpm:host=127.0.0.1,port={port}",
        ], env)  # fmt: skip
        _until("tpm2-abrmd", lambda: _bus_has(env, BUS_NAME))
        _ptool(env, "init", f"--path={store}")
        _ptool(env, "addtoken", "--pid=1", f"--label={label}", f"--userpin={PIN}",
               f"--sopin={SO_PIN}", f"--path={store}")  # fmt: skip
        _ptool(env, "addkey", f"--label={label}", f"--key-label={key_label}",
               "--algorithm=hmac:sha256", f"--userpin={PIN}", f"--path={store}")  # fmt: skip
        stack.enter_context(_environment(env))
        pkcs11.lib(lib).reinitialize()
        yield lib


def _start(
    stack: contextlib.ExitStack, folder: Path, name: str, argv: list[str], env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (its output in ``folder/NAME.log``), stopped when ``stack`` closes."""
    out = stack.enter_context((folder / f"{name}.log").open("wb"))
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    stack.callback(_end, proc)
    return proc


def _alive(proc: subprocess.Popen[bytes], folder: Path, name: str) -> bool:
    """True while ``proc`` runs; ``RuntimeError`` with its output once it has exited (swtpm
    whose port was taken meanwhile: then another process answers on it)."""
    if proc.poll() is None:
        return True
    said = (folder / f"{name}.log").read_text(errors="replace").strip()
    raise RuntimeError(f"{name} exited {proc.returncode}: {said[-500:]}")


def _end(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def key_public(store: Path, token: str) -> bytes:
    """The TPM2B_PUBLIC of the one key on ``token`` in the libtpm2-pkcs11 ``store``, as the
    store keeps it (read with ``tpm2_ptool``)."""
    env = {**os.environ, "TPM2_PKCS11_STORE": str(store)}
    listed = _ptool(env, "listobjects", f"--label={token}", f"--path={store}")
    (key_id,) = [line.split(":")[1].strip() for line in listed.splitlines() if "id:" in line]
    shown = _ptool(env, "objmod", f"--id={key_id}", f"--path={store}")
    (blob,) = [line.split(":")[1] for line in shown.splitlines() if line.startswith(f"{PUB_BLOB}:")]
    return bytes.fromhex(blob.strip())


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """This process's environment set to ``env``'s TPM variables for the block, then back."""
    names = ("DBUS_SESSION_BUS_ADDRESS", "TPM2_PKCS11_TCTI", "TPM2_PKCS11_STORE")
    old = {name: os.environ.get(name) for name in names}
    os.environ.update({name: env[name] for name in names})
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
