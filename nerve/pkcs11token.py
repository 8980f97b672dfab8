"""A PKCS#11 token (SoftHSM2, a TPM through libtpm2-pkcs11, a YubiKey, an HSM) and a
logged-in session on it: what the identity key (:mod:`nerve.seal.token`) and the
encryption-at-rest key-encryption key (:mod:`nerve.log.tokenkek`) both open.

A token is named by its module (the PKCS#11 library, a ``.so``), its label and the
environment variable that holds its user PIN: the PIN itself is never a flag or a file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nerve.errors import NerveError, one_line


class TokenError(NerveError):
    """A PKCS#11 token cannot be used: its module does not load, no token has its label,
    its PIN variable is unset, or it lacks the key asked for (names the token or module)."""


class WrongPin(TokenError):
    """The token refused the PIN given: wrong, locked, expired or of a length it refuses."""


@dataclass(frozen=True)
class TokenRef:
    """Where a key lives: a token in a PKCS#11 module, and the variable holding its PIN."""

    module: str  # the PKCS#11 library (.so)
    token: str  # the token's label
    pin_env: str  # the variable holding the user PIN

    def to_json(self) -> dict[str, str]:
        return {
            "kind": "pkcs11",
            "module": self.module,
            "token": self.token,
            "pin_env": self.pin_env,
        }

    @classmethod
    def from_json(cls, found: Mapping[str, Any]) -> TokenRef:
        """The token a stored ``to_json`` names (a keyring's ``kek``, a seal set-up's)."""
        return cls(str(found["module"]), str(found["token"]), str(found["pin_env"]))


_PIN_REFUSED = {
    "PinIncorrect": "wrong PIN",
    "PinLenRange": "wrong PIN (a length the token refuses)",
    "PinLocked": "PIN locked",
    "PinExpired": "PIN expired",
}


_ONE_AT_A_TIME = threading.RLock()


@contextlib.contextmanager
def session(
    ref: TokenRef, *, rw: bool = False, env: Mapping[str, str] | None = None
) -> Iterator[Any]:
    """An open session on the token, logged in with the PIN from ``ref.pin_env`` (in
    ``env``, else this process's environment); ``TokenError`` in one line otherwise.

    One at a time in this process: a token logs a process in once, so a second session
    opened while one is logged in (the daemon's sealer and its key on one token) would be
    refused (SoftHSM2 says already logged in, or fails outright)."""
    pin = (os.environ if env is None else env).get(ref.pin_env)
    if not pin:
        raise TokenError(
            f"${ref.pin_env} is not set: the PIN of PKCS#11 token {ref.token!r}",
            hint=f"export {ref.pin_env}=…",
        )
    with _ONE_AT_A_TIME, _logged_in(ref, pin, rw) as live:
        yield live


def _logged_in(ref: TokenRef, pin: str, rw: bool) -> Any:
    """The token's session (a context manager that closes it), logged in with ``pin``."""
    import pkcs11

    try:
        token = _library(ref.module).get_token(token_label=ref.token)
        return token.open(user_pin=pin, rw=rw)
    except pkcs11.exceptions.NoSuchToken:
        raise TokenError(f"PKCS#11 token {ref.token!r} not found in {ref.module}") from None
    except pkcs11.exceptions.PKCS11Error as exc:
        raise refused(ref, exc) from None


def _library(module: str) -> Any:
    """The loaded PKCS#11 library, or ``TokenError`` naming the module."""
    import pkcs11

    try:
        return pkcs11.lib(module)
    except (pkcs11.exceptions.PKCS11Error, RuntimeError, OSError) as exc:
        raise TokenError(f"PKCS#11 module {module} cannot be loaded: {one_line(exc)}") from None


def refused(ref: TokenRef, exc: Exception) -> TokenError:
    """The one-line error for what the token said (``WrongPin`` for a refused PIN)."""
    name = type(exc).__name__
    if name in _PIN_REFUSED:
        return WrongPin(f"PKCS#11 token {ref.token!r}: {_PIN_REFUSED[name]}")
    said = str(exc).splitlines()[0] if str(exc) else name
    return TokenError(f"PKCS#11 token {ref.token!r}: {said}")
