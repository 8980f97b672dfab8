"""The options that name a PKCS#11 token (``--pkcs11 MODULE --token LABEL --pin-env VAR``),
taken wherever a key may live in one: ``audit key``, ``audit seal-setup``, ``init --encrypt``
and ``key rotate``."""

from typing import Annotated

import typer

from nerve.errors import UsageError
from nerve.pkcs11token import TokenRef

Pkcs11Opt = Annotated[
    str | None,
    typer.Option("--pkcs11", metavar="MODULE", help="A PKCS#11 module (.so), e.g. SoftHSM2's."),
]
TokenOpt = Annotated[
    str | None, typer.Option("--token", metavar="LABEL", help="The token's label.")
]
PinEnvOpt = Annotated[
    str,
    typer.Option("--pin-env", metavar="VAR", help="The variable holding the token's user PIN."),
]


def token_ref(module: str | None, token: str | None, pin_env: str) -> TokenRef | None:
    """The token named by --pkcs11/--token/--pin-env, or None without --pkcs11."""
    if module is None:
        if token is not None:
            raise UsageError("--token needs --pkcs11 MODULE")
        return None
    if token is None:
        raise UsageError("--pkcs11 needs --token LABEL")
    return TokenRef(module, token, pin_env)
