"""`nerve ui` in a real browser: Debian's Chromium driven by Playwright against `nerve ui` run as
a subprocess on a workspace whose daemon is running. Each page's screenshot is saved in the
test's folder (set NERVE_UI_DOCS=1 to refresh the ones under docs/)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve import logops
from nerve.log.drafts import Draft
from nerve.workspace import WorkspaceDir
from tests.daemon_util import COUNTER, started, write_sense
from tests.helpers.browser import (
    attended_workspace,
    chromium,
    chromium_missing,
    ui_process,
    wait_until,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_missing() is not None, reason=str(chromium_missing())),
]
DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = {
    "day": "/",
    "timeline": "/timeline",
    "counts": "/timeline/counts?since=1h",
    "events": "/events?text=make+build&since=1h",
    "live": "/live",
    "sql": "/sql?q=SELECT+date_trunc('minute',+ts)+AS+minute,+count(*)+AS+events+FROM+events"
    "+GROUP+BY+ALL+ORDER+BY+minute",
    "attention": "/attention",
    "senses": "/senses",
    "privacy": "/privacy",
    "health": "/health?verify=1",
}


class Ui:
    """The served workspace, the `nerve ui` process and a logged-in browser page."""

    def __init__(self, ws: WorkspaceDir, base: str, page: Any, shots: Path) -> None:
        self.ws, self.base, self.page, self.shots = ws, base, page, shots
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))

    def go(self, path: str) -> Any:
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == 200, path
        return response

    def shot(self, name: str, page: Any = None) -> Path:
        path = self.shots / f"{name}.png"
        (page or self.page).screenshot(path=str(path))
        if os.environ.get("NERVE_UI_DOCS") == "1":
            DOCS.mkdir(exist_ok=True)
            shutil.copy(path, DOCS / f"ui-{name}.png")
        return path

    def clean(self) -> None:
        """No script error, no dialog, and none of the stored scripts ran."""
        assert self.page.evaluate("typeof window.__pwned") == "undefined"
        assert self.errors == []


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    root = tmp_path_factory.mktemp("browser")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    ws = attended_workspace(root / "ws")
    (ws.root / "nerve.yaml").write_text(
        (ws.root / "nerve.yaml")
        .read_text()
        .replace(
            "senses: {}", "senses:\n  counter: {interval: 1h}\n  window: {}"
        )  # no file: erroring
    )
    write_sense(ws.root, "counter", COUNTER)
    ws = WorkspaceDir(ws.root)
    shots = root / "screenshots"
    shots.mkdir()
    try:
        with (
            started(ws.root),
            ui_process(ws.root, {"XDG_STATE_HOME": str(root / "state")}) as proc,
            chromium(root / "downloads") as context,
        ):
            page = context.new_page()
            page.goto(proc.login_url)
            assert page.url == proc.base + "/"  # the token is gone from the address bar
            yield Ui(ws, proc.base, page, shots)
    finally:
        mp.undo()


def test_every_page_loads_and_no_stored_script_runs(ui: Ui) -> None:
    for name, path in PAGES.items():
        ui.go(path)
        ui.page.wait_for_load_state("load")
        assert ui.page.locator("nav a[aria-current=page]").count() == 1
        assert ui.shot(name).stat().st_size > 5_000
        ui.clean()
    ui.go("/events?text=pwned&since=1h")
    assert ui.page.locator("td.line mark").count() >= 1
    assert ui.page.locator("img").count() == 0
    ui.clean()


def test_the_timeline_zooms_by_brush_and_keys(ui: Ui) -> None:
    ui.go("/timeline/counts?since=1h")
    box = ui.page.locator("#timeline").bounding_box()
    left = box["x"] + box["width"] * 200 / 1220
    width = box["width"] * 1000 / 1220
    y = box["y"] + box["height"] * 0.1
    ui.page.mouse.move(left + width * 0.80, y)
    ui.page.mouse.down()
    ui.page.mouse.move(left + width * 0.90, y, steps=5)
    with ui.page.expect_navigation():
        ui.page.mouse.up()
    view = ui.page.evaluate(
        "fetch(location.href, {headers: {accept: 'application/json'}}).then(r => r.json())"
    )
    span = view["window"]["until_ns"] - view["window"]["since_ns"]
    assert 300 * 10**9 < span < 420 * 10**9  # a tenth of the hour
    assert sum(view["counts"]) > 0
    with ui.page.expect_navigation():
        ui.page.keyboard.press("-")
    wider = ui.page.evaluate(
        "fetch(location.href, {headers: {accept: 'application/json'}}).then(r => r.json())"
    )
    assert wider["window"]["until_ns"] - wider["window"]["since_ns"] == pytest.approx(
        2 * span, rel=0.01
    )
    ui.clean()


def test_search_highlights_and_pushes_a_permalink(ui: Ui) -> None:
    ui.go("/events?since=1h")
    ui.page.fill("#text", "build #12")
    ui.page.click("#search-go")
    ui.page.wait_for_url("**text=build*")
    marks = ui.page.locator("#results mark")
    marks.first.wait_for()
    assert {t.lower() for t in marks.all_inner_texts()} == {"build #12"}
    ui.page.locator("#results td.time a").first.click()
    ui.page.wait_for_url("**/events/*")
    assert ui.page.locator("table.context tr.this").count() == 1
    ui.clean()


def test_live_follows_emitted_events_without_loss_or_doubles(ui: Ui) -> None:
    ui.go("/live")
    state = ui.page.locator("#live-state")
    wait_until(lambda: state.inner_text() == "following", what="the live tail to connect")
    logops.emit(ui.ws, [Draft.of(source=5, line=f"live line {i}", payload={}) for i in range(30)])
    rows = ui.page.locator("#live-rows tr")
    wait_until(lambda: rows.count() > 0, what="the last minutes")  # not an empty page

    def live_lines() -> list[str]:
        texts = ui.page.locator("#live-rows td.line").all_inner_texts()
        return [t for t in texts if "live line" in t]

    wait_until(lambda: len(live_lines()) >= 30, what="30 live rows")
    lines = live_lines()
    assert sorted(lines) == sorted(f"live line {i}" for i in range(30))
    ui.page.click("#live-pause")
    logops.emit(ui.ws, [Draft.of(source=5, line=f"held line {i}", payload={}) for i in range(5)])
    ui.page.wait_for_timeout(300)  # a paused tail shows nothing new, whatever arrives
    assert not [t for t in ui.page.locator("#live-rows td.line").all_inner_texts() if "held" in t]
    ui.page.click("#live-pause")
    wait_until(
        lambda: (
            len(
                [
                    t
                    for t in ui.page.locator("#live-rows td.line").all_inner_texts()
                    if "held line" in t
                ]
            )
            == 5
        ),
        what="the held rows after resume",
    )
    ui.shot("live")
    ui.page.click("#live-clear")
    assert rows.count() == 0
    ui.clean()


def test_a_query_runs_and_downloads_as_csv(ui: Ui) -> None:
    ui.go("/sql")
    ui.page.fill("#sql-text", "SELECT kind, count(*) AS n FROM events GROUP BY ALL ORDER BY n DESC")
    ui.page.click("#sql-run")
    ui.page.locator("#sql-result").wait_for()
    assert ui.page.locator("#sql-result tbody tr").count() > 1
    with ui.page.expect_download() as got:
        ui.page.click("#sql-csv")
    text = Path(got.value.path()).read_text()
    assert text.splitlines()[0] == "kind,n" and "observation" in text
    ui.page.click("#sql-save")
    assert ui.page.locator("#sql-saved option").count() == 2
    ui.clean()


def test_a_held_decision_opens_and_verifies(ui: Ui) -> None:
    ui.go("/attention")
    assert "chain verifies" in ui.page.locator("#chain-state").inner_text()
    assert ui.page.locator("tr.held td.line").first.inner_text().strip()  # what happened
    ui.page.set_viewport_size({"width": 390, "height": 844})
    try:  # a phone keeps what happened, not only the outcome
        assert ui.page.locator("tr.held td.line").first.is_visible()
        assert ui.page.locator("table.decisions th.line").is_visible()
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    ui.page.locator("tr.held td a").first.click()
    ui.page.wait_for_url("**/attention/*")
    assert ui.page.locator("#link-verifies").inner_text().startswith("verifies")
    assert ui.page.locator("#outcome").inner_text().startswith("hold:")
    ui.shot("decision")
    ui.clean()


def test_pause_and_resume_through_the_daemon(ui: Ui) -> None:
    from nerve.runtime import daemon

    ui.go("/privacy")
    ui.page.click("#pause")
    ui.page.wait_for_url("**/do/pause")
    assert '"paused": true' in ui.page.locator("main").inner_text()
    status = daemon.call(ui.ws, {"type": "status"})["status"]
    assert status["capture"]["paused"] is True, status
    ui.go("/privacy")
    assert ui.page.locator("#capture-state").inner_text() == "paused"
    ui.page.click("#resume")
    ui.page.wait_for_url("**/do/resume")
    assert '"resumed": true' in ui.page.locator("#result").inner_text()
    ui.go("/privacy")
    assert ui.page.locator("#capture-state").inner_text() == "running"
    ui.clean()


def test_forget_shows_a_preview_then_erases(ui: Ui) -> None:
    logops.emit(ui.ws, [Draft.of(source=5, line=f"bank pin {i}", payload={}) for i in range(3)])
    ui.go("/privacy")
    ui.page.fill("#forget-match", "bank pin")
    ui.page.click("#forget-preview-button")
    count = ui.page.locator("#forget-count")
    count.wait_for()
    assert count.inner_text() == "3"
    ui.shot("forget-preview")
    ui.page.click("#forget-go")
    ui.page.wait_for_url("**/do/forget")
    assert '"erased": 3' in ui.page.locator("#result").inner_text()
    ui.go("/events?text=bank+pin&since=1h")
    assert ui.page.locator("#results tbody").inner_text().strip() == "nothing matches"
    ui.clean()


def test_a_sense_is_triggered_from_its_page(ui: Ui) -> None:
    ui.go("/senses")
    assert "live from the daemon" in ui.page.locator("h1").inner_text()
    before = len(_counts(ui.ws))
    ui.page.locator("#senses form button").first.click()
    ui.page.wait_for_url("**/do/trigger")
    wait_until(lambda: len(_counts(ui.ws)) > before, what="the triggered compute")
    ui.clean()


BROKEN_WORDS = """() => {
    const lines = (e) => { const r = document.createRange(); r.selectNodeContents(e);
                           return r.getClientRects().length; };
    document.querySelector("#senses tbody td:nth-child(3)").textContent =
        "a reading long enough to squeeze every other column ".repeat(40);
    return [...document.querySelectorAll("#senses td:first-child b, #senses button, #senses .head")]
        .filter((e) => lines(e) > 1).map((e) => e.textContent);
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_a_sense_name_and_its_trigger_are_never_broken_in_two(ui: Ui, width: int) -> None:
    try:
        ui.page.set_viewport_size({"width": width, "height": 844})
        ui.go("/senses")
        assert ui.page.locator("#senses .head").all_inner_texts() == ["erroring:"]
        assert ui.page.evaluate(BROKEN_WORDS) == []  # nor "erroring"/"unavailable" from its ":"
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    ui.clean()


TEXT_HEIGHTS = (
    "[...document.querySelectorAll('#timeline text')].map((t) => t.getBoundingClientRect().height)"
)


def test_the_counts_chart_keeps_a_readable_size_on_a_phone(ui: Ui) -> None:
    try:
        ui.page.set_viewport_size({"width": 390, "height": 844})
        ui.go("/timeline/counts?since=1h")
        heights = ui.page.evaluate(TEXT_HEIGHTS)
        assert heights and min(heights) >= 9, heights  # px: its labels and times, not specks
        assert ui.page.evaluate("document.documentElement.scrollWidth") <= 390  # its box scrolls
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    ui.clean()


# each event table's widest line cell against its table, and the header of that column
LINE_ROOM = """() => [...document.querySelectorAll("table.events")].map((t) => {
  const cells = [...t.querySelectorAll("td.line")].map((c) => c.getBoundingClientRect().width);
  const head = t.querySelector("thead .line");
  return [Math.max(0, ...cells) / t.getBoundingClientRect().width,
          head !== null && head.getBoundingClientRect().width > 0];
})"""


@pytest.mark.parametrize("path", ["/events?since=1h", "/timeline/counts?since=1h", "/live"])
def test_an_events_line_has_the_width_of_a_phone(ui: Ui, path: str) -> None:
    """At 390 px an event's line is not squeezed into a column beside the others: it takes
    the table's width below them, and its heading is shown."""
    try:
        ui.page.set_viewport_size({"width": 390, "height": 844})
        ui.go(path)
        wait_until(lambda: ui.page.locator("table.events td.line").count(), what="an event")
        ((share, headed),) = ui.page.evaluate(LINE_ROOM)
        assert share > 0.9 and headed, (path, share, headed)
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    ui.clean()


# the words of the prose's code (``Work > Code``, a command) that a line break cuts in two
SPLIT_CODE = """() => [...document.querySelectorAll("main p code, main p .mono")].flatMap((c) => {
  const text = c.firstChild, split = [];
  for (const m of text.textContent.matchAll(/\\S+/g)) {
    const r = document.createRange();
    r.setStart(text, m.index); r.setEnd(text, m.index + m[0].length);
    if (new Set([...r.getClientRects()].map((c) => Math.round(c.top))).size > 1) split.push(m[0]);
  }
  return split;
})"""


def test_code_in_the_day_pages_prose_breaks_between_words_on_a_phone(ui: Ui) -> None:
    try:
        ui.page.set_viewport_size({"width": 390, "height": 844})
        ui.go("/")
        assert ui.page.locator("main p code, main p .mono").count() >= 2
        assert ui.page.evaluate(SPLIT_CODE) == []
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    ui.clean()


# each forget field's label: whether its word sits above its input (not beside another's)
LABELS_ABOVE = """() => [...document.querySelectorAll("#forget-form label")].map((l) => {
  const r = document.createRange();
  r.selectNodeContents(l.firstChild);
  const word = r.getBoundingClientRect(), input = l.querySelector("input").getBoundingClientRect();
  return [l.firstChild.textContent.trim(), word.bottom <= input.top + 1];
})"""


@pytest.mark.parametrize("width", [1280, 390])
def test_each_forget_field_has_its_label_above_it(ui: Ui, width: int) -> None:
    try:
        ui.page.set_viewport_size({"width": width, "height": 844})
        ui.go("/privacy")
        labels = ui.page.evaluate(LABELS_ABOVE)
        assert len(labels) == 6 and all(above for _, above in labels), labels
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    ui.clean()


def test_the_budget_legend_says_the_last_reading_not_dashes(ui: Ui) -> None:
    """With the cursor away from the chart, its legend gives the newest point's time and
    budget (uPlot alone prints "--"); over a point, that point's."""
    ui.go("/attention")
    values = (
        "() => [...document.querySelectorAll('#budget-chart .u-value')].map(e => e.textContent)"
    )
    shown = wait_until(lambda: ui.page.evaluate(values), what="the budget legend")
    assert len(shown) == 2 and "--" not in shown, shown
    assert re.fullmatch(r"\d\d:\d\d:\d\d|\d+", shown[0]), shown  # a time, or the nth decision
    assert re.fullmatch(r"[\d,]+", shown[1]), shown
    ui.clean()


def test_a_chart_over_minutes_labels_its_ticks_apart(ui: Ui) -> None:
    """Ticks 15 s apart say their seconds; a minute or more apart, hours and minutes."""
    ui.go("/attention")
    t0 = 1_767_261_600  # 2026-01-01 10:00 UTC, on a whole minute in any zone
    short = ui.page.evaluate(f"timeTicks([{t0}, {t0 + 15}, {t0 + 30}, {t0 + 45}], false)")
    assert len(set(short)) == 4 and all(len(label) == 8 for label in short), short
    whole = ui.page.evaluate(f"timeTicks([{t0}, {t0 + 60}, {t0 + 120}], false)")
    assert len(set(whole)) == 3 and all(len(label) == 5 for label in whole), whole
    ui.clean()


def test_every_page_fits_a_laptop_and_a_phone(ui: Ui) -> None:
    """No page scrolls sideways at 1280x800 or at 390 px (a phone)."""
    wide: list[str] = []
    try:
        for size, tag in (((1280, 800), ""), ((390, 844), "-phone")):
            ui.page.set_viewport_size({"width": size[0], "height": size[1]})
            for name, path in PAGES.items():
                ui.go(path)
                width = ui.page.evaluate("document.documentElement.scrollWidth")
                if width > ui.page.evaluate("innerWidth"):
                    wide.append(f"{name} at {size[0]} px: {width} px wide: {_past_edge(ui)}")
                if tag and name in ("day", "timeline", "senses"):
                    ui.shot(f"{name}{tag}")
    finally:
        ui.page.set_viewport_size({"width": 1280, "height": 800})
    assert wide == []
    ui.go("/health")  # each count says what it counts
    said = ui.page.locator("#daemon").inner_text()
    assert "events in" in said and "commits" in said and "not yet sealed" in said
    assert ui.page.title().startswith("health")


def test_every_page_is_readable_in_dark(ui: Ui) -> None:
    """With the browser asking for dark (Playwright's ``color_scheme``), every page at 1280x800
    and at 390 px is dark behind its text, every visible text has a contrast of at least 4.5:1
    against what is behind it (WCAG's formula on the computed colours), nothing is painted
    light on it (a white panel or chart), the page fits, and no raw stamp shows."""
    page = ui.page.context.new_page()
    page.emulate_media(color_scheme="dark")
    errors: list[str] = []  # a script error, or anything the CSP refused
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    seen: dict[str, Any] = {}
    try:
        for (width, height), tag in (((1280, 800), "dark"), ((390, 844), "dark-phone")):
            page.set_viewport_size({"width": width, "height": height})
            for name, path in PAGES.items():
                assert page.goto(ui.base + path).status == 200, path
                page.wait_for_load_state("load")
                seen[f"{name} at {width} px"] = page.evaluate(_DARK)
                ui.shot(f"{name}-{tag}", page)
    finally:
        page.close()
    wrong = [f"{where}: {problem}" for where, found in seen.items() for problem in _dark(found)]
    assert wrong == [], "\n".join(wrong)
    assert errors == []


def _dark(found: dict[str, Any]) -> list[str]:
    """What is wrong with one page seen in dark (nothing: an empty list)."""
    # whole numbers only: a hex digest on the page (Health shows some) holds runs of digits
    raw = re.search(r"\b\d{16,}\b|\d\d:\d\d:\d\d\.\d{6}", found["text"])
    return [
        *([f"background luminance {found['bg']:.2f}"] if found["bg"] >= 0.05 else []),
        *([f"body text contrast {found['body']:.2f}"] if found["body"] < 4.5 else []),
        *[f"low contrast: {e}" for e in found["low"]],
        *[f"painted light: {e}" for e in found["light"]],
        *([f"{found['scroll']} px wide"] if found["scroll"] > found["inner"] else []),
        *([f"raw time {raw.group(0)}"] if raw else []),
    ]


# In the page: the body's background luminance, the contrast of the body's text and of each
# visible text (what is written in it and its colour against the backgrounds behind it, SVG
# text by its fill), the elements painted light, the widths and the visible text.
_DARK = """() => {
  const rgba = (c) => { const m = c.match(/[\\d.]+/g) || [0, 0, 0, 0];
    return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; };
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3]));
  const behind = (el) => {
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let colour = rgba(getComputedStyle(document.documentElement).backgroundColor);
    if (colour[3] === 0) colour = [255, 255, 255, 1];
    for (const c of layers.reverse()) colour = [...over(c, colour), 1];
    return colour;
  };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05); };
  const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
  const low = [];
  for (const e of document.querySelectorAll("body *")) {
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !shown(e) || e.closest("title, script, option")) continue;
    const s = getComputedStyle(e);
    const ink = rgba(e instanceof SVGElement ? s.fill : s.color);
    const r = ratio(over(ink, behind(e)), behind(e));
    if (r < 4.5) low.push(`${e.tagName}.${e.className.baseVal ?? e.className} ${r.toFixed(2)}`);
  }
  const light = [...document.querySelectorAll("body *")].filter((e) => {
    if (!shown(e)) return false;
    const s = getComputedStyle(e);
    const paint = rgba(e instanceof SVGElement ? s.fill : s.backgroundColor);
    const alpha = paint[3] * (e instanceof SVGElement ? +s.fillOpacity : 1);
    return alpha > 0.3 && lum(paint) > 0.6 && !(e instanceof SVGTextElement);
  }).map((e) => `${e.tagName}#${e.id}`).slice(0, 8);
  const body = getComputedStyle(document.body);
  return {
    bg: lum(behind(document.body)),
    body: ratio(rgba(body.color), behind(document.body)),
    low: low.slice(0, 12),
    light,
    scroll: document.documentElement.scrollWidth,
    inner: innerWidth,
    text: document.body.innerText,
  };
}"""


_PAST_EDGE = """() => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > innerWidth + 1)
  .slice(0, 8)
  .map((e) => `${e.tagName}#${e.id}.${e.className} ${e.getBoundingClientRect().right}`)"""


def _past_edge(ui: Ui) -> list[str]:
    """The elements reaching past the right edge (what to fix when a page is too wide)."""
    found: list[str] = ui.page.evaluate(_PAST_EDGE)
    return found


def _counts(ws: WorkspaceDir) -> list[Any]:
    conn = ws.connect()
    try:
        return conn.execute("SELECT id FROM events WHERE line LIKE 'count %'").fetchall()
    finally:
        conn.close()
