// ui.js: the page around the panels: the shared view window (zoom with the wheel,
// shift+wheel for the offset axis, drag to pan, double-click to reset), the tooltip,
// selecting a buffer (click, or the search box), its details, and the API tests and
// scripts use (window.subarenaViewer).

const panelsEl = document.getElementById('panels');
const tooltip = document.getElementById('tooltip');
const details = document.getElementById('details');
const searchBox = document.getElementById('search');
const resultsEl = document.getElementById('results');

const TOP = Math.max(1, ...DATA.runs.map(r => r.hwm));
const FULL = {x0: 0, x1: Math.max(DATA.steps, 1), y0: 0, y1: TOP * 1.06};
let view = Object.assign({}, FULL);
let selected = -1;
let frame = 0;
let drawMs = 0;

const panels = DATA.runs.map((_, r) => new Panel(r, panelsEl));

function layout() {
  const w = Math.max(320, panelsEl.clientWidth);
  const h = DATA.runs.length > 1 ? Math.max(220, Math.min(360, (window.innerHeight - 170) / 2)) :
    Math.max(300, Math.min(560, window.innerHeight - 150));
  for (const p of panels) p.resize(w, Math.round(h));
  draw();
}

function draw() {
  frame = 0;
  const t = performance.now();
  for (const p of panels) p.draw(view, selected);
  drawMs = performance.now() - t;
}

function redraw() {
  if (!frame) frame = requestAnimationFrame(draw);
}

// clampView keeps the window inside the data, at least a step and a granule wide.
function clampView(v) {
  const w = Math.min(Math.max(v.x1 - v.x0, 1), FULL.x1 - FULL.x0), h = Math.min(Math.max(v.y1 - v.y0, DATA.granule || 1), FULL.y1);
  let x0 = Math.min(Math.max(v.x0, FULL.x0), FULL.x1 - w), y0 = Math.min(Math.max(v.y0, 0), FULL.y1 - h);
  return {x0, x1: x0 + w, y0, y1: y0 + h};
}

function panelOf(target) { return panels.find(p => p.canvas === target); }

function localXY(p, ev) {
  const b = p.canvas.getBoundingClientRect();
  return [ev.clientX - b.left, ev.clientY - b.top];
}

function showTooltip(html, ev) {
  tooltip.innerHTML = html;
  tooltip.hidden = false;
  const pad = 14, w = tooltip.offsetWidth, h = tooltip.offsetHeight;
  let x = ev.clientX + pad, y = ev.clientY + pad;
  if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - pad);
  if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - pad);
  tooltip.style.left = x + 'px';
  tooltip.style.top = y + 'px';
}

function hideTooltip() { tooltip.hidden = true; }

let drag = null;

// onDrag pans the window while the button is held, wherever the pointer goes.
function onDrag(ev) {
  if (!drag) return;
  const p = drag.panel, [x, y] = localXY(p, ev);
  const dx = x - drag.x, dy = y - drag.y;
  if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
  const sx = (drag.view.x1 - drag.view.x0) / (p.w - MARGIN.left - MARGIN.right);
  const sy = (drag.view.y1 - drag.view.y0) / (p.h - MARGIN.top - MARGIN.bottom);
  view = clampView({x0: drag.view.x0 - dx * sx, x1: drag.view.x1 - dx * sx, y0: drag.view.y0 + dy * sy,
    y1: drag.view.y1 + dy * sy});
  hideTooltip();
  redraw();
}

// onMove describes what is under the pointer.
function onMove(ev) {
  const p = panelOf(ev.target);
  if (!p || drag) return;
  const [x, y] = localXY(p, ev);
  const hit = p.hit(view, x, y);
  if (!hit) { hideTooltip(); p.canvas.style.cursor = 'default'; return; }
  p.canvas.style.cursor = 'pointer';
  showTooltip(hit.kind === 'violation' ? violationHTML(p.r, hit.i) : pieceHTML(p.r, hit.i), ev);
}

function onWheel(ev) {
  const p = panelOf(ev.target);
  if (!p) return;
  ev.preventDefault();
  const [x, y] = localXY(p, ev);
  const f = Math.pow(1.0015, ev.deltaY);
  if (ev.shiftKey) {
    const at = p.offAt(view, y);
    view = clampView({x0: view.x0, x1: view.x1, y0: at - (at - view.y0) * f, y1: at + (view.y1 - at) * f});
  } else {
    const at = p.stepAt(view, x);
    view = clampView({x0: at - (at - view.x0) * f, x1: at + (view.x1 - at) * f, y0: view.y0, y1: view.y1});
  }
  redraw();
}

