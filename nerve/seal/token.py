"""The long-term identity key in a PKCS#11 token (SoftHSM2, a TPM through libtpm2-pkcs11,
a YubiKey, an HSM): made there, non-extractable, and asked to sign; never read out.

The key is the token's Ed25519 (CKK_EC_EDWARDS, curve Ed25519) key pair labelled
``nerve-identity``; the token and its PIN are named as :mod:`nerve.pkcs11token` says.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nerve.pkcs11token import TokenError, TokenRef, refused, session
from nerve.seal.store import SealError

LABEL = "nerve-identity"
ED25519_OID = "1.3.101.112"


@contextlib.contextmanager
def _session(ref: TokenRef, *, rw: bool = False) -> Iterator[Any]:
    """A logged-in session on the token (:func:`nerve.pkcs11token.session`), its errors
    raised as epoch sealing's own (``SealError``)."""
    try:
        with session(ref, rw=rw) as live:
            yield live
    except TokenError as exc:
        raise SealError(str(exc), hint=exc.hint) from None


def identity(ref: TokenRef, *, make: bool = False) -> bytes:
    """The identity key's Ed25519 public key (32 bytes), made on the token first if
    ``make`` and it has none."""
    import pkcs11
    from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
    from pkcs11.util.ec import encode_named_curve_parameters

    with _session(ref, rw=make) as session:
        try:
            pub = session.get_key(label=LABEL, object_class=ObjectClass.PUBLIC_KEY)
        except pkcs11.exceptions.NoSuchKey:
            if not make:
                raise SealError(
                    f"token {ref.token!r} holds no {LABEL} key", hint="nerve audit key --pkcs11 …"
                ) from None
            params = session.create_domain_parameters(
                KeyType.EC_EDWARDS,
                {Attribute.EC_PARAMS: encode_named_curve_parameters(ED25519_OID)},
                local=True,
            )
            pub, _ = params.generate_keypair(
                mechanism=Mechanism.EC_EDWARDS_KEY_PAIR_GEN,
                store=True,
                label=LABEL,
                private_template={Attribute.EXTRACTABLE: False, Attribute.SENSITIVE: True},
            )
        return _point(bytes(pub[Attribute.EC_POINT]))


def sign(ref: TokenRef, message: bytes) -> bytes:
    """The token's identity key's Ed25519 signature over ``message``."""
    import pkcs11
    from pkcs11 import Mechanism, ObjectClass

    with _session(ref) as session:
        try:
            key = session.get_key(label=LABEL, object_class=ObjectClass.PRIVATE_KEY)
            return bytes(key.sign(message, mechanism=Mechanism.EDDSA))
        except pkcs11.exceptions.NoSuchKey:
            raise SealError(f"token {ref.token!r} holds no {LABEL} key") from None
        except pkcs11.exceptions.PKCS11Error as exc:
            raise SealError(str(refused(ref, exc))) from None


def _point(raw: bytes) -> bytes:
    """The 32-byte key from CKA_EC_POINT (an OCTET STRING, 04 20 ‖ key, or the bare key)."""
    if len(raw) == 34 and raw[:2] == b"\x04\x20":
        return raw[2:]
    if len(raw) == 32:
        return raw
    raise SealError(f"the token's EC_POINT is {len(raw)} bytes, not an Ed25519 key")


def certifier(ref: TokenRef) -> Any:
    """A ``certify`` for :func:`nerve.seal.sealer.setup`: the token signs the seed."""

    def certify(message: bytes) -> tuple[dict[str, Any], bytes]:
        public = identity(ref)
        return {**ref.to_json(), "public_key": public.hex()}, sign(ref, message)

    return certify


def confirm(folder: Path) -> None:
    """If a token's identity key certified the set-up in ``folder``, check the token is
    there, unlocked, and holds that key (a missing or locked token is one clear error)."""
    from nerve.seal.store import SealDir

    found = SealDir(folder).setup().get("identity")
    if not isinstance(found, dict) or found.get("kind") != "pkcs11":
        return
    ref = TokenRef.from_json(found)
    if identity(ref).hex() != found.get("public_key"):
        raise SealError(f"token {ref.token!r} holds another identity key than the set-up's")
