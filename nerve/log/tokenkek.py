"""An encrypted log's key-encryption key (KEK) derived inside a PKCS#11 token.

The token keeps a secret key labelled ``nerve-kek``: CKK_GENERIC_SECRET, 256 bits, made
there by C_GenerateKey (CKM_GENERIC_SECRET_KEY_GEN) with CKA_EXTRACTABLE false and
CKA_SENSITIVE true, so the token never gives its value out. The KEK is the token's
HMAC-SHA256 by that key (one C_Sign, CKM_SHA256_HMAC) over ``b"nerve kek v1" || salt``,
the salt 32 random bytes kept in the keyring: without the token (and its PIN) the keyring
opens nothing, and the token key itself is never in a file or in nerve's memory.

HMAC-SHA256 by C_Sign, because it is the derivation most tokens do with a key they will
not export: SoftHSM2 2.6.1 lists CKM_SHA256_HMAC and CKM_GENERIC_SECRET_KEY_GEN (and
AES-CMAC, which gives 16 bytes, not a 32-byte key), libtpm2-pkcs11 signs with HMAC keys
too, and C_DeriveKey would make a second key object that must be extractable to be used.
A token that cannot make the key (C_GenerateKey) may still hold one made with its own
tool under the same label; any secret key that signs CKM_SHA256_HMAC will do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from nerve.errors import LogCorrupt
from nerve.pkcs11token import TokenError, TokenRef, refused, session

LABEL = "nerve-kek"
CONTEXT = b"nerve kek v1"
MECHANISM = "CKM_SHA256_HMAC"
SALT_BYTES = 32
KEK_BYTES = 32


def new_source(ref: TokenRef, env: Mapping[str, str] | None = None) -> tuple[bytes, dict[str, Any]]:
    """A new KEK from the token (its ``nerve-kek`` key made there first if it has none)
    and the keyring entry that derives it again: the token, its PIN's variable, the key's
    label and a new salt (no secret: the PIN stays in its variable)."""
    source = {
        **ref.to_json(),
        "label": LABEL,
        "mechanism": MECHANISM,
        "salt": os.urandom(SALT_BYTES).hex(),
    }
    return _derive(ref, source, env, make=True), source


def kek_of(source: Mapping[str, Any], env: Mapping[str, str] | None = None) -> bytes:
    """The KEK a keyring's ``pkcs11`` entry names, derived again by its token."""
    try:
        ref = TokenRef.from_json(source)
    except KeyError as exc:
        raise LogCorrupt(f"the keyring's pkcs11 entry has no {exc.args[0]!r}") from None
    return _derive(ref, source, env, make=False)


def _derive(
    ref: TokenRef, source: Mapping[str, Any], env: Mapping[str, str] | None, *, make: bool
) -> bytes:
    """HMAC-SHA256 by the token's key over the context and the entry's salt."""
    import pkcs11
    from pkcs11 import Mechanism

    message = CONTEXT + _salt(source)
    with session(ref, rw=make, env=env) as live:
        key = _key(live, ref, str(source.get("label", LABEL)), make=make)
        try:
            kek = bytes(key.sign(message, mechanism=Mechanism.SHA256_HMAC))
        except pkcs11.exceptions.PKCS11Error as exc:
            raise refused(ref, exc) from None
    if len(kek) != KEK_BYTES:
        raise TokenError(f"PKCS#11 token {ref.token!r} gave {len(kek)} bytes, not {KEK_BYTES}")
    return kek


def _salt(source: Mapping[str, Any]) -> bytes:
    try:
        salt = bytes.fromhex(str(source["salt"]))
    except (KeyError, ValueError):
        raise LogCorrupt("the keyring's pkcs11 entry has no readable salt") from None
    if len(salt) != SALT_BYTES:
        raise LogCorrupt(f"the keyring's pkcs11 salt is {len(salt)} bytes, not {SALT_BYTES}")
    return salt


def _key(live: Any, ref: TokenRef, label: str, *, make: bool) -> Any:
    """The token's secret key ``label``; made there (never to leave it) if ``make``."""
    import pkcs11
    from pkcs11 import ObjectClass

    try:
        return live.get_key(label=label, object_class=ObjectClass.SECRET_KEY)
    except pkcs11.exceptions.NoSuchKey:
        if make:
            return _make_key(live, ref, label)
        raise TokenError(
            f"PKCS#11 token {ref.token!r} in {ref.module} holds no {label} key",
            hint="the key is on another token, or was deleted (then the log is lost)",
        ) from None
    except pkcs11.exceptions.MultipleObjectsReturned:
        raise TokenError(f"PKCS#11 token {ref.token!r} holds more than one {label} key") from None


def _make_key(live: Any, ref: TokenRef, label: str) -> Any:
    """A new 256-bit secret key on the token: kept there, sensitive, never extractable,
    good for signing (HMAC) only."""
    import pkcs11
    from pkcs11 import Attribute, KeyType, MechanismFlag

    template = {Attribute.EXTRACTABLE: False, Attribute.SENSITIVE: True, Attribute.PRIVATE: True}
    try:
        return live.generate_key(
            KeyType.GENERIC_SECRET,
            8 * KEK_BYTES,
            label=label,
            store=True,
            capabilities=MechanismFlag.SIGN,
            template=template,
        )
    except pkcs11.exceptions.PKCS11Error as exc:
        raise TokenError(
            f"PKCS#11 token {ref.token!r} cannot make a {label} key: {type(exc).__name__}",
            hint=f"make a secret key labelled {label} that signs CKM_SHA256_HMAC with the "
            "token's own tool (docs/encryption.md)",
        ) from None
