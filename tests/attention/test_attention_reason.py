"""One reason per decision (nerve.attention.reason): every surface gives the same sentence.

A real log, attended and sealed, holds a surfaced decision, a ``hold:transient`` (a CPU burst
of seconds), a ``hold:direction`` (free disk that grew, a CPU that went quiet) and a
``hold:budget`` (a second CPU hog with the budget spent on the first). ``nerve audit held``
and ``audit show``, the web UI's Attention list and decision pages, MCP's ``highlights`` and
``ask`` and ``nerve ask`` all say why each was decided in the sentence ``reason_of`` gives;
``audit held`` on a terminal gives that sentence whole, wrapped to its width."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import get_args

import pytest

import nerve
from nerve import api
from nerve.attention import audit
from nerve.attention.reason import reason_of
from nerve.attention.service import replay
from nerve.chain.records import SEALABLE, Outcome
from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.mcp import tools
from nerve.mcp.budgets import Allowance
from nerve.privacy.screen import Screen
from nerve.workspace import WorkspaceDir
from tests.attention.test_attention_service import make_workspace
from tests.conftest import run_cli
from tests.helpers.terminal import drawn
from tests.ui.test_ui import client as ui_client

S = 10**9
T0 = 1_767_261_600 * S  # 2026-01-01 10:00 UTC
# One surfacing's worth of budget and no refill: the second confirmed hog cannot be paid.
ATTENTION = "attention:\n  gate: {budget_capacity_uj: 250000, refill_uj_per_s: 0}\n"
FOUR = ("surface", "hold:transient", "hold:direction", "hold:budget")


def _readings() -> list[tuple[int, str, dict[str, int]]]:
    """CPU every 5 s near 8 % with a 15 s burst at 95 % and two five-minute hogs (65 %,
    68 %); free disk every 30 s, slowly shrinking, then 5 GiB freed."""
    rng = random.Random(7)
    busy = {5400 + k: 950 for k in (0, 5, 10)}
    busy |= {s: 650 for s in range(6000, 6300, 5)} | {s: 680 for s in range(7800, 8100, 5)}
    rows = [
        (T0 + s * S, "cpu", {"busy_permille": busy.get(s, round(rng.gauss(80, 10)))})
        for s in range(0, 9000, 5)
    ]
    free = 50_000
    for s in range(0, 9000, 30):
        free += 5_000 if s == 7200 else -rng.randint(0, 2)
        rows.append((T0 + s * S + 1, "disk", {"free_mib:/": free}))
    return sorted(rows, key=lambda r: r[0])


def _event(t: int, sense: str, readings: dict[str, int]) -> Event:
    return Event(
        hlc=Hlc(t, 0), node="n", kind="observation", subject=sense, trust=Trust.FIRST_PARTY,
        source=int(SourceClass.ENDPOINT), line=f"{sense} {readings}",
        payload={"readings": readings},
    )  # fmt: skip


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceDir]:
    root = tmp_path_factory.mktemp("reason")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    made = make_workspace(root / "ws", [_event(*r) for r in _readings()], attention=ATTENTION)
    with made.open_log() as log:
        replay(log, made.config.attention, made.data / "keys")
    yield WorkspaceDir(made.root)
    mp.undo()


@pytest.fixture(scope="module")
def said(ws: WorkspaceDir) -> dict[int, tuple[str, str]]:
    """Each decision's ``(outcome, sentence)`` by chain seq, as ``reason_of`` says it."""
    found = {
        d["chain_seq"]: (d["outcome"], reason_of(d).words()) for d in audit.decisions(ws.log_root)
    }
    assert set(FOUR) <= {o for o, _ in found.values()}, found
    return found


def _door(ws: WorkspaceDir) -> api.Workspace:
    return nerve.open(ws.root)


def _call(ws: WorkspaceDir) -> tools.Call:
    door = _door(ws)
    return tools.Call(door, Screen(door.settings.config.privacy), Allowance(500, 1 << 20))


def test_the_transient_hold_names_what_the_rule_compared_and_no_margin(
    said: dict[int, tuple[str, str]],
) -> None:
    sentences = {o: [w for oo, w in said.values() if oo == o] for o in FOUR}
    for words in sentences["hold:transient"]:
        assert "margin" not in words and "cost" not in words, words
        assert words.startswith("held as passing") and "baseline" in words
    assert "not 3 MiB past the 49,905 MiB it fired at" in " ".join(sentences["hold:transient"])
    assert "or was explained" not in " ".join(sentences["hold:transient"])
    assert any(
        "disk.free_mib:/ rose to 54,791 MiB" in w and "only a fall matters" in w
        for w in sentences["hold:direction"]
    ), sentences
    assert all("margin" not in w for w in sentences["hold:direction"])
    (budget,) = sentences["hold:budget"]
    assert "budget held only 0 mJ, less than the price of a surfacing" in budget
    (surfaced,) = sentences["surface"]
    assert "paid 250 mJ (250 mJ → 0 mJ)" in surfaced


def test_the_cli_says_the_same_in_audit_held_and_audit_show(
    ws: WorkspaceDir, said: dict[int, tuple[str, str]]
) -> None:
    root = str(ws.root)
    lines = run_cli("--workspace", root, "audit", "held", "--json").stdout.splitlines()
    held = [json.loads(line) for line in lines]
    by_seq = {row["chain_seq"]: row["why"] for row in held}
    assert by_seq == {seq: w for seq, (o, w) in said.items() if o.startswith("hold:")}
    for seq, (_, words) in said.items():
        shown = run_cli("--workspace", root, "audit", "show", str(seq)).stdout
        assert f"why                    {words}" in shown.replace("  # why the gate decided so", "")


@pytest.mark.parametrize("width", [60, 80])
def test_audit_held_on_a_terminal_gives_every_why_whole(
    ws: WorkspaceDir,
    said: dict[int, tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    width: int,
) -> None:
    shown = drawn(monkeypatch, width, 24, "--workspace", str(ws.root), "audit", "held")
    lines = shown.splitlines()
    assert lines and all(len(line) <= width for line in lines), shown
    flowing = " ".join(line.strip() for line in lines)
    for seq, (outcome, words) in said.items():
        assert (f"#{seq}  " in shown and words in flowing) == outcome.startswith("hold:"), seq


def test_the_ui_lists_and_pages_say_the_same(
    ws: WorkspaceDir, said: dict[int, tuple[str, str]]
) -> None:
    c = ui_client(ws)
    json_accept = {"accept": "application/json"}
    listed = c.get("/attention", headers=json_accept).json()["decisions"]
    assert {d["chain_seq"]: d["why"] for d in listed} == {s: w for s, (_, w) in said.items()}
    for seq, (_, words) in said.items():
        assert c.get(f"/attention/{seq}", headers=json_accept).json()["why"] == words
        assert f'<dd id="why">{words}</dd>' in c.get(f"/attention/{seq}").text.replace("&gt;", ">")


def test_mcp_highlights_filters_every_outcome_and_says_the_same(
    ws: WorkspaceDir, said: dict[int, tuple[str, str]]
) -> None:
    assert set(get_args(Outcome)) == set(SEALABLE)
    for outcome in (*SEALABLE, "surfaced", "held"):
        out = tools.highlights(_call(ws), outcome=outcome)  # type: ignore[arg-type]
        want = {
            s: w
            for s, (o, w) in said.items()
            if o == outcome or (outcome, o == "surface") in (("surfaced", True), ("held", False))
        }
        assert {d.chain_seq: d.why for d in out.decisions} == want, outcome
