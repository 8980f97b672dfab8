"""Encryption at rest: an envelope around each file (or WAL frame) that holds event content.

Key hierarchy::

    key file (≥ 32 bytes) ─────┐
    passphrase ─ Argon2id ─────┤
    systemd-creds (TPM2) ──────┤
    PKCS#11 token ─ HMAC ──────┴─▶ key-encryption key (KEK) ─ wraps ─▶ data key (DEK, 32 bytes)

(the token's key never leaves it: :mod:`nerve.log.tokenkek`).

The wrapped data key lives in ``keyring.json`` at the log's root, beside the manifest; its
presence is what makes a log encrypted. Rotation re-wraps the same data key under a new KEK
(one atomic file replace), so no segment is rewritten.

An envelope is ``b"NENC\\x01" | key id (8) | nonce (24) | XChaCha20-Poly1305(content)``, the
first 13 bytes bound as associated data. The nonce is a keyed blake3 of the content, so the
same plaintext always encrypts to the same bytes: a segment's name (the blake3 of the bytes on
disk) stays deterministic, and the manifest chain and every segment's address verify without
the key. Event ids and the replay digest are over plaintext fields and do not change.

Unlocked data keys live in this process only (:data:`_UNLOCKED`, by key id): readers find the
key an envelope names there, writers the one of their log's keyring (:func:`cipher_for`).
"""

from __future__ import annotations

import collections
import contextlib
import getpass
import json
import os
import stat
import struct
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3
from nacl import bindings, pwhash, secret, utils
from nacl.exceptions import CryptoError

from nerve import fsio
from nerve.errors import LogCorrupt, LogError
from nerve.log import tokenkek
from nerve.pkcs11token import TokenError, TokenRef, WrongPin

KEYRING = "keyring.json"
MAGIC = b"NENC\x01"  # one encrypted body (a WAL frame's, a log line's)
FILE_MAGIC = b"NENC\x02"  # a file in encrypted chunks: any range opens without the rest
_HEAD = len(MAGIC) + 8  # magic + key id: the associated data
_FILE_HEAD = struct.Struct(">5s8s16sIQ")  # magic, key id, file nonce, chunk size, length
CHUNK = 1 << 20
_NONCE = bindings.crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
OVERHEAD = _HEAD + _NONCE + bindings.crypto_aead_xchacha20poly1305_ietf_ABYTES
KEY_BYTES = 32
KEY_FILE_HEADER = "nerve-key-1 "  # what `nerve key new` writes: header, 64 hex, check
CIPHER_NAME = "xchacha20poly1305"
ENV_KEY_FILE = "NERVE_KEY_FILE"
ENV_PASSPHRASE = "NERVE_PASSPHRASE"
ENV_KEY_FILE_FORCE = "NERVE_KEY_FILE_FORCE"  # "1": use a key file others may read, or in data/
_UNLOCK_HINT = f"set {ENV_KEY_FILE}=PATH (or {ENV_PASSPHRASE}, or answer the prompt on a terminal)"


class KeyMissing(LogError):
    """Encrypted content was asked for and no key that opens it is unlocked."""


class WrongKey(LogError):
    """The key given does not open the log's data key, or is an empty passphrase (nothing
    was written)."""


class KeyFileError(LogError):
    """A key file cannot be used: missing, not a regular file, too short, truncated or
    otherwise damaged; or exposed (others may read it, or it is kept under ``data/``)."""


@dataclass(frozen=True)
class Cipher:
    """An unlocked data key."""

    key: bytes

    @property
    def key_id(self) -> bytes:
        return blake3.blake3(self.key, derive_key_context="nerve 2026 key id").digest(8)

    def encrypt(self, content: bytes | memoryview) -> bytes:
        head = MAGIC + self.key_id
        nonce = blake3.blake3(content, key=self._nonce_key()).digest(_NONCE)
        body = bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
            bytes(content), head, nonce, self.key
        )
        return head + nonce + body

    def decrypt(self, data: bytes | memoryview, where: object) -> bytes:
        view = memoryview(data)
        nonce = bytes(view[_HEAD : _HEAD + _NONCE])
        try:
            return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
                bytes(view[_HEAD + _NONCE :]), bytes(view[:_HEAD]), nonce, self.key
            )
        except CryptoError:
            raise LogCorrupt(f"{where}: encrypted content fails its authentication tag") from None

    def encrypt_file(self, content: bytes | memoryview) -> bytes:
        """A file's bytes in encrypted chunks of :data:`CHUNK`: chunk ``i`` is encrypted with the
        nonce ``file nonce | i`` and the header as associated data, so chunks cannot be
        moved, dropped or swapped between files."""
        view = memoryview(content)
        nonce = blake3.blake3(view, key=self._nonce_key()).digest(16)
        head = _FILE_HEAD.pack(FILE_MAGIC, self.key_id, nonce, CHUNK, len(view))
        parts = [head]
        for index, start in enumerate(range(0, len(view), CHUNK)):
            parts.append(self._chunk(head, index, bytes(view[start : start + CHUNK]), encrypt=True))
        return b"".join(parts)

    def _chunk(self, head: bytes, index: int, data: bytes, *, encrypt: bool) -> bytes:
        nonce, aad = head[13:29] + struct.pack(">Q", index), head + struct.pack(">Q", index)
        if encrypt:
            return bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(data, aad, nonce, self.key)
        return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(data, aad, nonce, self.key)

    def _nonce_key(self) -> bytes:
        return blake3.blake3(self.key, derive_key_context="nerve 2026 nonce").digest()


