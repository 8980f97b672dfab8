"""One behavioural suite, run through both transports (CONTRIBUTING.md §14).

Every command of ``nerve.commands`` is run on a workspace reached directly (this process is
the log's single writer) and on one reached through a real daemon, and each test holds the
two to the same typed result and the same stored events: imported events keep their ids,
emitted ones their fields, keyed retries are replayed, not stored twice. The commands that
need a running daemon are held to their one answer each way. A last test checks that the
suite covers the whole command set.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.clock import Hlc
from nerve.commands import Command, Done, Reply
from nerve.commands.daemon import (
    AnswerRun,
    FireCheck,
    Follow,
    GetStatus,
    Joined,
    ListSenses,
    Override,
    RecheckRun,
    Reload,
    RotateKey,
    RunsStatus,
    Stop,
    SyncRound,
    TriggerRun,
    TriggerSense,
)
from nerve.commands.log import Archive, Compact, Emit, Forget, Import, Pause, Resume, Seal
from nerve.commands.table import COMMANDS, STREAMS, command_of
from nerve.errors import CheckError, DaemonError, NerveError, UsageError, WorkflowError
from nerve.events import Event
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot, table_since
from nerve.log.wire import row_to_json
from nerve.privacy.forget import request_of
from nerve.runtime import ipc
from nerve.transport import Direct, ThroughDaemon, Transport, connect, socket_path
from nerve.workspace import WorkspaceDir, init_workspace
from tests.daemon_util import Daemon, started

COVERS: dict[str, tuple[type[Command], ...]] = {}  # test name -> the commands it runs


def covers(*commands: type[Command]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Record which commands a contract test runs (for the coverage test at the end)."""

    def record(test: Callable[..., None]) -> Callable[..., None]:
        COVERS[test.__name__] = commands
        return test

    return record


@dataclasses.dataclass
class Way:
    """One workspace and how commands reach it."""

    ws: WorkspaceDir
    through_daemon: bool

    def transport(self) -> Transport:
        transport = connect(self.ws)
        assert isinstance(transport, ThroughDaemon) is self.through_daemon
        return transport

    def do(self, command: Command) -> Any:
        return self.transport().do(command)

    def stored(self, subject: str) -> list[dict[str, Any]]:
        """The events of ``subject`` in the log, in order, in wire form."""
        table = table_since(snapshot(self.ws.log_root))
        return [row_to_json(r) for r in table.to_pylist() if r["subject"] == subject]


@pytest.fixture(scope="module")
def ways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Way, Way]]:
    """A workspace reached directly, and one through its running daemon."""
    direct = init_workspace(tmp_path_factory.mktemp("direct") / "ws")
    served = init_workspace(tmp_path_factory.mktemp("daemon") / "ws")
    with started(served.root):
        yield Way(direct, False), Way(served, True)


def both(ways: tuple[Way, Way], script: Callable[[Way], Any]) -> Any:
    """Run ``script`` each way; what it returns must be the same both ways."""
    direct, daemon = (script(way) for way in ways)
    assert direct == daemon
    return direct


def drafts(subject: str, *lines: str) -> tuple[Draft, ...]:
    return tuple(
        Draft.of("contract.test", subject=subject, line=x, payload={"x": x}) for x in lines
    )


