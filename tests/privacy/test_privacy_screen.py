"""One screen for every reader (:mod:`nerve.privacy.screen`): a code a rule redacts and a
command an exclusion withholds, stored before those rules, leave through no UI page, JSON
twin, SQL box, MCP tool or resource: not as text, and not through an address of their row
(``payload_cid`` or ``id``, blake3 of the hidden bytes: a 4-digit code falls to brute force)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

import nerve
from nerve import api, logops
from nerve.attention.service import replay
from nerve.attention.settings import parse_attention
from nerve.canonical import canonical_json
from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust, cid
from nerve.log.drafts import Draft
from nerve.mcp import catalog, info, tools
from nerve.mcp.budgets import Allowance
from nerve.privacy.screen import Screen
from nerve.ui import data
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, token, token_path
from nerve.ui.guard import Served
from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers.attended import ATTENTION, CYCLE, STEP_NS

CODE = "7391"
SECRET = f"otp {CODE}"
EXCLUDED = "vault read secret/prod-db"
RULES = """
privacy:
  detectors: {enabled: false}
  shell: {exclude: ['vault *']}
  rules:
    - {name: otp, regex: 'otp [0-9]{4}'}
"""
PORT = 8765


def _observation(i: int, t0: int) -> Event:
    """Shell work with an excluded command now and then, and bursts of untrusted endpoint
    events holding a one-time code: attention decides on those, so decisions name them."""
    cycle, phase = divmod(i, CYCLE)
    if phase >= CYCLE - 4:
        source, trust, line = SourceClass.ENDPOINT, Trust.UNTRUSTED, f"login {SECRET} #{i}"
    elif cycle % 2 == 1 and phase == 12:
        source, trust, line = SourceClass.APP_FOCUS, Trust.FIRST_PARTY, f"editor #{i}"
    else:
        line = EXCLUDED if phase % 9 == 4 else f"make build #{i}"
        source, trust = SourceClass.SHELL, Trust.FIRST_PARTY
    payload = {"command": line} if source == SourceClass.SHELL else {"note": SECRET, "i": i}
    return Event(
        hlc=Hlc(t0 + i * STEP_NS, 0),
        node="n",
        kind="observation",
        subject=f"{source.name.lower()}-sense",
        source=int(source),
        trust=trust,
        line=line,
        payload=payload,
    )


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceDir]:
    """Decisions sealed in the chain over rows holding the code and the command, some in
    sealed segments and some in the tail; the rules that hide them written afterwards."""
    root = tmp_path_factory.mktemp("screen")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    made = init_workspace(root / "ws")
    (made.root / "nerve.yaml").write_text("senses: {}\n" + ATTENTION)
    folder = WorkspaceDir(made.root)
    count = 4 * CYCLE
    t0 = time.time_ns() - 60 * 10**9 - count * STEP_NS
    with folder.open_log() as log:
        log.import_events([_observation(i, t0) for i in range(count)])
        replay(log, parse_attention(folder.config.attention), folder.data / "keys")
        log.seal()
    tail = [Draft.of(source=5, line=EXCLUDED, payload={"command": EXCLUDED}),
            Draft.of(source=int(SourceClass.ENDPOINT), line=f"sms {SECRET}",
                     payload={"note": SECRET})]  # fmt: skip
    logops.emit(folder, tail)
    (folder.root / "nerve.yaml").write_text("senses: {}\n" + ATTENTION + RULES)
    yield WorkspaceDir(folder.root)
    mp.undo()


def _door(ws: WorkspaceDir) -> api.Workspace:
    return nerve.open(ws.root)


def _hidden_addresses(ws: WorkspaceDir) -> set[str]:
    """The stored id and payload address (hex) of every row holding the code or the command:
    any of them shown is an oracle for the hidden text."""
    conn = _door(ws).new_connection()
    try:
        rows = conn.execute(
            "SELECT id, payload_cid FROM events WHERE contains(line, ?) OR contains(line, ?) "
            "OR contains(TRY(decode(payload)), ?) OR contains(TRY(decode(payload)), ?)",
            [SECRET, EXCLUDED, SECRET, EXCLUDED],
        ).fetchall()
    finally:
        conn.close()
    assert len(rows) > 20
    return {bytes(v).hex() for row in rows for v in row}


def _forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [secret, secret[::-1], secret.upper(), raw.hex(), raw.hex().upper(),
            base64.b64encode(raw).decode()[:8]]  # fmt: skip


def _leaks(text: str, addresses: set[str]) -> list[str]:
    """What of the hidden text, or of its rows' addresses, ``text`` holds."""
    lower = text.lower()
    found = [f for f in _forms(SECRET) + _forms(EXCLUDED) if f in text]
    return found + [a for a in addresses if a in lower]


