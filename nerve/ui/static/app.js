// nerve ui: the few behaviours the pages need. No inline script anywhere (the CSP forbids
// it); everything from the log is put on the page as text, never as HTML.
"use strict";

function csrf() {
  const m = document.querySelector('meta[name="csrf-token"]');
  return m ? m.content : "";
}

document.addEventListener("htmx:configRequest", (ev) => {
  ev.detail.headers["X-CSRF-Token"] = csrf();
});

// -- timeline: drag across a chart to see that span, in local times; keys move and zoom ----
const DRAG_MIN_PX = 4;  // a narrower drag is taken for a click, and does nothing

// ms since the epoch as the timeline's form reads it, local time to the second:
// "2026-12-05 19:24:10" (`zone`: the server's offset from UTC in seconds)
function localTime(ms, zone) {
  const t = new Date(Math.round(ms / 1000) * 1000 + zone * 1000), two = (n) => String(n).padStart(2, "0");
  return `${t.getUTCFullYear()}-${two(t.getUTCMonth() + 1)}-${two(t.getUTCDate())} ` +
    `${two(t.getUTCHours())}:${two(t.getUTCMinutes())}:${two(t.getUTCSeconds())}`;
}

// A drag across `area` (pointer: mouse, pen or touch), `strip` giving the span's left and
// right edges on screen: the brush follows it, and on release `done(from, to)` gets the
// dragged part as fractions 0..1 of the strip.
function dragSpan(area, strip, show, done) {
  let start = null, moved = false;
  const at = (x) => { const r = strip.getBoundingClientRect(); return Math.min(1, Math.max(0, (x - r.left) / r.width)); };
  area.addEventListener("dragstart", (ev) => ev.preventDefault());
  area.addEventListener("pointerdown", (ev) => {
    const r = strip.getBoundingClientRect();
    if (ev.button !== 0 || ev.clientX < r.left || ev.clientX > r.right) return;
    start = ev.clientX; moved = false;
  });
  area.addEventListener("pointermove", (ev) => {
    if (start === null) return;
    if (!moved && Math.abs(ev.clientX - start) >= DRAG_MIN_PX) {
      moved = true; area.setPointerCapture(ev.pointerId);  // a drag, not a click on a bar
    }
    if (moved) { show(at(Math.min(start, ev.clientX)), at(Math.max(start, ev.clientX))); ev.preventDefault(); }
  });
  area.addEventListener("pointerup", (ev) => {
    if (start === null) return;
    const a = Math.min(start, ev.clientX), b = Math.max(start, ev.clientX);
    start = null;
    if (moved && b - a >= DRAG_MIN_PX) done(at(a), at(b)); else show(0, 0);
  });
  area.addEventListener("pointercancel", () => { start = null; show(0, 0); });
}

// the timeline's picture: a drag goes to the dragged span, never past the log's first or
// last event
function picture() {
  const box = document.getElementById("picture");
  if (!box) return;
  const strip = document.getElementById("apps-lane"), brush = document.getElementById("picture-brush");
  const d = box.dataset, since = Number(d.since), until = Number(d.until), zone = Number(d.zone);
  const first = d.first ? Number(d.first) : since, last = d.last ? Number(d.last) : until;
  const show = (a, b) => {
    const r = strip.getBoundingClientRect(), outer = box.getBoundingClientRect();
    brush.hidden = b <= a;
    brush.style.left = `${r.left - outer.left + a * r.width}px`;
    brush.style.width = `${(b - a) * r.width}px`;
  };
  dragSpan(box, strip, show, (a, b) => {
    const lo = Math.max(first, since + a * (until - since)), hi = Math.min(last, since + b * (until - since));
    const q = new URLSearchParams({ since: localTime(lo, zone), until: localTime(hi, zone) });
    location.assign("/timeline?" + q.toString());
  });
}

