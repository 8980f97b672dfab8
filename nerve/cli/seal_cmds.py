"""Epoch seals: ``audit seal-setup``, ``audit verify --seed`` (called from ``audit verify``)
and ``audit key --pkcs11`` (docs/sealing.md)."""

from pathlib import Path
from typing import Annotated

import typer

from nerve.cli.output import emit_json
from nerve.cli.state import door as _door
from nerve.cli.token_opts import PinEnvOpt, Pkcs11Opt, TokenOpt, token_ref
from nerve.errors import UsageError


def seal_setup(
    epoch: Annotated[
        str | None, typer.Option("--epoch", help="Epoch length (default audit.seal.epoch, 15m).")
    ] = None,
    bits: Annotated[
        int, typer.Option("--horizon-bits", help="2^bits epochs (16: 1.9 years at 15m).")
    ] = 16,
    pkcs11: Pkcs11Opt = None,
    token: TokenOpt = None,
    pin_env: PinEnvOpt = "NERVE_TOKEN_PIN",
) -> None:
    """Set epoch sealing up and print, once, the verification seed to keep elsewhere."""
    from nerve.durations import parse_duration

    ws = _door(write=True)
    ms = parse_duration(epoch) if epoch is not None else ws.settings.config.audit.seal.epoch
    if ms % 1000 or ms < 1000:
        raise UsageError(f"--epoch {epoch}: give whole seconds (1s or more)")
    seed = ws.audit.seal_setup(ms // 1000, bits=bits, token=token_ref(pkcs11, token, pin_env))
    typer.echo(f"seed: {seed.text()}")
    typer.echo(_qr(seed.text()))
    typer.echo(
        "Keep this seed off this machine (a photo of the code, paper): `nerve audit verify "
        "--seed SEED` checks every epoch's seal with it. It is not shown again.",
        err=True,
    )


def _qr(text: str) -> str:
    """``text`` as a QR code drawn with block characters (segno)."""
    import io

    import segno

    out = io.StringIO()
    segno.make(text, error="m").terminal(out=out, compact=True, border=2)
    return out.getvalue().rstrip("\n")


def verify_seed(seed_text: str, as_json: bool) -> None:
    """``audit verify --seed``: exit 0 when every seal holds, else 1 naming the epoch."""
    from nerve.seal import Seed

    report = _door().audit.seal_verify(Seed.parse(seed_text))
    data = report.to_json()
    if as_json:
        emit_json(data)
    elif report.failure is None:
        late = f", {len(report.late)} sealed late" if report.late else ""
        typer.echo(f"ok: {report.epochs} epochs sealed and verified ({data['origin']}{late})")
    else:
        f = report.failure
        typer.echo(f"SEAL FAILS at epoch {f.epoch}: {f.kind}: {f.message}", err=True)
    raise typer.Exit(0 if report.ok else 1)


def key(
    pkcs11: Pkcs11Opt = None, token: TokenOpt = None, pin_env: PinEnvOpt = "NERVE_TOKEN_PIN"
) -> None:
    """Make (or find) the identity key in a PKCS#11 token and print its public key."""
    from nerve.seal.token import identity

    ref = token_ref(pkcs11, token, pin_env)
    if ref is None:
        raise UsageError("give --pkcs11 MODULE --token LABEL", hint="nerve audit key --pkcs11 …")
    typer.echo(f"identity key: {identity(ref, make=True).hex()} (on token {ref.token!r})")


def witness(
    other: Annotated[Path, typer.Argument(help="The workspace whose seals to cosign.")],
    seed: Annotated[str, typer.Option("--seed", help="That workspace's verification seed.")],
) -> None:
    """Cosign another workspace's newest seal (C2SP cosignature), after verifying its seals
    and that it shows no other history than the one this workspace cosigned before."""
    from nerve.seal import Seed

    done = _door(write=True).audit.witness(other, Seed.parse(seed))
    typer.echo(done.note, nl=False)
    typer.echo(f"cosigned epoch {done.epoch} as {done.name}", err=True)


def register(audit_app: typer.Typer) -> None:
    audit_app.command("seal-setup")(seal_setup)
    audit_app.command("witness")(witness)
    audit_app.command("key")(key)