_UNLOCKED: dict[bytes, Cipher] = {}
_GUARD = threading.Lock()


def has_envelope(data: bytes | memoryview) -> bool:
    """True if ``data`` starts with an envelope: it is encrypted content."""
    return bytes(data[: len(MAGIC)]) in (MAGIC, FILE_MAGIC)


def _cipher(key_id: bytes, where: object) -> Cipher:
    cipher = _UNLOCKED.get(key_id)
    if cipher is None:
        raise KeyMissing(f"{where}: is encrypted and its key is not unlocked", hint=_UNLOCK_HINT)
    return cipher


class EncryptedFile:
    """A file of encrypted chunks, read by plaintext range: only the chunks a range touches are
    read and opened (DuckDB reads a few column chunks of a segment, not all of it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as fh:
            head = fh.read(_FILE_HEAD.size)
        if len(head) < _FILE_HEAD.size or head[:5] != FILE_MAGIC:
            raise LogCorrupt(f"{path}: not a file of encrypted chunks")
        _, key_id, _, self.chunk, self.size = _FILE_HEAD.unpack(head)
        self.head, self.cipher = head, _cipher(key_id, path)
        if self.chunk <= 0:
            raise LogCorrupt(f"{path}: encrypted chunk size {self.chunk}")
        self._kept: collections.OrderedDict[int, bytes] = collections.OrderedDict()
        self._lock = threading.Lock()

    def read(self, start: int, end: int) -> bytes:
        """Plaintext bytes ``[start, end)`` (clipped to the file)."""
        end = min(end, self.size)
        if start >= end:
            return b""
        first, last = start // self.chunk, (end - 1) // self.chunk
        plain = b"".join(self._chunk_at(i) for i in range(first, last + 1))
        offset = start - first * self.chunk
        return plain[offset : offset + end - start]

    def _chunk_at(self, index: int) -> bytes:
        """One chunk's plaintext; the last few opened are kept (readers come back)."""
        with self._lock:
            hit = self._kept.get(index)
        if hit is not None:
            return hit
        stored = self.chunk + _TAG
        with open(self.path, "rb") as fh:
            fh.seek(_FILE_HEAD.size + index * stored)
            plain = self._open_chunk(index, fh.read(stored))
        with self._lock:
            self._kept[index] = plain
            while len(self._kept) > _KEPT_CHUNKS:
                self._kept.popitem(last=False)
        return plain

    def _open_chunk(self, index: int, data: bytes) -> bytes:
        want = min(self.chunk, self.size - index * self.chunk) + _TAG
        if len(data) != want:
            raise LogCorrupt(f"{self.path}: encrypted chunk {index} is cut short")
        try:
            return self.cipher._chunk(self.head, index, data, encrypt=False)
        except CryptoError:
            raise LogCorrupt(f"{self.path}: encrypted chunk {index} fails its tag") from None


_TAG = bindings.crypto_aead_xchacha20poly1305_ietf_ABYTES
_KEPT_CHUNKS = 16