// the event counts' histogram: the same drag, on the SVG
function counts() {
  const svg = document.getElementById("timeline");
  if (!svg) return;
  const d = svg.dataset, since = Number(BigInt(d.since) / 1000000n), until = Number(BigInt(d.until) / 1000000n);
  const left = Number(d.left), width = Number(d.width), zone = Number(d.zone);
  const brush = document.getElementById("brush"), hist = document.getElementById("hist-area");
  const show = (a, b) => {
    brush.setAttribute("x", String(left + a * width));
    brush.setAttribute("width", String((b - a) * width));
  };
  dragSpan(svg, hist, show, (a, b) => {
    const q = new URLSearchParams(location.search);
    q.set("since", localTime(since + a * (until - since), zone));
    q.set("until", localTime(since + b * (until - since), zone));
    location.assign("/timeline/counts?" + q.toString());
  });
}

// ← → move, + − zoom, on the timeline's pages
function keys() {
  if (!document.getElementById("picture") && !document.getElementById("timeline")) return;
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
    const go = { ArrowLeft: "earlier", ArrowRight: "later", "+": "zoom-in", "=": "zoom-in", "-": "zoom-out" }[ev.key];
    if (go && document.getElementById(go)) document.getElementById(go).click();
  });
}

// -- live tail over server-sent events -------------------------------------------------------
function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
}

// a moment (an ISO time, or ms since the epoch) as the local 24-hour clock the pages use: 14:03:22
function clockOf(when) {
  const t = new Date(when), two = (n) => String(n).padStart(2, "0");
  return `${two(t.getHours())}:${two(t.getMinutes())}:${two(t.getSeconds())}`;
}

function live() {
  const table = document.getElementById("live");
  if (!table) return;
  const rows = document.getElementById("live-rows");
  const state = document.getElementById("live-state");
  const count = document.getElementById("live-count");
  const pauseButton = document.getElementById("live-pause");
  let paused = false, shown = 0, source = null;
  const held = [];
  const add = (e) => {
    const tr = document.createElement("tr");
    tr.dataset.id = e.id;
    const a = document.createElement("a");
    a.href = "/events/" + e.id; a.textContent = clockOf(e.time); a.title = e.time;
    const td = document.createElement("td"); td.className = "time"; td.appendChild(a); tr.appendChild(td);
    cell(tr, e.source); cell(tr, e.kind); cell(tr, e.subject); cell(tr, e.line, "line");
    if (e.erased) tr.className = "erased";
    rows.insertBefore(tr, rows.firstChild);
    shown += 1;
    while (rows.children.length > 2000) rows.removeChild(rows.lastChild);
    count.textContent = String(shown);
  };
  const open = () => {
    const q = new URLSearchParams(new FormData(document.getElementById("live-filters")));
    for (const [k, v] of [...q.entries()]) if (!v) q.delete(k);
    if (source) source.close();
    source = new EventSource(table.dataset.stream + "?" + q.toString());
    source.addEventListener("open", () => { state.textContent = paused ? "paused" : "following"; });
    source.addEventListener("error", () => { state.textContent = "reconnecting…"; });
    source.addEventListener("events", (msg) => {
      for (const e of JSON.parse(msg.data)) (paused ? held.push(e) : add(e));
    });
  };
  document.getElementById("live-filters").addEventListener("submit", (ev) => {
    ev.preventDefault(); open();
  });
  pauseButton.addEventListener("click", () => {
    paused = !paused;
    pauseButton.textContent = paused ? "resume" : "pause";
    state.textContent = paused ? "paused" : "following";
    if (!paused) while (held.length) add(held.shift());
  });
  document.getElementById("live-clear").addEventListener("click", () => {
    rows.replaceChildren(); shown = 0; count.textContent = "0";
  });
  open();
}

// -- charts (uPlot): a SQL result with a time column and numbers; the joule budget ----------
// a colour of the page's scheme (app.css's custom properties), for what is drawn on a canvas
function colour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// a time axis's labels (uPlot's seconds): hours and minutes, with the seconds when the ticks
// are under a minute apart (else a few minutes read 04:43 04:43 04:43), the day over days
function timeTicks(splits, days) {
  const step = splits.length > 1 ? splits[1] - splits[0] : 60;
  const day = (v) => new Date(v * 1000).toLocaleDateString("en-GB", { day: "2-digit", month: "short" }) + " ";
  return splits.map((v) => (days ? day(v) : "") + clockOf(v * 1000).slice(0, step < 60 ? 8 : 5));
}