def content(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What an emit stored, less what each log stamps its own way (time, node, id)."""
    fields = ("kind", "subject", "source", "trust", "line", "payload")
    return [tuple(str(e.get(f)) for f in fields) for e in events]


def foreign(subject: str, n: int) -> tuple[Event, ...]:
    """``n`` events of another log, stamped just after anything either log holds now (a
    log refuses an import stamped before its newest, or more than half a second ahead)."""
    base = time.time_ns() + 300_000_000
    return tuple(
        Event(Hlc(base + i, 0), "peer", "contract.test", subject, line=f"peer {i}")
        for i in range(n)
    )


@covers(Emit)
def test_an_emit_stores_the_same_events_and_a_keyed_retry_is_replayed(
    ways: tuple[Way, Way],
) -> None:
    batch = drafts("emit", "one", "two")

    def script(way: Way) -> Any:
        first = way.do(Emit(batch, key="emit-key"))
        again = way.do(Emit(batch, key="emit-key"))
        assert again.events == first.events  # the first result, with its stamps
        stored = way.stored("emit")
        assert [e["id"] for e in stored] == [e.id.hex() for e in first.events]
        return first.replayed, again.replayed, content(stored)

    assert both(ways, script)[:2] == (False, True)


@covers(Emit)
def test_the_privacy_rules_screen_an_emit_the_same_way(ways: tuple[Way, Way]) -> None:
    secret = "password=hunter2hunter2"

    def script(way: Way) -> Any:
        way.do(Emit(drafts("screened", secret)))
        return [e["line"] for e in way.stored("screened")]

    assert secret not in str(both(ways, script))


def test_many_keyed_emits_at_once_through_the_daemon_all_answer(ways: tuple[Way, Way]) -> None:
    """A command waits, in its thread, for the writer's steps on the daemon's loop: more at
    once than the loop has threads still all answer (no thread waits on one it holds)."""
    from concurrent.futures import ThreadPoolExecutor

    daemon = ways[1]

    def emit(n: int) -> Any:
        command = Emit(drafts("crowd", f"n{n}"), key=f"crowd-{n}")
        return daemon.transport().do(command, timeout=20)

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(emit, range(16)))
    assert [r.replayed for r in results] == [False] * 16
    assert len(daemon.stored("crowd")) == 16


@covers(Import)
def test_an_import_stores_the_same_ids_and_a_keyed_retry_is_replayed(
    ways: tuple[Way, Way],
) -> None:
    events = foreign("import", 3)

    def script(way: Way) -> Any:
        first = way.do(Import(events, key="import-key"))
        again = way.do(Import(events, key="import-key"))
        return first, again, [e["id"] for e in way.stored("import")]

    first, again, ids = both(ways, script)
    assert (first.imported, first.replayed, again.replayed) == (3, False, True)
    assert ids == [e.id.hex() for e in events]


@covers(Seal, Compact)
def test_seal_and_compact_give_the_same_typed_results(ways: tuple[Way, Way]) -> None:
    def script(way: Way) -> Any:
        way.do(Emit(drafts("seal", "to seal")))
        sealed = way.do(Seal())
        compacted = way.do(Compact(target_rows=1_000_000))
        return type(sealed), sealed.segment is not None, type(compacted), way.stored("seal") != []

    assert both(ways, script)[1] is True


@covers(Pause, Resume)
def test_a_pause_and_its_resume_give_the_same_states(ways: tuple[Way, Way]) -> None:
    def script(way: Way) -> Any:
        paused = way.do(Pause(for_ms=60_000))
        ended = way.do(Resume())
        nothing = way.do(Resume())
        state = paused.capture
        lasts = (state.until_ns - state.since_ns) // 1_000_000_000 if state.until_ns else None
        return state.paused, lasts, ended.ended == state, nothing.ended

    assert both(ways, script) == (True, 59, True, None)


@covers(Forget)
def test_a_forget_erases_the_same_events(ways: tuple[Way, Way]) -> None:
    request = request_of(kinds=["contract.forget"], reason="contract")

    def script(way: Way) -> Any:
        batch = tuple(
            Draft.of("contract.forget", subject="forget", line=f"gone {i}") for i in (1, 2)
        )
        way.do(Emit(batch))
        result = way.do(Forget(request)).result
        lines = [e.get("line") for e in way.stored("forget")]
        return result.erased, result.sources, result.dry_run, lines

    erased, _, dry, lines = both(ways, script)
    assert (erased, dry) == (2, False) and "gone 1" not in lines


@covers(Archive)
def test_an_archive_moves_whole_segments_the_same_way(
    ways: tuple[Way, Way], tmp_path: Path
) -> None:
    def script(way: Way) -> Any:
        way.do(Emit(drafts("archive", "old")))
        way.do(Seal())
        cut = _newest(way)
        folder = tmp_path / ("daemon" if way.through_daemon else "direct")
        result = way.do(Archive(cut, str(folder))).result
        return type(result), result.vacuumed, Path(result.to).name == folder.name

    assert both(ways, script)[2] is True


def _newest(way: Way) -> Hlc:
    """A cut after everything sealed so far: the newest stamp, one tick on."""
    newest = snapshot(way.ws.log_root).newest
    return Hlc(newest.physical_ns + 1, 0)


@covers(GetStatus, ListSenses)
def test_status_and_senses_answer_each_way(ways: tuple[Way, Way]) -> None:
    direct, daemon = ways
    assert direct.do(GetStatus()).running is False
    health = daemon.do(GetStatus())
    assert health.running is True and "pid" in health.figures
    names = [sorted(r["name"] for r in way.do(ListSenses()).senses) for way in ways]
    assert names[0] == names[1] and names[0]


@covers(TriggerSense, Reload)
def test_commands_for_the_running_daemon_are_refused_without_one(
    ways: tuple[Way, Way],
) -> None:
    direct, daemon = ways
    sense = sorted(r["name"] for r in direct.do(ListSenses()).senses)[0]
    with pytest.raises(UsageError, match="daemon is not running"):
        direct.do(TriggerSense(sense))
    with pytest.raises(DaemonError, match="daemon is not running"):
        direct.do(Reload())
    assert daemon.do(TriggerSense(sense)) == Done()
    assert daemon.do(Reload()) == Done()


@covers(TriggerRun, AnswerRun, RecheckRun, Override)
def test_run_commands_reach_the_workflow_engine(ways: tuple[Way, Way]) -> None:
    direct, daemon = ways
    commands: list[Command] = [
        TriggerRun("no-such-workflow"),
        AnswerRun("no-such-run", "yes", "tester"),
        RecheckRun("no-such-run"),
        Override("no-such-run", "contract", "tester", "/dev/pts/9", interactive=True),
    ]
    for command in commands:
        with pytest.raises(DaemonError, match="daemon is not running"):
            direct.do(command)
        with pytest.raises(WorkflowError, match="no-such"):
            daemon.do(command)


@covers(RunsStatus, FireCheck, RotateKey, SyncRound)
def test_extension_commands_reach_their_extension(ways: tuple[Way, Way]) -> None:
    """The workflow engine, attention and sync answer their commands in the daemon; here,
    without one, each is refused (their callers' own ways without a daemon are
    ``Transport.either``'s ``log`` half)."""
    direct, daemon = ways
    for command in (
        RunsStatus(),
        FireCheck("no-such-check", "README.md"),
        RotateKey(),
        SyncRound(),
    ):
        with pytest.raises(DaemonError, match="daemon is not running"):
            direct.do(command)
    assert "workflows" in daemon.do(RunsStatus()).fields
    with pytest.raises(CheckError, match="no-such-check"):
        daemon.do(FireCheck("no-such-check", "README.md"))
    assert daemon.do(SyncRound()) == Reply({"round": None})  # no group joined
    epoch = daemon.do(RotateKey()).fields["epoch"]
    assert daemon.do(RotateKey()).fields["epoch"] == epoch + 1


@covers(Stop)
def test_stop_ends_the_daemon_and_is_refused_without_one(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    with pytest.raises(DaemonError):
        Direct(ws).do(Stop())
    served = Daemon(ws.root)
    served.start()
    try:
        assert connect(ws).do(Stop()) == Done()
        served.wait_for(lambda: isinstance(connect(ws), Direct), what="the daemon to stop")
    finally:
        served.stop()


def test_junk_is_refused_naming_the_field(ways: tuple[Way, Way]) -> None:
    """A command in another version, or with a field of the wrong type, is refused here and
    by the daemon with an error naming the field."""
    junk = [
        ({"v": 2, "type": "seal"}, "v"),
        ({"v": 1, "type": "emit", "events": "none"}, "events"),
        ({"v": 1, "type": "compact", "target_rows": -1}, "target_rows"),
        ({"v": 1, "type": "pause", "for_ms": "soon"}, "for_ms"),
        ({"v": 1, "type": "archive", "before": "yesterday", "to": "x"}, "before"),
        ({"v": 1, "type": "no-such-command"}, "type"),
    ]
    socket = ways[1].ws.data / "nerve.sock"
    for request, field in junk:
        with pytest.raises(NerveError) as refused:
            command_of(request)
        assert refused.value.field == field
        reply = ipc.request(socket, request, timeout=30)
        assert reply["ok"] is False and reply["error"].get("field") == field, reply


def test_every_command_round_trips_through_its_json() -> None:
    examples: list[Command] = [
        Emit(drafts("json", "a"), key="k"),
        Import(foreign("json", 1), key="k"),
        Seal(),
        Compact(5),
        Pause(10),
        Resume(),
        Forget(request_of(kinds=["x"], reason="r")),
        Archive(Hlc(5, 1), "/tmp/a", vacuum=True),
        GetStatus(),
        ListSenses(),
        TriggerSense("cpu"),
        Reload(),
        Stop(),
        TriggerRun("w", "p", 3, True, "k"),
        AnswerRun("r", "yes", "me"),
        RecheckRun("r"),
        Override("r", "why", "me", "/dev/pts/1", interactive=True),
        RunsStatus(),
        FireCheck("c", "p", "r", "s"),
        RotateKey(),
        SyncRound(),
    ]
    assert {type(c) for c in examples} == set(COMMANDS)
    for command in examples:
        assert command_of(command.to_json()) == command
        assert command.to_json()["v"] == 1


def test_the_suite_covers_every_command() -> None:
    covered = {c for commands in COVERS.values() for c in commands}
    assert covered == set(COMMANDS), set(COMMANDS) - covered


def test_the_socket_answers_the_command_set_and_nothing_else() -> None:
    """The daemon's table (the kernel's own, built from the commands, and those of the
    workflow engine, attention and sync) names every command and no other request."""
    from nerve.attention.service import AttentionService
    from nerve.flow.control import handlers
    from nerve.runtime import control
    from nerve.runtime.syncer import SyncLoop

    engine: Any = object()  # the engine's handlers are only bound to it here, not called
    table = {**control.HANDLERS, **handlers(engine)}
    table |= AttentionService().handlers() | SyncLoop().handlers()
    assert sorted(table) == sorted(c.TYPE for c in COMMANDS)


def test_a_stream_on_the_socket_is_a_command_too(ways: tuple[Way, Way]) -> None:
    """``follow`` (the one stream) is a typed command like the rest: its request is
    ``Follow.to_json()``, its first answer parses as its ``RESULT``, the events it pushes
    after that are the ones emitted, and junk in it is refused naming the field."""
    assert (Follow,) == STREAMS and not set(STREAMS) & set(COMMANDS)
    _, daemon = ways
    path = socket_path(daemon.ws)
    stream = ipc.LineStream(path, Follow({"kinds": ["contract.test"]}).to_json(), timeout=10)
    try:
        joined = Joined.from_json(stream.reply)
        assert stream.reply["ok"] and joined.joined[0] > 0
        daemon.do(Emit(drafts("follow", "pushed")))
        lines = next(stream.lines())
        assert b'"line":"pushed"' in lines[0], lines
    finally:
        stream.close()
    junk = ipc.LineStream(path, {**Follow().to_json(), "filter": [1]}, timeout=10)
    try:
        assert not junk.reply["ok"] and junk.reply["error"]["field"] == "filter", junk.reply
    finally:
        junk.close()


def test_an_operation_with_a_way_of_its_own_takes_the_transport_s_half(
    ways: tuple[Way, Way],
) -> None:
    """``Transport.either``: the command through the daemon, the operation's own way here;
    a missing half is refused as a command that cannot run here is."""
    direct, daemon = ways
    assert direct.transport().either(RunsStatus(), log=lambda: "here") == "here"
    answered = daemon.transport().either(RunsStatus(), log=lambda: "here", read=type)
    assert answered is Reply
    with pytest.raises(DaemonError, match="daemon is not running"):
        direct.transport().either(RunsStatus())
    with pytest.raises(UsageError, match="a daemon holds this log"):
        daemon.transport().either(log=lambda: "here")
