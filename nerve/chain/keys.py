"""Chain signing keys: a per-epoch Ed25519 keyring kept in an owner-only folder."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nacl.bindings import crypto_sign_open
from nacl.exceptions import CryptoError
from nacl.signing import SigningKey

from nerve import fsio
from nerve.chain.links import DOMAIN, SIG_SIZE
from nerve.errors import ChainError, ConfigError


def write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist, nor be a symlink) with mode 0600, durably."""
    fsio.write_private(path, data, site="key.write")


def private_dir(folder: Path) -> Path:
    """Make ``folder`` (and parents) if needed, owner-only; refuse a symlink there."""
    return fsio.private_dir(Path(folder))


class Keyring:
    """Ed25519 chain keys by epoch; on disk, one ``chain-<epoch>.key`` (hex seed) per epoch.

    Files are created 0600 in a 0700 folder; a key file readable by group or others is
    refused with ``ConfigError``. ``folder=None`` keeps keys in memory only (tests).
    """

    def __init__(self, keys: Mapping[int, SigningKey], folder: Path | None = None) -> None:
        if not keys:
            raise ConfigError("a keyring needs at least one key")
        self._keys = dict(keys)
        self.folder = folder

    @classmethod
    def ephemeral(cls, seed: bytes | None = None) -> Keyring:
        """An in-memory keyring with one epoch-0 key (from ``seed`` if given)."""
        return cls({0: SigningKey(seed) if seed else SigningKey.generate()})

    @classmethod
    def open(cls, folder: Path) -> Keyring:
        """Load the keys in ``folder``, generating an epoch-0 key there on first use."""
        folder = private_dir(Path(folder))
        keys = {_epoch_of(p): _read_key(p) for p in folder.glob("chain-*.key")}
        if keys:
            return cls(keys, folder)
        ring = cls({0: SigningKey.generate()}, folder)
        ring._persist(0)
        return ring

    @property
    def epoch(self) -> int:
        """The newest epoch."""
        return max(self._keys)

    def signing_key(self, epoch: int | None = None) -> SigningKey:
        epoch = self.epoch if epoch is None else epoch
        if epoch not in self._keys:
            raise ChainError(f"no private key for chain epoch {epoch} (retired or never made)")
        return self._keys[epoch]

    def public_key(self, epoch: int | None = None) -> bytes:
        return bytes(self.signing_key(epoch).verify_key.encode())

    def rotate(self) -> int:
        """Make (and persist) a key for the next epoch; return that epoch."""
        epoch = self.epoch + 1
        self._keys[epoch] = SigningKey.generate()
        self._persist(epoch)
        return epoch

    def retire(self, epoch: int) -> None:
        """Forget the private key of ``epoch`` and delete its file (never the newest)."""
        if epoch == self.epoch:
            raise ChainError(f"cannot retire the newest key (epoch {epoch})")
        self._keys.pop(epoch, None)
        if self.folder is not None:
            (self.folder / f"chain-{epoch}.key").unlink(missing_ok=True)

    def _persist(self, epoch: int) -> None:
        if self.folder is not None:
            seed = bytes(self._keys[epoch].encode()).hex() + "\n"
            write_private(self.folder / f"chain-{epoch}.key", seed.encode())


def _epoch_of(path: Path) -> int:
    digits = path.name.removeprefix("chain-").removesuffix(".key")
    if not digits.isdigit():
        raise ConfigError(f"{path}: key file name must be chain-<epoch>.key")
    return int(digits)


def _read_key(path: Path) -> SigningKey:
    if path.stat().st_mode & 0o077:
        raise ConfigError(f"{path}: key file is readable by others", hint=f"chmod 600 {path}")
    try:
        return SigningKey(bytes.fromhex(path.read_text().strip()))
    except (ValueError, TypeError):
        raise ConfigError(f"{path}: not a 32-byte hex Ed25519 seed") from None


def verifies(key: bytes, core: bytes, sig: bytes) -> bool:
    """True if ``sig`` is ``key``'s Ed25519 signature over ``DOMAIN + core``.

    What ``VerifyKey(key).verify(DOMAIN + core, sig)`` checks, called one layer down: this
    runs for every link verified.
    """
    if not isinstance(sig, bytes) or len(sig) != SIG_SIZE or not isinstance(key, bytes):
        return False
    try:
        crypto_sign_open(b"".join((sig, DOMAIN, core)), key)
    except (CryptoError, ValueError, TypeError):
        return False
    return True
