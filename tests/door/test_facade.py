"""The front door by noun: ``Workspace`` keeps opening, emit, sql, replay and ask, and every
other operation is one call on a noun (``ws.log.seal()``, ``ws.audit.held()`` ...) whose
result is typed, not a dict."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import nerve
from nerve.api import NOUNS, Workspace
from nerve.door import fleet, named, nouns, runs, sync
from nerve.door.core import Core
from nerve.door.named import Decision
from nerve.log.manifest import SegmentInfo
from nerve.log.store import CompactResult
from nerve.workspace import WorkspaceDir
from tests.helpers.day import Day

DOOR = Path(nouns.__file__).parent
MOST_PUBLIC = 30


def _public(cls: type) -> list[str]:
    return [name for name in dir(cls) if not name.startswith("_")]


def _return_annotation(cls: type, name: str) -> str:
    attr = inspect.getattr_static(cls, name)
    fn = attr.fget if isinstance(attr, property) else getattr(attr, "func", attr)
    return str(getattr(fn, "__annotations__", {}).get("return", ""))


def test_the_workspace_has_at_most_thirty_public_names() -> None:
    assert len(_public(Workspace)) <= MOST_PUBLIC, _public(Workspace)


def test_no_public_name_of_the_workspace_returns_a_dict() -> None:
    dicts = [n for n in _public(Workspace) if "dict[" in _return_annotation(Workspace, n)]
    assert dicts == []


OPEN_BY_DESIGN = {  # mappings keyed by name, or rows whose fields depend on what they show
    "Runs.checks",  # check id -> typed manifest
    "Senses.all",  # a sense's figures are its own
    "Senses.live",
    "Settings.views",  # the settings the projections read, which a workspace may add to
    "Sync.devices",  # node -> device name
}


def _noun_classes() -> list[type]:
    return [vars(m)[name] for m in (nouns, named, fleet, runs, sync) for name in m.__all__]


def test_no_noun_method_returns_a_dict_but_the_open_ones() -> None:
    """A noun's result is a typed record (``to_json()`` for ``--json`` and MCP); the few
    results that are dicts say why in their docstring and are named here."""
    dicts = {
        f"{cls.__name__}.{name}"
        for cls in _noun_classes()
        if issubclass(cls, nouns.Noun)
        for name in _public(cls)
        if "dict[" in _return_annotation(cls, name)
    }
    assert dicts == OPEN_BY_DESIGN


def test_every_noun_the_table_names_is_on_the_workspace() -> None:
    """``NOUNS`` and the class agree: each noun is reached as ``ws.<name>``, and every public
    name that is not opening, SQL, emit, replay or ask is a noun or one of a noun."""
    own = {"create", "find", "close", "root", "log_root", "connection", "new_connection"}
    own |= {"refresh", "sql", "query", "rows", "emit", "emit_many", "replay", "ask"}
    by_one = {"sense", "run"}  # ws.sense(name), ws.run(id): one of ws.senses, ws.runs
    assert set(_public(Workspace)) == own | by_one | set(NOUNS)


def test_every_operation_of_the_core_is_reached_by_a_noun() -> None:
    """Each private operation of :class:`Core` and its mixins is called by a noun (an
    operation no noun calls could not be reached from the front door)."""
    called = set()
    for module in (nouns, named, fleet, runs, sync):
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        called |= {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "_ws"
        }
    helpers = {"_writable", "_open_connection", "_sense_connection", "_do"}
    ops = {
        name
        for klass in Core.__mro__
        if klass.__module__.startswith("nerve.door.")
        for name, value in vars(klass).items()
        if name.startswith("_") and not name.startswith("__")
        and (callable(value) or isinstance(value, property))
    }  # fmt: skip
    assert ops - helpers - called == set()


def test_seal_and_compact_return_their_records(workspace: WorkspaceDir) -> None:
    ws = nerve.open(workspace.root)
    assert ws.log.seal() is None  # nothing unsealed yet
    for n in range(3):
        ws.emit(source="shell", line=f"make {n}")
        sealed = ws.log.seal()
        assert isinstance(sealed, SegmentInfo) and sealed.rows == 1
    result = ws.log.compact(target_rows=10)
    assert isinstance(result, CompactResult)
    assert result.to_json() == {"merged": 3, "written": 1, "rows": 3}


def test_held_decisions_are_records_with_their_reason(recorded_day: Day) -> None:
    ws = nerve.open(recorded_day.root, read_only=True)
    held = ws.audit.held()
    every = ws.audit.decisions()
    assert held and all(isinstance(d, Decision) for d in held)
    assert {d.chain_seq for d in held} < {d.chain_seq for d in every}
    for d in held:
        assert d.outcome.startswith("hold:") and d.fields["chain_seq"] == d.chain_seq
        assert d.why().words() and d.to_json()["outcome"] == d.outcome
        assert ws.audit.why(d.chain_seq or 0) == d.why()
    assert ws.audit.why(max(d.chain_seq or 0 for d in every) + 1) is None


def test_a_noun_says_what_it_is(workspace: WorkspaceDir) -> None:
    ws = nerve.open(workspace.root)
    assert repr(ws.log) == f"{ws!r}.log"
    assert repr(ws.sense("cpu")) == f"{ws!r}.sense('cpu')"
    assert ws.log is ws.log  # made once per workspace
    assert ws.run("r1").id == "r1" and ws.sense("cpu").name == "cpu"


def test_the_python_doc_lists_every_noun_and_its_methods() -> None:
    """docs/python.md's table of nouns names each noun and exactly its public methods."""
    doc = (DOOR.parents[1] / "docs" / "python.md").read_text(encoding="utf-8")
    listed = {}
    for line in doc.splitlines():
        if line.startswith("| `ws."):
            noun, methods = line.strip("| ").split(" | ")
            listed[noun.strip("`")] = {m.strip("`") for m in methods.split(", ")} - {"(…)"}
    props = Workspace.__dict__
    classes = {f"ws.{name}": props[name].func.__annotations__["return"] for name in NOUNS}
    classes |= {"ws.sense(name)": "Sense", "ws.run(id)": "Run"}
    homes = {c: vars(m)[c] for m in (nouns, named, fleet, runs, sync) for c in m.__all__}
    found = {noun: {m for m in dir(homes[cls]) if m[0] != "_"} for noun, cls in classes.items()}
    assert listed == found
