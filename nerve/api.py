"""The front door: ``nerve.open()`` and the :class:`Workspace` it returns.

Every workspace operation the CLI has, reached by what it is about: the CLI, ``nerve mcp``,
the notebooks and the web UI all stand on it. The workspace itself opens and closes, emits,
runs SQL, replays and asks; everything else is a noun on it (:data:`NOUNS`), in the shape
``db["table"]`` has in sqlite-utils. Results are typed (each has ``to_json()``) and every
error is a :class:`~nerve.errors.NerveError`.

    >>> ws = nerve.open()                       # found as the CLI finds it
    >>> ws.emit(source="shell", line="make")    # one stored Event
    >>> ws.sql("select kind, count(*) from events group by all").df()
    >>> ws.replay(verify=True).ok
    >>> ws.log.seal()                           # a SegmentInfo, or None
    >>> ws.sense("cpu").state()
    >>> [h.chain_seq for h in ws.audit.held()]

``nerve.open(p, read_only=True)`` creates nothing on disk and refuses every write.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from nerve.door.core import Core
from nerve.door.fleet import Fleet
from nerve.door.named import Audit, Sense, Senses
from nerve.door.nouns import Daemon, Events, Log, Privacy, Settings
from nerve.door.runs import Run, Runs
from nerve.door.sync import Sync
from nerve.workspace import WorkspaceDir as Folder

__all__ = ["Workspace", "open"]

# What a workspace is made of, noun by noun: ``ws.<name>`` (or ``ws.sense(name)`` and
# ``ws.run(id)`` for one of them) and what it covers.
NOUNS = {
    "events": "stored events: read, tailed, followed, imported",
    "log": "the log itself: snapshot, seal, compact, repair, size, export, archive",
    "privacy": "pause, resume, forget, the rules on a sample, lock",
    "daemon": "whether one answers, status, start, stop, run here, its log lines",
    "settings": "nerve.yaml: read, validate, categories, projections, tokens",
    "sync": "the sync group: init, join, now, status, leave, devices",
    "audit": "attention decisions and the sealed chain: held, show, verify, why",
    "senses": "every sense; one is ws.sense(name): state, history, schema, query, trigger",
    "runs": "workflow runs and checks; one is ws.run(id): events, outputs, answer, override",
    "fleet": "the shared fleet table: init, query, verify, maintain, status, ship",
}


def open(  # the front door is nerve.open, as io.open is io's
    path: Path | str | None = None, *, read_only: bool = False
) -> Workspace:
    """The workspace at ``path``, else ``NERVE_WORKSPACE``, else the nearest folder from the
    current one upwards holding ``nerve.yaml`` (as the CLI finds it). ``read_only`` opens
    it for reading: nothing is created, and a write raises ``UsageError``."""
    return Workspace(Folder.find(path, write=not read_only), read_only=read_only)


def located(path: Path | str | None = None) -> tuple[Path, str]:
    """The folder :func:`open` opens, and why that one: ``--workspace``,
    ``NERVE_WORKSPACE``, the nearest ``nerve.yaml`` upwards, or the user workspace
    ``nerve setup`` made (what ``nerve status`` says)."""
    folder, why = Folder.locate(path)
    return folder.root, why


class Workspace(Core):
    """One nerve workspace: its log, its daemon if one runs, its configuration.

    It opens (:meth:`create`, :meth:`find`) and closes, emits, runs SQL (:meth:`sql`,
    :meth:`query`, :meth:`rows`), replays and asks; the rest is under its nouns
    (:data:`NOUNS`): ``ws.events``, ``ws.log``, ``ws.privacy``, ``ws.daemon``,
    ``ws.settings``, ``ws.sync``, ``ws.audit``, ``ws.senses`` and ``ws.sense(name)``,
    ``ws.runs`` and ``ws.run(id)``, ``ws.fleet``.
    """

    @cached_property
    def events(self) -> Events:
        """Stored events; ``ws.events(kinds=...)`` is an Arrow table of them."""
        return Events(self)

    @cached_property
    def log(self) -> Log:
        """The log itself: snapshot, seal, compact, repair, size, export, archive."""
        return Log(self)

    @cached_property
    def privacy(self) -> Privacy:
        """Pausing and resuming capture, forgetting, the rules on a sample, locking."""
        return Privacy(self)

    @cached_property
    def daemon(self) -> Daemon:
        """The daemon: whether it runs, its status, starting and stopping it."""
        return Daemon(self)

    @cached_property
    def settings(self) -> Settings:
        """nerve.yaml and what it sets: read, validated, edited; tokens."""
        return Settings(self)

    @cached_property
    def sync(self) -> Sync:
        """The sync group this device belongs to."""
        return Sync(self)

    @cached_property
    def audit(self) -> Audit:
        """Attention decisions and the sealed surfacing chain."""
        return Audit(self)

    @cached_property
    def senses(self) -> Senses:
        """Every sense (one by name is :meth:`sense`)."""
        return Senses(self)

    def sense(self, name: str) -> Sense:
        """The sense ``name``: its state, history, schema, SQL over its data, a trigger."""
        return Sense(self, name)

    @cached_property
    def runs(self) -> Runs:
        """Workflow runs and checks (one by id is :meth:`run`)."""
        return Runs(self)

    def run(self, run_id: str) -> Run:
        """The workflow run ``run_id``: its record, events, outputs, answer, override."""
        return Run(self, run_id)

    @cached_property
    def fleet(self) -> Fleet:
        """The shared fleet table every host ships to."""
        return Fleet(self)