// a legend value: the point under the cursor, else (the cursor away, uPlot's "--") the last
function shownAt(values, format) {
  return (u, v, s, i) => {
    const x = i == null ? values[values.length - 1] : v;
    return x == null ? "" : format(x);
  };
}

function chartOf(el, xs, series, names, ordinal) {
  if (!el || typeof uPlot === "undefined" || !xs.length) return;
  const axis = { stroke: colour("--muted"), grid: { stroke: colour("--line") }, ticks: { stroke: colour("--line") } };
  const days = xs[xs.length - 1] - xs[0] > 86400;  // uPlot's times are seconds
  const number = (v) => v.toLocaleString("en-US");
  const opts = {
    width: Math.min(el.clientWidth || 800, document.documentElement.clientWidth - 16), height: 220, scales: { x: { time: !ordinal } },
    series: [ordinal ? { label: "decision", value: shownAt(xs, String) } : { value: shownAt(xs, (v) => clockOf(v * 1000)) },
      ...names.map((n, i) => ({ label: n, stroke: colour(["--c0", "--c1", "--c2", "--c3"][i % 4]), value: shownAt(series[i], number) }))],
    axes: [ordinal ? axis : { ...axis, values: (u, splits) => timeTicks(splits, days) }, { ...axis, size: 80 }],
  };
  new uPlot(opts, [xs, ...series], el);
}

function sqlChart() {
  const blob = document.getElementById("sql-data");
  if (!blob) return;
  const { columns, rows } = JSON.parse(blob.textContent);
  const isTime = (v) => typeof v === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v);
  const t = columns.findIndex((_, i) => rows.length && rows.every((r) => isTime(r[i])));
  if (t < 0) return;
  const nums = columns.map((_, i) => i).filter((i) => i !== t && rows.every((r) => typeof r[i] === "number"));
  if (!nums.length) return;
  const when = (v) => Date.parse(/(Z|[+-]\d\d:?\d\d)$/.test(v) ? v : v + "Z");  // DuckDB: UTC
  const order = rows.slice().sort((a, b) => when(a[t]) - when(b[t]));
  chartOf(document.getElementById("chart"), order.map((r) => when(r[t]) / 1000),
    nums.map((i) => order.map((r) => r[i])), nums.map((i) => columns[i]));
}

function budgetChart() {
  const blob = document.getElementById("budget-data");
  if (!blob) return;
  const points = JSON.parse(blob.textContent);
  const xs = points.map((p) => Number(p.hlc.split(".")[0]) / 1e9);
  const flat = xs.length < 2 || xs[xs.length - 1] - xs[0] < 1;  // decided in one replay: by order
  chartOf(document.getElementById("budget-chart"), flat ? xs.map((_, i) => i + 1) : xs,
    [points.map((p) => p.budget_after_uj)], ["budget µJ"], flat);
}

// -- saved queries (kept in this browser) ----------------------------------------------------
function savedQueries() {
  const save = document.getElementById("sql-save");
  if (!save) return;
  const list = document.getElementById("sql-saved"), text = document.getElementById("sql-text");
  const load = () => JSON.parse(localStorage.getItem("nerve.sql.saved") || "[]");
  const fill = () => {
    list.replaceChildren(new Option("saved queries…", ""));
    for (const q of load()) list.appendChild(new Option(q.slice(0, 80), q));
  };
  save.addEventListener("click", () => {
    const all = load().filter((q) => q !== text.value);
    all.unshift(text.value);
    localStorage.setItem("nerve.sql.saved", JSON.stringify(all.slice(0, 50)));
    fill();
  });
  list.addEventListener("change", () => { if (list.value) text.value = list.value; });
  fill();
}

document.addEventListener("DOMContentLoaded", () => {
  picture(); counts(); keys(); live(); sqlChart(); budgetChart(); savedQueries();
});
