"""The shell hook's spool line (``nerve.shellhook.parse_spool_line``), as the shell sense
reads it: bytes decoded as UTF-8 with replacement, one line without its newline."""

from __future__ import annotations

from nerve.errors import NerveError
from nerve.shellhook import parse_spool_line

from . import placed

FIELDS = ("nerve1", "SHELL", "SESSION", "START", "END", "EXIT")

# The modules whose branches guide the fuzzer (only they are instrumented).
COVERED = ("nerve.shellhook",)


def seeds() -> list[bytes]:
    """Lines the hook writes: bash and zsh, escapes, a failed command, a comma decimal."""
    return [
        b"nerve1\tbash\t4242.1733399000\t1733400000.123456\t1733400001.5\t0\t/home/me\tls -la",
        b"nerve1\tzsh\t77.1733399000\t1733400000,25\t1733400000,75\t127\t/tmp/a\\tb\techo \\\\n\\n",
        b"nerve1\tbash\t1.1733399000\t1733400000\t1733400000\t1\t/\tgit commit -m 'x\\ty'",
    ]


def TestOneInput(data: bytes) -> None:
    """One line: a record, or a refusal naming the field at fault."""
    for line in data.decode("utf-8", "replace").split("\n"):
        try:
            parse_spool_line(line)
        except NerveError as exc:
            placed(exc, *FIELDS)
