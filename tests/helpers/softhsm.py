"""SoftHSM2 tokens for the tests of keys kept in a PKCS#11 token (the identity key, the
encryption-at-rest key-encryption key)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

MODULE = "/usr/lib/softhsm/libsofthsm2.so"
PIN = "1234"

needs_softhsm = pytest.mark.skipif(
    shutil.which("softhsm2-util") is None or not Path(MODULE).exists(),
    reason="SoftHSM2 is not installed (.ci/run installs softhsm2)",
)


@contextlib.contextmanager
def softhsm_tokens(folder: Path, labels: tuple[str, ...]) -> Iterator[Path]:
    """A SoftHSM2 configuration in ``folder`` with a fresh token per label (user PIN
    :data:`PIN`), named by ``SOFTHSM2_CONF`` for this process and those it starts.

    The library reads its configuration when it is initialised, once per process, so it is
    initialised again here: a module that made its own tokens before is not seen."""
    import pkcs11

    (folder / "tokens").mkdir()
    conf = folder / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {folder / 'tokens'}\nobjectstore.backend = file\n")
    env = {**os.environ, "SOFTHSM2_CONF": str(conf)}
    for label in labels:
        subprocess.run(
            ["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", PIN,
             "--so-pin", "5678"],
            check=True, capture_output=True, env=env,
        )  # fmt: skip
    old = os.environ.get("SOFTHSM2_CONF")
    os.environ["SOFTHSM2_CONF"] = str(conf)
    pkcs11.lib(MODULE).reinitialize()
    try:
        yield conf
    finally:
        if old is None:
            os.environ.pop("SOFTHSM2_CONF", None)
        else:
            os.environ["SOFTHSM2_CONF"] = old
