"""Encryption at rest: ``init --encrypt``'s key choice, ``key new``, ``key rotate``, ``lock``."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from nerve.cli.state import door as _door
from nerve.cli.token_opts import PinEnvOpt, Pkcs11Opt, TokenOpt, token_ref
from nerve.errors import UsageError
from nerve.pkcs11token import TokenRef

key_app = typer.Typer(help="Keys of an encrypted workspace (see nerve init --encrypt).")

KeyFileOpt = Annotated[
    Path | None,
    typer.Option("--key-file", help="A key file (made, owner-only, if it does not exist)."),
]
CredsOpt = Annotated[
    bool,
    typer.Option(
        "--systemd-creds",
        help="A key kept by systemd-creds (the TPM2 or this host's key; root only).",
    ),
]
PassphraseOpt = Annotated[
    bool,
    typer.Option(
        "--passphrase",
        help="A passphrase (Argon2id): asked on a terminal, else one line of stdin.",
    ),
]


def kek_for_new(
    key_file: Path | None,
    passphrase: bool,
    creds: bool = False,
    log_root: Path | None = None,
    token: TokenRef | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """The key-encryption key a new keyring (init, rotate) is wrapped under; ``token`` is
    a PKCS#11 token (``token_ref``) to derive it in."""
    from nerve.log import crypt

    if [key_file is not None, passphrase, creds, token is not None].count(True) != 1:
        raise UsageError(
            "give one of --key-file FILE, --passphrase, --systemd-creds or "
            "--pkcs11 MODULE --token LABEL"
        )
    if token is not None:
        return crypt.pkcs11_source(token)
    if creds:
        assert log_root is not None
        return crypt.systemd_creds_source(log_root)
    if key_file is not None:
        return _kek_of_file(key_file, None if log_root is None else crypt.kept_with(log_root))
    source = crypt.passphrase_source()
    kek = crypt.kek_from_passphrase(_read_passphrase(), source, where="the new passphrase")
    return kek, source


def _kek_of_file(key_file: Path, data: Path | None) -> tuple[bytes, dict[str, Any]]:
    """The KEK of ``key_file``, made first if missing (not inside ``data``: it is refused
    there, so it is refused before it is made)."""
    import os

    from nerve.log import crypt

    force = os.environ.get(crypt.ENV_KEY_FILE_FORCE) == "1"
    if not key_file.exists():
        if data is not None and not force:
            crypt.refuse_kept_in(key_file, data)
        crypt.new_key_file(key_file)
        typer.echo(f"made key file {key_file} (keep a copy: a lost key is lost data)", err=True)
    return crypt.kek_from_file(key_file, data=data, force=force), crypt.file_source()


def _read_passphrase() -> str:
    import getpass

    if sys.stdin.isatty():
        first = getpass.getpass("new passphrase: ")
        if getpass.getpass("again: ") != first:
            raise UsageError("the passphrases differ; nothing was changed")
        return first
    line = sys.stdin.readline().rstrip("\n")
    if not line:
        raise UsageError("no passphrase on stdin; nothing was changed")
    return line


@key_app.command("new")
def key_new(
    file: Annotated[Path, typer.Argument(help="Where to write it (must not exist).")],
) -> None:
    """Write a new random key file, owner-only."""
    from nerve.log import crypt

    if file.exists():
        raise UsageError(f"{file} already exists; not overwriting it")
    crypt.new_key_file(file)
    typer.echo(f"made key file {file}")


@key_app.command("rotate")
def key_rotate(
    key_file: KeyFileOpt = None,
    passphrase: PassphraseOpt = False,
    creds: CredsOpt = False,
    pkcs11: Pkcs11Opt = None,
    token: TokenOpt = None,
    pin_env: PinEnvOpt = "NERVE_TOKEN_PIN",
) -> None:
    """Re-wrap the data key under a new key (the current one from NERVE_KEY_FILE, a
    passphrase or the keyring's token); no segment is rewritten. The old key stops working."""
    ws = _door(write=True)
    made: list[str] = []
    ref = token_ref(pkcs11, token, pin_env)

    def new_key(log_root: Path) -> tuple[bytes, dict[str, Any]]:
        kek, source = kek_for_new(key_file, passphrase, creds, log_root, ref)
        made.append(str(source["kind"]))
        return kek, source

    ring = ws.log.rewrap_key(new_key)
    _set_config_key(ws.settings.path, made[0])
    typer.echo(f"rotated: {ring} now opens with the new key")


def _set_config_key(path: Path, kind: str) -> None:
    """Keep nerve.yaml's ``log.encryption.key`` saying which kind of key unlocks the log."""
    if not path.exists():
        return
    text = path.read_text(encoding="utf-8")
    for old in ("file", "passphrase", "systemd-creds", "pkcs11"):
        text = text.replace(f"    key: {old}  #", f"    key: {kind}  #")
    path.write_text(text, encoding="utf-8")


def lock_cmd() -> None:
    """Stop capture and drop the key: the daemon (which holds it in memory) stops; reads
    need the key again."""
    was = _door().privacy.lock()
    typer.echo("locked: the daemon stopped" if was else "locked (no daemon was running)")


def register(app: typer.Typer) -> None:
    app.add_typer(key_app, name="key", rich_help_panel="Privacy")
    app.command("lock", rich_help_panel="Privacy")(lock_cmd)
