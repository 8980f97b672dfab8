"""The front door: ``nerve.open`` and the Workspace it returns, on real logs and a real daemon."""

from __future__ import annotations

import importlib
import inspect
import io
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import nerve
from nerve import errors
from nerve.workspace import WorkspaceDir as Folder
from tests.conftest import run_cli
from tests.daemon_util import started


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_emit_stores_one_event_and_sql_sees_it(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    event = ws.emit(source="shell", line="make test", payload={"cwd": "/src"})
    rel = ws.sql("select line, data->>'cwd' from events where kind = 'observation'")
    assert isinstance(rel, duckdb.DuckDBPyRelation)
    assert rel.fetchall() == [("make test", "/src")]
    assert ws.events().column("id").to_pylist() == [event.id]
    assert ws.events.payload(event.payload_cid.hex()) == b'{"cwd":"/src"}'


def test_replay_digest_is_what_nerve_replay_prints(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    ws.emit_many([{"source": "shell", "line": f"cmd {n}"} for n in range(3)])
    printed = run_cli("--workspace", str(workspace.root), "replay").stdout
    report = ws.replay()
    assert f"digest   {report.digest}" in printed
    assert report.events == 3
    verified = ws.replay(verify=True)
    assert verified.ok and verified.digest == report.digest


def test_emit_jsonl_names_the_bad_line(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    stream = io.StringIO('{"source": "shell", "line": "a"}\nnot json\n')
    with pytest.raises(nerve.UsageError, match=r"batch\.jsonl:2: not valid JSON"):
        ws.events.emit_jsonl(stream, "batch.jsonl")
    assert ws.events().num_rows == 0  # all or nothing


def test_a_keyed_append_says_whether_it_was_replayed(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    batch = [{"source": "shell", "line": "a"}, {"source": "shell", "line": "b"}]
    first = ws.events.append(batch, key="k")
    again = ws.events.append(batch, key="k")
    assert not first.replayed and again.replayed and again.events == first.events
    lines = io.StringIO('{"source": "shell", "line": "c"}\n')
    assert not ws.events.emit_jsonl(lines, key="j").replayed
    assert ws.events.emit_jsonl(io.StringIO(lines.getvalue()), key="j").replayed
    assert not ws.events.append(batch).replayed  # without a key a batch is stored again
    assert ws.events(sources=["shell"]).num_rows == 5


def test_a_read_only_open_creates_nothing_and_loads_no_cli(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "nerve.yaml").write_text("senses: {}\n")
    before = _tree(root)
    code = (
        "import sys, nerve\n"
        f"ws = nerve.open({str(root)!r}, read_only=True)\n"
        "print(ws.sql('select count(*) from events').fetchall())\n"
        "print(sorted(m for m in sys.modules if m.startswith(('nerve.cli', 'typer', 'rich'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[(0,)]", "[]"]
    assert _tree(root) == before


def test_a_read_only_workspace_refuses_writes(workspace: Folder) -> None:
    ws = nerve.open(workspace.root, read_only=True)
    for write in (
        lambda: ws.emit(source="shell"),
        ws.log.seal,
        lambda: ws.privacy.forget(kinds=["x"]),
    ):
        with pytest.raises(nerve.UsageError, match="opened read-only"):
            write()


def test_forget_dry_run_then_forget(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    ws.emit(source="shell", line="secret")
    plan = ws.privacy.forget(match="secret", dry_run=True)
    assert (plan.dry_run, plan.erased) == (True, 1)
    assert ws.privacy.forget(match="secret").erased == 1
    assert ws.sql("select line from events where kind = 'observation'").fetchall() == [(None,)]
    assert ws.replay(verify=True).ok


def test_without_a_daemon_status_says_so_and_repair_runs(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    assert ws.daemon.status().to_json() == {"running": False}
    assert ws.log.repair() == []


def test_with_a_daemon_writes_go_through_it(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    with started(workspace.root):
        status = ws.daemon.status()
        assert status.running and status.health["pid"] > 0
        event = ws.emit(source="shell", line="through the daemon")
        ws.refresh()
        assert ws.sql("select id from events where line = 'through the daemon'").fetchall() == [
            (event.id,)
        ]
        with pytest.raises(nerve.UsageError, match="a daemon holds this log"):
            ws.log.repair()  # the daemon is the single writer: no one else opens the log


def test_a_folder_that_is_not_a_workspace_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(nerve.UsageError, match="not a nerve workspace"):
        nerve.open(tmp_path)


def test_all_is_sorted_complete_and_resolves() -> None:
    assert nerve.__all__ == sorted(nerve.__all__)
    for name in nerve.__all__:
        assert getattr(nerve, name) is getattr(importlib.import_module(nerve._HOME[name]), name)
    api = importlib.import_module("nerve.api")
    tree = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, (errors.NerveError, UserWarning))
        and value.__module__ == "nerve.errors"
    }
    assert set(api.__all__) | tree <= set(nerve.__all__)
    assert set(nerve.__all__) <= set(dir(nerve))


def test_all_is_made_from_the_one_table_of_homes() -> None:
    """Each public name is written once as a string, in ``_HOME``: ``__all__`` is made from it."""
    assert nerve.__all__ == list(nerve._HOME)
    source = Path(nerve.__file__).read_text(encoding="utf-8")
    assert [n for n in nerve.__all__ if source.count(f'"{n}"') != 1] == []


def test_dir_shows_names_not_yet_loaded() -> None:
    code = "import nerve; print('open' in dir(nerve), 'open' in vars(nerve))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_ask_runs_and_export_through_the_front_door(workspace: Folder, tmp_path: Path) -> None:
    ws = nerve.open(workspace.root)
    ws.emit(source="shell", line="git push origin main")
    before = ws.events().num_rows
    answer = ws.ask("which git commands did I run?", record=False)
    assert answer.question == "which git commands did I run?"
    assert ws.events().num_rows == before  # nothing recorded
    ws.ask("which git commands did I run?")
    kinds = ws.events().column("kind").to_pylist()[before:]
    assert kinds[0] == "ask.question" and len(kinds) == 2
    assert ws.runs.table().rows == []
    exported = ws.log.export(tmp_path / "out.duckdb")
    count = duckdb.connect(str(tmp_path / "out.duckdb")).sql("select count(*) from events")
    assert count.fetchall() == [(exported.events,)] and exported.events >= 1


def test_sense_list_comes_from_nerve_yaml_without_a_daemon(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    names = {row["name"] for row in ws.senses.all()}
    assert names == set(workspace.config.senses)
    with pytest.raises(nerve.UsageError, match="the daemon is not running"):
        ws.sense(sorted(names)[0]).trigger()


def test_a_query_after_a_write_sees_it(workspace: Folder) -> None:
    ws = nerve.open(workspace.root)
    assert ws.sql("select count(*) from events").fetchall() == [(0,)]
    ws.emit(source="shell", line="one")
    assert ws.sql("select count(*) from events").fetchall() == [(1,)]


def test_the_error_tree_draws_every_nerve_error() -> None:
    """One exception tree: every NerveError subclass nerve defines is drawn in nerve.errors."""
    import pkgutil

    for info in pkgutil.walk_packages(nerve.__path__, "nerve."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found, todo = set(), [errors.NerveError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("nerve.") and sub.__name__ not in found:
                found.add(sub.__name__)
                todo.append(sub)
    drawn = str(errors.__doc__)
    assert sorted(name for name in found if f"── {name} " not in drawn) == []


GLOSSARY = ["host", "gate", "check", "guard", "sealed", "audit", "snapshot", "transport"]


def test_the_package_docstring_gives_each_word_one_entry_naming_real_modules() -> None:
    """The glossary in ``nerve``'s docstring has one entry per word, and every module and
    class an entry names (``:mod:`...```, a dotted ``:class:`...```) exists: a rename it
    announces updates it."""
    doc = str(nerve.__doc__)
    heads = [line for line in doc.splitlines() if line and not line[0].isspace()]
    entries = [line for line in heads if line in GLOSSARY or line == "settings, config"]
    assert entries == [*GLOSSARY, "settings, config"]
    for module in re.findall(r":mod:`([\w.]+)`", doc):
        importlib.import_module(module)
    for target in re.findall(r":class:`~?(\w+\.[\w.]+)`", doc):
        home, _, name = target.rpartition(".")
        assert hasattr(importlib.import_module(home), name), target
