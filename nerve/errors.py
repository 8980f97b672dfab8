"""Every error nerve raises on purpose.

    NerveError                  root: catch this to catch anything nerve means to raise
    ├── UsageError              a caller passed something nerve cannot use (bad flag, bad JSON)
    ├── ClockError              a remote HLC stamp is too far ahead, or a stamp went backwards
    ├── EventError              an event field is out of range or has the wrong type
    │   ├── TrustError          an event claims ``Attested`` with no attestation nerve can check
    │   └── SpoolLineError      a shell hook's spool line is not its form (nerve.shellhook)
    ├── LogError                the event log cannot do what was asked
    │   ├── WriterLocked        a second writer tried to open a log another process holds
    │   ├── LogCorrupt          stored bytes do not match what they claim (names file, row, field)
    │   ├── UnsafePath          a path nerve would write is a symlink or not a plain file/folder
    │   ├── OrderError          an imported event does not sort after the log's newest
    │   ├── KeyMissing          encrypted content and no key unlocked for it (nerve.log.crypt)
    │   ├── WrongKey            the key given does not open the log's data key (nerve.log.crypt)
    │   └── KeyFileError        a key file is missing, too short or truncated (nerve.log.crypt)
    ├── ConfigError             nerve.yaml or another workspace file is invalid (file, line, path)
    │   └── InvalidConfig       every problem found, one issue each (nerve.config.issues)
    ├── SenseError              a sense could not be loaded or broke its contract
    ├── WorkflowError           a workflow definition or run request is invalid
    │   ├── ArgvError           a command given as a string, or an empty argv (nerve.flow.utils)
    │   ├── CommandFailed       a workflow's command did not start or failed (nerve.flow.utils)
    │   ├── ExtractError        an endpoint's reply is not the model asked for (nerve.flow.utils)
    │   └── NerveYamlError      a workflow read a nerve.yaml it may not (nerve.flow.utils)
    ├── CheckError              a check manifest is invalid or a check cannot be fired
    ├── PrivacyError            the privacy rules refuse an input (an import they would change)
    ├── ChainError              the sealed surfacing log failed verification
    ├── DaemonError             the daemon is not reachable, or is already running
    ├── QueryError              the daemon's query process refused one (nerve.runtime.queries)
    ├── FallbackError           recall's configured fallback failed (nerve.recall)
    ├── FleetError              the fleet catalog, table or store failed (nerve.fleet.warehouse)
    ├── HeadError               a fleet head cannot be read or does not verify (nerve.fleet.head)
    ├── SyncError               a sync group, join code or transport failed (nerve.sync.group)
    ├── SealError               an epoch seal set-up, state or check failed (nerve.seal.store)
    ├── NoteError               a seal's signed note is not its form (nerve.seal.note)
    ├── TokenError              a PKCS#11 module, token, PIN or key is unusable (nerve.pkcs11token)
    │   └── WrongPin            the token refused the PIN given (nerve.pkcs11token)
    └── AccessRefused           an agent's MCP call broke a rule (read-only SQL, a budget, a
                                write not allowed, a time limit)

The classes drawn with a module in brackets live with the feature that raises them.
Messages name the offending value, file and line where one exists.

``LogDamageWarning`` (a ``UserWarning``) is issued, not raised, when a reader shows less
than the log holds: a damaged WAL frame hides the events after it. ``SealDeferred`` is issued
when an append was stored but the seal after it failed; the next seal retries it.
"""

from __future__ import annotations

import contextlib
import errno
import sys
from collections.abc import Iterable

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})


def os_error_text(exc: OSError) -> str:
    """``could not write FILE: No space left on device`` style text for an ``OSError``."""
    what = exc.strerror or str(exc)
    if not exc.filename:
        return f"{what} (errno {exc.errno})" if exc.strerror else what
    verb = "write" if exc.errno in DISK_ERRNOS else "use"
    return f"could not {verb} {exc.filename}: {what}"


def one_line(text: object) -> str:
    """``text`` on one line, each run of white space (a line break too) one space: for a
    library's message quoted inside one of nerve's, which names its place on one line."""
    return " ".join(str(text).split())