def _decrypt_file(data: bytes | memoryview, where: object) -> bytes:
    view = memoryview(data)
    if len(view) < _FILE_HEAD.size:
        raise LogCorrupt(f"{where}: encrypted header is cut short")
    head = bytes(view[: _FILE_HEAD.size])
    _, key_id, _, chunk, size = _FILE_HEAD.unpack(head)
    cipher, stored = _cipher(key_id, where), chunk + _TAG
    body = view[_FILE_HEAD.size :]
    count = -(-size // chunk) if chunk else -1
    if chunk <= 0 or len(body) != size + count * _TAG:
        raise LogCorrupt(f"{where}: encrypted file is cut short or has bytes added")
    try:
        return b"".join(
            cipher._chunk(head, i, bytes(body[i * stored : (i + 1) * stored]), encrypt=False)
            for i in range(count)
        )
    except CryptoError:
        raise LogCorrupt(f"{where}: encrypted content fails its authentication tag") from None


def open_bytes(data: bytes | memoryview, where: object) -> bytes | memoryview:
    """Content as stored if plain; decrypted if encrypted (with the key its envelope names)."""
    if not has_envelope(data):
        return data
    if bytes(data[: len(FILE_MAGIC)]) == FILE_MAGIC:
        return _decrypt_file(data, where)
    if len(data) < OVERHEAD:
        raise LogCorrupt(f"{where}: encrypted envelope is cut short ({len(data)} bytes)")
    return _cipher(bytes(data[len(MAGIC) : _HEAD]), where).decrypt(data, where)


def encrypted_file(path: Path) -> bool:
    """True if the file at ``path`` starts with an envelope (reads 5 bytes)."""
    with open(path, "rb") as fh:
        return fh.read(len(MAGIC)) in (MAGIC, FILE_MAGIC)


LINE_TAG = "nenc:"


def encrypt_line(cipher: Cipher, text: str) -> str:
    """A line of text (a daemon log entry) as one line of base64 envelope."""
    import base64

    return LINE_TAG + base64.b64encode(cipher.encrypt(text.encode())).decode()


def decrypt_line(line: str) -> str:
    """A line :func:`encrypt_line` wrote, decrypted with an unlocked key; other lines as
    they are; one that no unlocked key opens says so."""
    import base64
    import binascii

    if not line.startswith(LINE_TAG):
        return line
    try:
        data = base64.b64decode(line[len(LINE_TAG) :], validate=True)
        return bytes(open_bytes(data, "daemon log line")).decode(errors="replace")
    except (binascii.Error, LogError):
        return "(an encrypted line: it needs the key)"


def forget_keys() -> None:
    """Drop every unlocked key from this process (``nerve lock``)."""
    with _GUARD:
        _UNLOCKED.clear()
        _KDF_MEMO.clear()


# -- the keyring ---------------------------------------------------------------------------


def keyring_path(log_root: Path) -> Path:
    return log_root / KEYRING


def is_encrypted(log_root: Path) -> bool:
    return keyring_path(log_root).exists()


def read_keyring(log_root: Path) -> dict[str, Any]:
    path = keyring_path(log_root)
    try:
        ring = json.loads(fsio.read_bytes(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LogCorrupt(f"{path}: not a readable keyring: {exc}") from None
    if not isinstance(ring, dict) or ring.get("version") != 1 or "wrapped" not in ring:
        raise LogCorrupt(f"{path}: not a nerve keyring (version 1 with a wrapped key)")
    return ring


def cipher_for(log_root: Path, env: Mapping[str, str] | None = None) -> Cipher | None:
    """The data key of an encrypted log (unlocking it from the environment if need be);
    None for a plain log. ``KeyMissing`` / ``WrongKey`` / ``KeyFileError`` otherwise."""
    if not is_encrypted(log_root):
        return None
    ring = read_keyring(log_root)
    env = os.environ if env is None else env
    if not (env.get(ENV_KEY_FILE) or env.get(ENV_PASSPHRASE)):  # unlocked before, or asked
        found = _UNLOCKED.get(bytes.fromhex(str(ring.get("key_id", ""))))
        if found is not None:
            return found
    return unlock(log_root, kek_from_env(log_root, ring, env))  # the key given is checked


def held_cipher(log_root: Path, env: Mapping[str, str] | None = None) -> Cipher | None:
    """The log's data key as this process holds it if unlocked already (a key file on
    removable media may be gone since), else as :func:`cipher_for` unlocks it."""
    if not is_encrypted(log_root):
        return None
    found = _UNLOCKED.get(bytes.fromhex(str(read_keyring(log_root).get("key_id", ""))))
    return found if found is not None else cipher_for(log_root, env)


def unlock(log_root: Path, kek: bytes) -> Cipher:
    """Unwrap the log's data key with ``kek`` and keep it for this process."""
    ring = read_keyring(log_root)
    cipher = Cipher(_unwrap(ring, kek, keyring_path(log_root)))
    with _GUARD:
        _UNLOCKED[cipher.key_id] = cipher
    return cipher


def _unwrap(ring: dict[str, Any], kek: bytes, path: Path) -> bytes:
    try:
        key = secret.SecretBox(kek).decrypt(bytes.fromhex(str(ring["wrapped"])))
    except (CryptoError, ValueError):
        raise WrongKey(
            f"{path}: the key given does not open this log's data key (wrong key file or "
            "passphrase); nothing was written",
            hint=_UNLOCK_HINT,
        ) from None
    if len(key) != KEY_BYTES:
        raise LogCorrupt(f"{path}: the wrapped data key is {len(key)} bytes, not {KEY_BYTES}")
    return bytes(key)


def new_keyring(log_root: Path, kek: bytes, source: dict[str, Any]) -> Cipher:
    """Make ``log_root`` an encrypted log under a new random data key, wrapped by ``kek``."""
    path = keyring_path(log_root)
    if path.exists():
        raise LogError(f"{path}: the log is already encrypted")
    cipher = Cipher(utils.random(KEY_BYTES))
    fsio.private_dir(log_root)
    fsio.write_private(path, _ring_bytes(cipher, kek, source), site="keyring.write")
    with _GUARD:
        _UNLOCKED[cipher.key_id] = cipher
    return cipher


def rewrap(log_root: Path, old_kek: bytes, new_kek: bytes, source: dict[str, Any]) -> Cipher:
    """Wrap the same data key under ``new_kek``: one atomic replace, old or new, never half."""
    ring = read_keyring(log_root)
    cipher = Cipher(_unwrap(ring, old_kek, keyring_path(log_root)))
    data = _ring_bytes(cipher, new_kek, source)
    fsio.write_private(keyring_path(log_root), data, site="keyring.write", exclusive=False)
    return cipher


def _ring_bytes(cipher: Cipher, kek: bytes, source: dict[str, Any]) -> bytes:
    ring = {
        "version": 1,
        "cipher": CIPHER_NAME,
        "key_id": cipher.key_id.hex(),
        "kek": source,
        "wrapped": secret.SecretBox(kek).encrypt(cipher.key).hex(),
    }
    return (json.dumps(ring, indent=1, sort_keys=True) + "\n").encode()


def copy_keyring(log_root: Path, to_root: Path) -> None:
    """Give an archive folder (itself a log) the keyring its segments need."""
    if is_encrypted(log_root) and not is_encrypted(to_root):
        data = fsio.read_bytes(keyring_path(log_root))
        fsio.write_private(keyring_path(to_root), data, site="keyring.write")


# -- key-encryption keys -------------------------------------------------------------------


def file_source() -> dict[str, Any]:
    return {"kind": "file"}


def passphrase_source() -> dict[str, Any]:
    return {
        "kind": "passphrase",
        "kdf": "argon2id",
        "salt": utils.random(pwhash.argon2id.SALTBYTES).hex(),
        "opslimit": pwhash.argon2id.OPSLIMIT_INTERACTIVE,
        "memlimit": pwhash.argon2id.MEMLIMIT_INTERACTIVE,
    }


def kek_from_passphrase(
    passphrase: str, source: dict[str, Any], *, where: str = "the passphrase"
) -> bytes:
    """Argon2id over the passphrase with the keyring's salt and limits (remembered for
    the process, by a hash: a daemon unlocking again need not pay the KDF twice). An empty
    one is refused (``where`` names it): Argon2id over nothing is no secret."""
    if not passphrase:
        raise WrongKey(f"{where} is empty: a passphrase cannot be empty; nothing was written")
    memo = blake3.blake3(f"{passphrase}\0{sorted(source.items())}".encode()).digest()
    if memo not in _KDF_MEMO:
        _KDF_MEMO[memo] = _argon2id(passphrase, source)
    return _KDF_MEMO[memo]


_KDF_MEMO: dict[bytes, bytes] = {}


def _argon2id(passphrase: str, source: dict[str, Any]) -> bytes:
    return bytes(
        pwhash.argon2id.kdf(
            KEY_BYTES,
            passphrase.encode(),
            bytes.fromhex(source["salt"]),
            opslimit=int(source["opslimit"]),
            memlimit=int(source["memlimit"]),
        )
    )


def new_key_file(path: Path) -> None:
    """Write a new random key file, owner-only; refuse to overwrite one."""
    key = utils.random(KEY_BYTES)
    check = blake3.blake3(key).hexdigest()[:8]
    text = f"{KEY_FILE_HEADER}{key.hex()} {check}\n".encode()
    fsio.write_private(path, text, site="keyring.write")


def kek_from_file(path: Path, *, data: Path | None = None, force: bool = False) -> bytes:
    """The KEK a key file holds: nerve's own format (checked whole), or any ≥ 32 bytes of
    key material, hashed. A key file others may read, or one kept under ``data`` (the
    folder it protects), is refused unless ``force`` (:data:`ENV_KEY_FILE_FORCE`)."""
    return _kek_of(_key_material(path, _read_key_file(path, data, force)))


def _key_material(path: Path, material: bytes) -> bytes:
    """The key a key file's bytes give, or ``KeyFileError`` naming ``path``."""
    if _looks_like_nerve_key(material):
        return _nerve_key(path, material.decode("ascii", "replace"))
    if len(material) < KEY_BYTES:
        raise KeyFileError(
            f"{path}: holds {len(material)} bytes; a key file needs at least {KEY_BYTES} "
            "(truncated?)"
        )
    if len(set(material)) < _LEAST_DISTINCT:
        raise KeyFileError(
            f"{path}: holds {len(material)} bytes of only {len(set(material))} distinct "
            "values: not key material (zeroed or damaged?)"
        )
    return material


_LEAST_DISTINCT = 8  # 32 random bytes hold ~30 distinct values; a zeroed file holds one


def _looks_like_nerve_key(material: bytes) -> bool:
    """Written by ``nerve key new``, maybe damaged since: it starts with the header, or
    it is three words with a 64-character key in the middle."""
    text = material.decode("ascii", "replace")
    words = text.split()
    return text.startswith(KEY_FILE_HEADER[:5]) or (len(words) == 3 and len(words[1]) == 64)


def _nerve_key(path: Path, text: str) -> bytes:
    """The key of a nerve key file exactly as ``nerve key new`` wrote it (a final line
    end optional): header, 64 lowercase hex digits, their 8-digit blake3 check."""
    body = text.removesuffix("\n").removesuffix("\r")
    header, _, rest = body.partition(" ")
    if f"{header} " != KEY_FILE_HEADER:
        raise KeyFileError(
            f"{path}: starts {header[:16]!r}, not {KEY_FILE_HEADER.strip()!r}: not a nerve "
            "key file this version reads (damaged?)"
        )
    parts = rest.split(" ")
    if len(parts) != 2 or len(parts[0]) != 2 * KEY_BYTES or len(parts[1]) != 8:
        raise KeyFileError(f"{path}: a nerve key file cut short or changed (truncated?)")
    if not set(parts[0]) <= _HEX_DIGITS:
        raise KeyFileError(f"{path}: the key is not lowercase hexadecimal (damaged?)")
    key = bytes.fromhex(parts[0])
    if blake3.blake3(key).hexdigest()[:8] != parts[1]:
        raise KeyFileError(f"{path}: the key does not match its check (damaged or truncated)")
    return key


_HEX_DIGITS = frozenset("0123456789abcdef")


def _read_key_file(path: Path, data: Path | None, force: bool) -> bytes:
    try:
        info = os.stat(path)
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read the key file: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyFileError(f"{path}: the key file is not a regular file")
    if not force:
        _refuse_exposed(path, info.st_mode, data)
    with open(path, "rb") as fh:
        return fh.read(1 << 16)


def _refuse_exposed(path: Path, mode: int, data: Path | None) -> None:
    """A key file group or others may open, or one kept in the data folder it locks (a
    copy of ``data/`` would carry its own key), is refused with the fix."""
    if mode & 0o077:
        raise KeyFileError(
            f"{path}: the key file is open to group or others (mode {stat.S_IMODE(mode):o})",
            hint=f"chmod 600 {path} (or set {ENV_KEY_FILE_FORCE}=1 to use it as it is)",
        )
    if data is not None:
        refuse_kept_in(path, data)


def refuse_kept_in(path: Path, data: Path) -> None:
    """``KeyFileError`` when the key file ``path`` is (or would be) inside ``data``."""
    if path.resolve().is_relative_to(data.resolve()):
        raise KeyFileError(
            f"{path}: the key file is kept inside {data}, beside what it locks",
            hint=f"move it out of {data} (or set {ENV_KEY_FILE_FORCE}=1 to use it there)",
        )


CRED_FILE = "kek.cred"
_CRED_NAME = "nerve-kek"


def systemd_creds_source(log_root: Path) -> tuple[bytes, dict[str, Any]]:
    """A new KEK kept by the system's credential store: random key material encrypted by
    ``systemd-creds`` (the TPM2 or the host key, root only) into ``kek.cred`` beside the
    keyring; a copy of the folder on another host cannot decrypt it."""
    material = utils.random(KEY_BYTES)
    fsio.private_dir(log_root)
    blob = _systemd_creds(["encrypt", f"--name={_CRED_NAME}", "-", "-"], material.hex().encode())
    fsio.write_private(log_root / CRED_FILE, blob, site="keyring.write", exclusive=False)
    return _kek_of(material), {"kind": "systemd-creds", "file": CRED_FILE}


def _kek_from_systemd_creds(log_root: Path, source: dict[str, Any]) -> bytes:
    blob = fsio.read_bytes(log_root / str(source.get("file", CRED_FILE)))
    text = _systemd_creds(["decrypt", f"--name={_CRED_NAME}", "-", "-"], blob)
    try:
        return _kek_of(bytes.fromhex(text.decode().strip()))
    except ValueError:
        raise KeyFileError(f"{log_root / CRED_FILE}: the credential holds no key") from None


def _kek_of(material: bytes) -> bytes:
    return blake3.blake3(material, derive_key_context="nerve 2026 key file").digest()


def _systemd_creds(args: list[str], data: bytes) -> bytes:
    import shutil
    import subprocess

    tool = shutil.which("systemd-creds")
    if tool is None:
        raise KeyMissing("systemd-creds is not installed here: the log's key cannot be read")
    try:
        done = subprocess.run([tool, *args], input=data, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeyMissing(f"systemd-creds {args[0]} did not run: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[-1]
        raise KeyMissing(f"systemd-creds {args[0]} failed: {why}")
    return done.stdout


def pkcs11_source(ref: TokenRef) -> tuple[bytes, dict[str, Any]]:
    """A new KEK derived inside a PKCS#11 token, and its keyring entry (no key bytes)."""
    with _token_kek():
        return tokenkek.new_source(ref)


@contextlib.contextmanager
def _token_kek() -> Iterator[None]:
    """A token's errors as a log's key errors: a refused PIN is a wrong key; no module,
    token, PIN or key is a key not to be had."""
    try:
        yield
    except WrongPin as exc:
        raise WrongKey(f"{exc}; nothing was written", hint=exc.hint) from None
    except TokenError as exc:
        raise KeyMissing(str(exc), hint=exc.hint) from None


def kept_with(log_root: Path) -> Path:
    """The folder a copy of the log carries, where its key file must not be: a workspace's
    ``data/`` (the log's parent, so named), else a bare log's own folder."""
    return log_root.parent if log_root.parent.name == "data" else log_root


def kek_from_env(
    log_root: Path, ring: dict[str, Any], env: Mapping[str, str] | None = None
) -> bytes:
    """The KEK the environment gives: ``NERVE_KEY_FILE``, ``NERVE_PASSPHRASE``, or a prompt
    on a terminal for a passphrase keyring; systemd-creds or the PKCS#11 token (its PIN
    in the variable the keyring names) for a keyring kept by one."""
    env = os.environ if env is None else env
    source = ring.get("kek") or {}
    where = keyring_path(log_root)
    if env.get(ENV_KEY_FILE):
        force = env.get(ENV_KEY_FILE_FORCE) == "1"
        return kek_from_file(Path(env[ENV_KEY_FILE]), data=kept_with(log_root), force=force)
    if source.get("kind") == "systemd-creds":
        return _kek_from_systemd_creds(log_root, source)
    if source.get("kind") == "pkcs11":
        with _token_kek():
            return tokenkek.kek_of(source, env)
    if env.get(ENV_PASSPHRASE) and source.get("kind") != "passphrase":
        raise WrongKey(
            f"{where}: this log opens with a key file, not a passphrase; nothing was written",
            hint=f"set {ENV_KEY_FILE}=PATH",
        )
    if source.get("kind") == "passphrase":
        if ENV_PASSPHRASE in env:  # set, even to nothing: an empty one is refused
            return kek_from_passphrase(env[ENV_PASSPHRASE], source, where=ENV_PASSPHRASE)
        if sys.stdin.isatty() and sys.stderr.isatty():
            return kek_from_passphrase(getpass.getpass(f"passphrase for {where}: "), source)
    raise KeyMissing(f"{log_root}: the log is encrypted and no key was given", hint=_UNLOCK_HINT)
