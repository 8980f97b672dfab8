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

// -- timeline: drag across the histogram to zoom; keys move and zoom ------------------------
function timeline() {
  const svg = document.getElementById("timeline");
  if (!svg) return;
  const since = BigInt(svg.dataset.since), until = BigInt(svg.dataset.until);
  const left = Number(svg.dataset.left), width = Number(svg.dataset.width);
  const brush = document.getElementById("brush");
  const at = (ev) => {
    const pt = svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    const p = pt.matrixTransform(svg.getScreenCTM().inverse());
    return Math.max(0, Math.min(width, p.x - left));
  };
  const ns = (x) => since + (until - since) * BigInt(Math.round(x * 1000)) / BigInt(width * 1000);
  let start = null;
  svg.addEventListener("mousedown", (ev) => { start = at(ev); ev.preventDefault(); });
  svg.addEventListener("mousemove", (ev) => {
    if (start === null) return;
    const x = at(ev);
    brush.setAttribute("x", String(left + Math.min(start, x)));
    brush.setAttribute("width", String(Math.abs(x - start)));
  });
  window.addEventListener("mouseup", (ev) => {
    if (start === null) return;
    const x = at(ev), a = Math.min(start, x), b = Math.max(start, x);
    start = null;
    if (b - a < 3) { brush.setAttribute("width", "0"); return; }
    const q = new URLSearchParams(location.search);
    q.set("since", ns(a).toString()); q.set("until", ns(b).toString());
    location.assign("/timeline/counts?" + q.toString());
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
    const go = { ArrowLeft: "earlier", ArrowRight: "later", "+": "zoom-in", "=": "zoom-in", "-": "zoom-out" }[ev.key];
    if (go) document.getElementById(go).click();
  });
}

// -- live tail over server-sent events -------------------------------------------------------
function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
}

// an ISO time as the local 24-hour clock the pages use: 14:03:22
function clockOf(iso) {
  const t = new Date(iso), two = (n) => String(n).padStart(2, "0");
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

function chartOf(el, xs, series, names, ordinal) {
  if (!el || typeof uPlot === "undefined" || !xs.length) return;
  const axis = { stroke: colour("--muted"), grid: { stroke: colour("--line") }, ticks: { stroke: colour("--line") } };
  const opts = {
    width: Math.min(el.clientWidth || 800, document.documentElement.clientWidth - 16), height: 220, scales: { x: { time: !ordinal } },
    series: [{}, ...names.map((n, i) => ({ label: n, stroke: colour(["--c0", "--c1", "--c2", "--c3"][i % 4]) }))],
    axes: [axis, { ...axis, size: 80 }],
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
  timeline(); live(); sqlChart(); budgetChart(); savedQueries();
});