function onDown(ev) {
  const p = panelOf(ev.target);
  if (!p || ev.button !== 0) return;
  const [x, y] = localXY(p, ev);
  drag = {x, y, view: Object.assign({}, view), moved: false, panel: p};
}

function onUp(ev) {
  if (!drag) return;
  const d = drag;
  drag = null;
  if (d.moved) return;
  const [x, y] = localXY(d.panel, ev);
  const hit = d.panel.hit(view, x, y);
  if (hit && hit.kind === 'piece') select(d.panel.run.pieces[hit.i][P_BUF]);
  else if (!hit) select(-1);
}

// select highlights buffer b in every panel and shows its details (-1 clears).
function select(b) {
  selected = b;
  document.body.dataset.selected = b >= 0 ? DATA.buffers[b].name : '';
  if (b < 0) {
    details.innerHTML = '<div class="dim">Click a piece or search a buffer to see it here.</div>';
    details.dataset.pieces = '0';
    redraw();
    return;
  }
  const buf = DATA.buffers[b];
  let n = 0;
  let h = '<div class="tt-title" style="border-color:' + COLORS[b] + '">' + esc(buf.name) + '</div><div>' +
    fmtBytes(buf.size) + ' (' + buf.size + ' B) · alloc at step ' + buf.step + ' · ' +
    (buf.release >= 0 ? 'released at step ' + buf.release : 'held to the end') + '</div>';
  const views = [];
  DATA.views.forEach((v, i) => { if (v.buffer === b) views.push(i); });
  if (views.length) {
    h += '<div class="tt-sec">views</div><ul>' + views.slice(0, 30).map(i => '<li class="chain">' +
      esc(chainText(chain(i, b))) + (DATA.views[i].discard >= 0 ? ' <span class="dim">discarded at step ' +
      DATA.views[i].discard + '</span>' : '') + '</li>').join('') + (views.length > 30 ? '<li class="dim">…</li>' : '') + '</ul>';
  }
  DATA.runs.forEach((run, r) => {
    const ps = piecesOf[r][b];
    n += ps.length;
    h += '<div class="tt-sec">' + esc(run.label) + ': ' + ps.length + ' pieces</div><ul>' + ps.slice(0, 12).map(i => {
      const pc = run.pieces[i];
      return '<li>[' + pc[P_LO] + ', ' + pc[P_HI] + ') steps [' + pc[P_FROM] + ', ' + pc[P_TO] + ')' +
        (pc[P_FLAGS] & F_PENDING ? ' <span class="tag pending">pending</span>' : '') + '</li>';
    }).join('') + (ps.length > 12 ? '<li class="dim">…</li>' : '') + '</ul>';
  });
  h += '<button id="zoom-to" type="button">zoom to it</button>';
  details.innerHTML = h;
  details.dataset.pieces = String(n);
  document.getElementById('zoom-to').onclick = () => zoomTo(b);
  redraw();
}

// zoomTo fits the view window to buffer b's pieces in every run.
function zoomTo(b) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  DATA.runs.forEach((run, r) => {
    for (const i of piecesOf[r][b]) {
      const pc = run.pieces[i];
      x0 = Math.min(x0, pc[P_FROM]); x1 = Math.max(x1, pc[P_TO]);
      y0 = Math.min(y0, pc[P_LO]); y1 = Math.max(y1, pc[P_HI]);
    }
  });
  if (x0 > x1) return;
  const mx = Math.max(2, (x1 - x0) * 0.5), my = Math.max(DATA.granule, (y1 - y0) * 0.5);
  view = clampView({x0: x0 - mx, x1: x1 + mx, y0: y0 - my, y1: y1 + my});
  redraw();
}

function showResults() {
  const found = searchBuffers(searchBox.value, 20);
  resultsEl.innerHTML = found.map(i => '<li data-buffer="' + i + '">' + esc(DATA.buffers[i].name) + '</li>').join('');
  resultsEl.hidden = found.length === 0;
  resultsEl.dataset.count = String(found.length);
  return found;
}

searchBox.addEventListener('input', showResults);
searchBox.addEventListener('keydown', ev => {
  if (ev.key === 'Enter') {
    const found = showResults();
    if (found.length) { select(found[0]); resultsEl.hidden = true; }
  } else if (ev.key === 'Escape') {
    searchBox.value = '';
    showResults();
  }
});
resultsEl.addEventListener('click', ev => {
  const li = ev.target.closest('li');
  if (li) { select(Number(li.dataset.buffer)); resultsEl.hidden = true; }
});
document.getElementById('reset').addEventListener('click', () => { view = Object.assign({}, FULL); redraw(); });
panelsEl.addEventListener('mousemove', onMove);
window.addEventListener('mousemove', onDrag);
panelsEl.addEventListener('mouseleave', hideTooltip);
panelsEl.addEventListener('wheel', onWheel, {passive: false});
panelsEl.addEventListener('mousedown', onDown);
window.addEventListener('mouseup', onUp);
panelsEl.addEventListener('dblclick', () => { view = Object.assign({}, FULL); redraw(); });
window.addEventListener('resize', layout);
window.addEventListener('keydown', ev => { if (ev.key === 'Escape' && ev.target !== searchBox) select(-1); });

