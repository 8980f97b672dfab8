"""The ``nerve`` command line. Its first act, in the ``nerve`` process only: Ctrl+C while
the command's modules load is one line and exit 130 (``nerve.cli.interrupt``)."""

from nerve.cli import interrupt as _interrupt

if _interrupt.own_process():
    _interrupt.arm()
