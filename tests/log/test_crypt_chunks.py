"""A file encrypted in chunks (a segment, a run's output): each chunk has a nonce of its own,
and a chunk moved, swapped, repeated or dropped is refused by both readers (the whole-file
one and :class:`nerve.log.crypt.EncryptedFile`, which DuckDB reads through)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from nerve.errors import LogCorrupt
from nerve.log import crypt

CHUNK, TAG, HEAD = crypt.CHUNK, 16, 41  # a chunk's plaintext, its tag, the file header


@pytest.fixture
def cipher(tmp_path: Path) -> crypt.Cipher:
    """An unlocked data key, as a new encrypted log holds one."""
    return crypt.new_keyring(tmp_path / "log", os.urandom(32), crypt.file_source())


def _chunks(stored: bytes) -> tuple[bytes, list[bytes]]:
    """The header and each stored chunk (ciphertext and tag) of an encrypted file."""
    body, size = stored[HEAD:], CHUNK + TAG
    return stored[:HEAD], [body[i : i + size] for i in range(0, len(body), size)]


def test_two_chunks_of_one_file_never_share_a_nonce(
    cipher: crypt.Cipher, monkeypatch: pytest.MonkeyPatch
) -> None:
    nonces: list[bytes] = []
    real = crypt.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt

    def noting(message: bytes, aad: bytes, nonce: bytes, key: bytes) -> bytes:
        nonces.append(nonce)
        return real(message, aad, nonce, key)

    monkeypatch.setattr(crypt.bindings, "crypto_aead_xchacha20poly1305_ietf_encrypt", noting)
    zeros = bytes(3 * CHUNK + 100)
    encrypted = cipher.encrypt_file(zeros)
    cipher.encrypt_file(b"\1" + zeros[1:])  # another file: other nonces again
    assert len(nonces) == 8 and len(set(nonces)) == 8
    # and as stored: zeros encrypted under a repeated nonce would give the same keystream twice
    _, chunks = _chunks(encrypted)
    bodies = [c[:-TAG] for c in chunks[:3]]
    assert len(set(bodies)) == 3


def _swap(chunks: list[bytes]) -> list[bytes]:
    return [chunks[1], chunks[0], *chunks[2:]]


def _reorder(chunks: list[bytes]) -> list[bytes]:
    return [chunks[2], chunks[0], chunks[1], chunks[3]]


def _repeat(chunks: list[bytes]) -> list[bytes]:
    return [chunks[0], chunks[0], *chunks[2:]]


@pytest.mark.parametrize("change", [_swap, _reorder, _repeat], ids=["swap", "reorder", "repeat"])
def test_chunks_swapped_or_reordered_are_refused(
    cipher: crypt.Cipher, tmp_path: Path, change: Callable[[list[bytes]], list[bytes]]
) -> None:
    plain = os.urandom(3 * CHUNK + 100)
    head, chunks = _chunks(cipher.encrypt_file(plain))
    changed = head + b"".join(change(chunks))
    with pytest.raises(LogCorrupt, match="fails its authentication tag"):
        crypt.open_bytes(changed, "f")
    path = tmp_path / "changed"
    path.write_bytes(changed)
    reader = crypt.EncryptedFile(path)
    with pytest.raises(LogCorrupt, match=r"encrypted chunk [01] fails its tag"):
        reader.read(0, 2 * CHUNK)


def test_a_chunk_from_another_file_or_a_dropped_one_is_refused(
    cipher: crypt.Cipher, tmp_path: Path
) -> None:
    plain = os.urandom(2 * CHUNK)
    head, chunks = _chunks(cipher.encrypt_file(plain))
    _, others = _chunks(cipher.encrypt_file(plain[::-1]))  # same key, same length, same index
    for changed, said in (
        (head + chunks[0] + others[1], "fails its authentication tag"),
        (head + chunks[0], "cut short"),
    ):
        with pytest.raises(LogCorrupt, match=said):
            crypt.open_bytes(changed, "f")
    path = tmp_path / "mixed"
    path.write_bytes(head + chunks[0] + others[1])
    assert crypt.EncryptedFile(path).read(0, 10) == plain[:10]  # chunk 0 is its own
    with pytest.raises(LogCorrupt, match="encrypted chunk 1 fails its tag"):
        crypt.EncryptedFile(path).read(CHUNK, CHUNK + 10)


def test_a_whole_encrypted_file_opens_by_either_reader(
    cipher: crypt.Cipher, tmp_path: Path
) -> None:
    plain = os.urandom(2 * CHUNK + 7)
    encrypted = cipher.encrypt_file(plain)
    assert crypt.open_bytes(encrypted, "f") == plain
    path = tmp_path / "whole"
    path.write_bytes(encrypted)
    assert crypt.EncryptedFile(path).read(CHUNK - 5, 2 * CHUNK + 7) == plain[CHUNK - 5 :]


def test_a_range_opens_only_the_chunks_it_touches(
    cipher: crypt.Cipher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What DuckDB reads of a few columns costs about what it reads: not the whole file."""
    plain = os.urandom(4 * CHUNK)
    path = tmp_path / "segment"
    path.write_bytes(cipher.encrypt_file(plain))
    opened: list[bytes] = []
    real = crypt.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt

    def noting(message: bytes, aad: bytes, nonce: bytes, key: bytes) -> bytes:
        opened.append(nonce)
        return real(message, aad, nonce, key)

    monkeypatch.setattr(crypt.bindings, "crypto_aead_xchacha20poly1305_ietf_decrypt", noting)
    reader = crypt.EncryptedFile(path)
    assert reader.read(2 * CHUNK + 10, 2 * CHUNK + 20) == plain[2 * CHUNK + 10 : 2 * CHUNK + 20]
    assert len(opened) == 1
    assert reader.read(CHUNK - 1, CHUNK + 1) == plain[CHUNK - 1 : CHUNK + 1]
    assert len(opened) == 3  # chunks 0 and 1: a range across a boundary opens both


def test_duckdbs_file_system_reads_plaintext_ranges_and_writes_nothing(
    cipher: crypt.Cipher, tmp_path: Path
) -> None:
    from nerve import encfs

    plain = os.urandom(CHUNK + 300)
    path = tmp_path / "segment"
    path.write_bytes(cipher.encrypt_file(plain))
    files = encfs.EncryptedFileSystem()
    name = encfs.uri(path)
    assert name.startswith("nerveenc://") and files.info(name)["size"] == len(plain)
    with files.open(name, "rb") as stream:
        stream.seek(CHUNK - 2)
        assert stream.read(4) == plain[CHUNK - 2 : CHUNK + 2]
    with pytest.raises(PermissionError, match="read-only"):
        files.open(name, "wb")
    assert path.read_bytes() == cipher.encrypt_file(plain)  # as encrypted: deterministic, untouched