class NerveError(Exception):
    """Root of every error nerve raises on purpose.

    ``hint`` says what to do about it (a flag, a command); ``field`` names the input field
    at fault, where there is one (``payload``, ``valid_time_ns``).
    """

    hint: str | None = None
    field: str | None = None
    exit_code = 1  # what the CLI exits with: 1 for errors, 2 for usage (CONTRIBUTING.md §11)

    def __init__(self, message: str, *, hint: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint
        if field is not None:
            self.field = field

    def located(
        self, where: str, *, field: str | None = None, replacing: str | None = None
    ) -> NerveError:
        """The same kind of error with ``where: `` in front (``FILE:LINE``, ``event 3``), in
        place of the ``replacing: `` it starts with, when given and it does."""
        cls: type[NerveError] = type(self)
        while cls.__init__ is not NerveError.__init__:  # its own signature: use its parent's
            cls = next(b for b in cls.__bases__ if issubclass(b, NerveError))
        text = str(self)
        if replacing is not None and text.startswith(f"{replacing}: "):
            text = text[len(replacing) + 2 :]
        return cls(f"{where}: {text}", hint=self.hint, field=field or self.field)


class UsageError(NerveError):
    """Raised when a caller passes a value nerve cannot use (a bad flag, bad JSON), or runs a
    command outside any workspace."""

    exit_code = 2


class ClockError(NerveError):
    """Raised when a remote stamp is further ahead of the physical clock than allowed."""


class EventError(NerveError):
    """Raised when an event field is out of range or of the wrong type."""


class TrustError(EventError):
    """An event claims trust ``Attested`` without an attestation nerve can check (an
    Ed25519 signature by a key the workspace pins, see ``nerve.log.attest``)."""


class LogError(NerveError):
    """Raised when the event log cannot do what was asked."""


class WriterLocked(LogError):
    """Raised when a second writer opens a log that another process holds."""


class LogCorrupt(LogError):
    """Raised when stored bytes do not match their checksum, address or chain."""


class UnsafePath(LogError):
    """Raised when a path nerve would write is a symlink or not what it should be."""


class OrderError(LogError):
    """Raised when imported events do not sort strictly after the log's newest event."""


class ConfigError(NerveError):
    """Raised when nerve.yaml or another workspace file is invalid."""


class SenseError(NerveError):
    """Raised when a sense cannot be loaded or breaks its contract."""


class WorkflowError(NerveError):
    """Raised when a workflow definition or a run request is invalid."""


class CheckError(NerveError):
    """Raised when a check manifest is invalid or a check cannot be fired."""


class PrivacyError(NerveError):
    """Raised when the privacy rules refuse an input: events to import that they would drop
    or redact (an imported event's id binds its payload, so it cannot be changed)."""


class ChainError(NerveError):
    """Raised when the sealed surfacing log fails verification."""


class DaemonError(NerveError):
    """Raised when the daemon is unreachable or a second one would start."""


class AccessRefused(NerveError):
    """Raised when an agent's call through ``nerve mcp`` is refused: SQL that is not one
    read-only SELECT or reads outside the log, a query past its time limit, a spent budget,
    a write tool ``mcp.allow_write`` does not list."""


class LogDamageWarning(UserWarning):
    """Issued when a reader can show only part of the log (damaged WAL bytes)."""


class SealDeferred(UserWarning):
    """Issued when events were stored but sealing them into a segment failed (retried later)."""


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """``did you mean 'cpu'?`` for the closest known names, or None if nothing is close."""
    import difflib

    close = difflib.get_close_matches(name, sorted(set(known)), n=3, cutoff=0.6)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


def report(message: str, *, warning: bool = True) -> None:
    """Say something in the daemon's log without ever failing (that disk may be full):
    through the ``nerve`` logger once the daemon has set it up (``nerve.runtime.journal``,
    which stamps the time and tags a warning ``warning:``), else on stderr."""
    import logging  # here: most commands never report

    logger = logging.getLogger("nerve")
    if logger.handlers:
        logger.log(logging.WARNING if warning else logging.INFO, message)
        return
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"nerve: {message}\n")
        sys.stderr.flush()