select(-1);
layout();
const T_READY = performance.now();
document.body.dataset.pieces = String(DATA.runs.reduce((n, r) => n + r.pieces.length, 0));
document.body.dataset.ready = 'true';

// pointOver returns the page coordinates of a whole pixel where piece i of run r is the
// one the pointer hits (the browser reports the pointer in whole pixels), or null.
function pointOver(r, i) {
  const p = panels[r], box = p.canvas.getBoundingClientRect();
  const rc = p.rect(view, p.run.pieces[i]);
  if (!rc) return null;
  const xs = [], ys = [];
  for (let x = Math.ceil(rc[0]); x <= rc[0] + rc[2] && xs.length < 64; x++) xs.push(x);
  for (let y = Math.ceil(rc[1]); y <= rc[1] + rc[3] && ys.length < 64; y++) ys.push(y);
  const mid = a => a.slice().sort((u, v) => Math.abs(u - a[a.length >> 1]) - Math.abs(v - a[a.length >> 1]));
  for (const x of mid(xs)) {
    for (const y of mid(ys)) {
      const hit = p.hit(view, x, y);
      if (hit && hit.kind === 'piece' && hit.i === i) return {x: box.left + x, y: box.top + y};
    }
  }
  return null;
}

// window.subarenaViewer is the page's API, for scripts and tests.
window.subarenaViewer = {
  // pieceCount is the number of pieces of run r (every run when r is undefined).
  pieceCount: r => r === undefined ? DATA.runs.reduce((n, x) => n + x.pieces.length, 0) : DATA.runs[r].pieces.length,
  // drawnCount is the number of pieces the last frame drew in run r's window.
  drawnCount: r => panels[r].drawn,
  violationCount: r => DATA.runs[r].violations.length,
  runs: () => DATA.runs.map(r => ({label: r.label, kind: r.kind, hwm: r.hwm, livelb: r.livelb,
    pieces: r.pieces.length, violations: r.violations.length})),
  // timings: JSON parse, the first layout and draw, and both since navigation (ms).
  timings: () => ({parseMs: T_PARSED - T_START, firstDrawMs: T_READY - T_PARSED, readyMs: T_READY, lastDrawMs: drawMs}),
  // locate returns the page coordinates of a point over a visible piece of buffer name
  // in run r (a pending one when pending is true), or null.
  locate: (name, r, pending) => {
    const b = bufferIndex.get(name);
    if (b === undefined) return null;
    for (const i of piecesOf[r || 0][b]) {
      if (!!(DATA.runs[r || 0].pieces[i][P_FLAGS] & F_PENDING) !== !!pending) continue;
      const at = pointOver(r || 0, i);
      if (at) return Object.assign(at, {piece: i});
    }
    return null;
  },
  // locatePiece returns the page coordinates of a point where piece i of run r is the
  // one under the pointer (nothing drawn over it), or null.
  locatePiece: (r, i) => pointOver(r, i),
  // locateViolation returns the page coordinates of a point over violation i of run r.
  locateViolation: (r, i) => {
    const p = panels[r], box = p.canvas.getBoundingClientRect();
    for (const rc of p.violationRects(view, p.run.violations[i])) {
      const x = Math.round(rc[0] + rc[2] / 2), y = Math.round(rc[1] + rc[3] / 2);
      const hit = p.hit(view, x, y);
      if (hit && hit.kind === 'violation' && hit.i === i) return {x: box.left + x, y: box.top + y};
    }
    return null;
  },
  tooltipText: () => tooltip.hidden ? '' : tooltip.textContent,
  select: name => { const b = bufferIndex.has(name) ? bufferIndex.get(name) : -1; select(b); return b >= 0; },
  selected: () => selected >= 0 ? DATA.buffers[selected].name : '',
  search: q => searchBuffers(q, 20).map(i => DATA.buffers[i].name),
  view: () => Object.assign({}, view),
  setView: (x0, x1, y0, y1) => { view = clampView({x0, x1, y0, y1}); draw(); },
  zoomTo: name => { if (bufferIndex.has(name)) { zoomTo(bufferIndex.get(name)); draw(); } },
};