def _client(ws: WorkspaceDir) -> tuple[TestClient, set[str]]:
    """A logged-in client, and the paths of every route of the app."""
    app = build_app(_door(ws), Keys(token_path(_door(ws))), Served("127.0.0.1", PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}")
    token(_door(ws))
    code = Keys(token_path(_door(ws))).login_code()
    assert c.get(f"/login?token={code}", follow_redirects=False).status_code == 303
    paths = {r.path for r in app.app.routes if isinstance(r, Route | Mount)}  # type: ignore[attr-defined]
    return c, paths


def _get(c: TestClient, path: str, *, json_twin: bool = True) -> list[str]:
    """The page at ``path`` and, unless it has none, its JSON twin."""
    page = c.get(path)
    assert page.status_code in (200, 404), (path, page.text)
    out = [page.text]
    if json_twin:
        twin = c.get(path, headers={"accept": "application/json"})
        out.append(twin.text)
    return out


def _ui_responses(ws: WorkspaceDir) -> tuple[list[tuple[str, str]], set[str]]:
    """Every route of ``nerve ui`` answered: its pages, JSON twins, searches, permalinks of
    every event shown, every decision, the SQL box (HTML, JSON, CSV) and the live tail."""
    c, routes = _client(ws)
    seen: list[tuple[str, str]] = []
    walked = {"/login", "/favicon.ico", "/do/{action}", "/static"}  # no rows: see the asserts
    pages = ["/", "/?since=1h", "/events?since=1h&all=1", "/events?since=1h&text=otp",
             "/events?since=1h&text=vault", "/events?since=1h&text=7391", "/live", "/senses",
             "/privacy", "/health", "/attention", "/timeline", "/timeline?since=1h",
             "/timeline/counts", "/timeline/counts?since=1h", "/?since=1h&group=title",
             "/?since=1h&group=category"]  # fmt: skip
    for path in pages:
        seen += [(path, t) for t in _get(c, path)]
    seen.append(("events csv", c.get("/events?since=1h&all=1&size=1000&format=csv").text))
    walked |= {"/", "/events", "/live", "/senses", "/privacy", "/health", "/attention"}
    walked |= {"/timeline", "/timeline/counts"}
    events = c.get("/events?since=1h&all=1&size=1000", headers={"accept": "application/json"})
    events = events.json()
    ids = [e["id"] for e in events["events"]]
    assert len(ids) > 100
    for event_id in ids[:: max(1, len(ids) // 60)] + ids[-3:]:
        seen += [(f"/events/{event_id}", t) for t in _get(c, f"/events/{event_id}")]
    walked.add("/events/{id}")
    decisions = c.get("/attention", headers={"accept": "application/json"}).json()["decisions"]
    seqs = {d["chain_seq"] for d in decisions if d["chain_seq"] is not None}
    assert len(seqs) > 3
    for seq in sorted(seqs):
        seen += [(f"/attention/{seq}", t) for t in _get(c, f"/attention/{seq}")]
    walked.add("/attention/{seq}")
    for sql in ("SELECT * FROM events", "SELECT hex(id), hex(payload_cid), data FROM events"):
        q = f"/sql?q={sql}"
        seen += [(q, t) for t in _get(c, q)] + [(q, c.get(q + "&format=csv").text)]
    walked.add("/sql")
    rows, _ = data.live_batch(_door(ws), data.Filters(), None, limit=100_000)
    seen.append(("/live/stream", json.dumps(rows, default=str)))  # what the stream sends
    walked.add("/live/stream")
    return seen, routes - walked


def test_no_ui_route_shows_the_hidden_text_or_its_rows_addresses(ws: WorkspaceDir) -> None:
    addresses = _hidden_addresses(ws)
    seen, unwalked = _ui_responses(ws)
    assert unwalked == set(), "a new route: walk it here"
    for path, text in seen:
        assert _leaks(text, addresses) == [], path
    assert any("[redacted:otp]" in text for _, text in seen)  # the rows are there, screened


def _call(ws: WorkspaceDir) -> tools.Call:
    door = _door(ws)
    return tools.Call(door, Screen(door.settings.config.privacy), Allowance(5_000, 8 << 20), 60_000)


def _mcp_responses(ws: WorkspaceDir) -> tuple[list[tuple[str, str]], set[str]]:
    """Every read tool and resource of ``nerve mcp`` answered, with arguments that reach
    the hidden rows (a window, search words, ask's facts tier)."""
    call, door = _call(ws), _door(ws)
    out: dict[str, Any] = {
        "recent": tools.recent(call, since="1h", limit=1_000, include_bookkeeping=True),
        "search otp": tools.search(call, "login otp 7391", since="1h", limit=500),
        "search vault": tools.search(call, "vault read secret prod", since="1h", limit=500),
        "highlights": tools.highlights(call, limit=1_000),
        "query": tools.query(call, "SELECT * FROM events"),
        "query addresses": tools.query(call, "SELECT hex(id), hex(payload_cid) FROM events"),
        "status": info.status(door, call.screen),
    }
    for question in ("what did I run in the last hour?", "what happened in the last hour?",
                     "which commands failed in the last hour?", "vault read secret",
                     "login otp 7391"):  # fmt: skip
        out[f"ask {question}"] = tools.ask(call, question)
    seen = [(name, json.dumps(v.model_dump(), default=str)) for name, v in out.items()]
    seen.append(("nerve://sources", json.dumps(info.sources(door))))
    seen += [(f"schema {n}", json.dumps(info.schema(door, n))) for n in ["events"]]
    names = {t.__name__ for t in catalog.READ_TOOLS}
    walked = {"recent", "search", "highlights", "query", "status", "ask"}
    return seen, names - walked


def test_no_mcp_tool_shows_the_hidden_text_or_its_rows_addresses(ws: WorkspaceDir) -> None:
    addresses = _hidden_addresses(ws)
    seen, unwalked = _mcp_responses(ws)
    assert unwalked == set(), "a new tool: call it here"
    for name, text in seen:
        assert _leaks(text, addresses) == [], name
    assert any("[redacted:otp]" in text for _, text in seen)


def _guesses(row: dict[str, Any]) -> Iterator[tuple[str, bytes, Event]]:
    """Each 4-digit code put back into a redacted endpoint row: its payload address and id."""
    line, note = str(row["line"]), {"note": SECRET, "i": 0}
    for n in range(10_000):
        code = f"otp {n:04d}"
        payload = canonical_json({**note, "note": code, "i": row["data"]["i"]})
        event = Event(
            hlc=Hlc(int(row["physical_ns"]), int(row["logical"])), node=str(row["node"]),
            kind=str(row["kind"]), subject=str(row["subject"]), source=int(row["source"]),
            trust=Trust(int(row["trust"])), valid_time_ns=row["valid_time_ns"],
            payload=payload, line=line.replace("[redacted:otp]", code),
        )  # fmt: skip
        yield code, cid(payload), event


def test_a_redacted_code_is_not_found_by_hashing_every_guess(ws: WorkspaceDir) -> None:
    """The attack itself: through MCP's SQL, no guess of the code hashes to the payload
    address or the id a redacted row is shown with (both did, on the stored bytes)."""
    sql = ("SELECT physical_ns, logical, node, kind, subject, source, trust, valid_time_ns, "
           "payload_cid, id, line, data FROM events WHERE line LIKE 'login [redacted:otp] #%' "
           "ORDER BY physical_ns LIMIT 1")  # fmt: skip
    result = tools.query(_call(ws), sql)
    row = dict(zip(result.columns, result.rows[0], strict=True))
    shown_cid, shown_id = str(row["payload_cid"]), str(row["id"])
    hits = [code for code, address, event in _guesses(row)
            if address.hex() in shown_cid or event.id.hex() in shown_id]  # fmt: skip
    assert hits == []
    hidden = _hidden_addresses(ws)
    stored = [code for code, _, event in _guesses(row) if event.id.hex() in hidden]
    assert stored == [SECRET]  # the guesses are right: on the stored id, the code is found


def test_a_screened_rows_permalink_is_its_keyed_id(ws: WorkspaceDir) -> None:
    """A redacted row's id is keyed, yet its permalink and ``WHERE id = …`` find it."""
    c, _ = _client(ws)
    events = c.get("/events?since=1h&text=otp", headers={"accept": "application/json"}).json()
    first = events["events"][0]
    assert "[redacted:otp]" in first["line"]
    one = c.get(f"/events/{first['id']}", headers={"accept": "application/json"}).json()
    assert one["event"]["line"] == first["line"] and one["event"]["id"] == first["id"]
    sql = f"SELECT line FROM events WHERE id = from_hex('{first['id']}')"
    assert tools.query(_call(ws), sql).rows == [[first["line"]]]


def test_a_decisions_json_twin_screens_what_its_page_screens(ws: WorkspaceDir) -> None:
    """``/attention/SEQ?format=json`` once showed ``decision.source_line`` as stored."""
    c, _ = _client(ws)
    decisions = c.get("/attention", headers={"accept": "application/json"}).json()["decisions"]
    seq = next(d["chain_seq"] for d in decisions if "[redacted:otp]" in d["line"])
    twin = c.get(f"/attention/{seq}?format=json").json()
    page = c.get(f"/attention/{seq}").text
    assert "[redacted:otp]" in twin["decision"]["source_line"]
    assert twin["link"]["source_line"] == twin["decision"]["source_line"]
    assert SECRET not in json.dumps(twin) and SECRET not in page
    assert twin["decision"]["source_event"] == twin["link"]["event"]  # keyed, the same


def test_the_screen_redacts_a_rows_subject_as_its_line() -> None:
    """A subject names what a row is about (a file, a URL, a window): a rule added after
    capture must hide a value there too, and the row's addresses are keyed then."""
    import pyarrow as pa

    from nerve.privacy.settings import PrivacyConfig

    config = PrivacyConfig.model_validate(
        {"rules": [{"name": "sesame", "regex": "sesame", "action": "redact"}]}
    )
    screen = Screen(config)
    ids = [bytes([1]) * 32, bytes([2]) * 32]
    table = pa.table({
        "source": [5, 5], "kind": ["observation"] * 2,
        "subject": ["notes/open-sesame.txt", "notes/plain.txt"], "line": ["edit", "edit"],
        "payload": [b"{}", b"{}"], "id": ids, "payload_cid": ids,
    })  # fmt: skip
    shown = screen.rows(table).to_pylist()
    assert [r["subject"] for r in shown] == ["notes/open-[redacted:sesame].txt", "notes/plain.txt"]
    assert shown[0]["id"] != ids[0] and shown[1]["id"] == ids[1]
