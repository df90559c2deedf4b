// draw.js: one panel per run, drawn on a <canvas>: the pieces (live filled, pending
// hatched), the high-water mark, LiveLB and the checker's violations, culled to the
// visible window; and hit testing for the pointer.

const MARGIN = {left: 84, right: 14, top: 10, bottom: 30};
const MIN_PX = 0.75; // a piece is drawn at least this wide and tall (CSS pixels)

function hatchPattern(ctx) {
  const c = document.createElement('canvas');
  c.width = c.height = 6;
  const g = c.getContext('2d');
  g.strokeStyle = 'rgba(0,0,0,0.55)';
  g.lineWidth = 1.4;
  g.beginPath();
  g.moveTo(0, 6); g.lineTo(6, 0);
  g.moveTo(-1, 1); g.lineTo(1, -1);
  g.moveTo(5, 7); g.lineTo(7, 5);
  g.stroke();
  return ctx.createPattern(c, 'repeat');
}

// Panel draws run r into a canvas it creates inside parent.
function Panel(r, parent) {
  this.r = r;
  this.run = DATA.runs[r];
  const sec = document.createElement('section');
  sec.className = 'panel';
  const v = this.run.violations.length;
  // LiveLB bounds layouts that give every buffer an offset: a plan that lays buffers
  // over strided footprints of others may be below it, which is no negative overhead.
  const relaid = this.run.relaid || 0;
  const over = !(this.run.livelb > 0) ? '' : this.run.hwm >= this.run.livelb ?
    ' · overhead +' + ((this.run.hwm / this.run.livelb - 1) * 100).toFixed(1) + '%' :
    ' · ' + ((1 - this.run.hwm / this.run.livelb) * 100).toFixed(1) + '% below LiveLB, which bounds offset layouts only (' +
    relaid + ' buffer' + (relaid === 1 ? '' : 's') + ' relaid)';
  const safety = !this.run.checked ? '' : v ? ' · <span class="bad">UNSAFE: ' + v + ' violation' + (v === 1 ? '' : 's') +
    '</span>' : ' · <span class="good">safe</span>';
  sec.innerHTML = '<div class="panel-head"><b>' + esc(this.run.label) + '</b> <span class="dim">' + esc(this.run.kind) +
    '</span> · HWM <b class="hwm">' + fmtBytes(this.run.hwm) + '</b>' +
    (this.run.livelb > 0 ? ' · LiveLB <b class="lb">' + fmtBytes(this.run.livelb) + '</b>' : '') + over + ' · ' +
    this.run.pieces.length + ' pieces' + safety + '</div>';
  this.canvas = document.createElement('canvas');
  this.canvas.className = 'plot';
  this.canvas.dataset.run = String(r);
  this.canvas.dataset.pieces = String(this.run.pieces.length);
  this.canvas.dataset.violations = String(v);
  sec.appendChild(this.canvas);
  parent.appendChild(sec);
  this.ctx = this.canvas.getContext('2d');
  this.hatch = hatchPattern(this.ctx);
  this.drawn = 0;
  this.w = this.h = 0;
}

Panel.prototype.resize = function (w, h) {
  const dpr = window.devicePixelRatio || 1;
  this.w = w; this.h = h;
  this.canvas.style.width = w + 'px';
  this.canvas.style.height = h + 'px';
  this.canvas.width = Math.round(w * dpr);
  this.canvas.height = Math.round(h * dpr);
  this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
};

// Coordinates: x is the host step, y the arena offset, in the shared view window.
Panel.prototype.px = function (view, step) {
  return MARGIN.left + (step - view.x0) / (view.x1 - view.x0) * (this.w - MARGIN.left - MARGIN.right);
};
Panel.prototype.py = function (view, off) {
  return MARGIN.top + (1 - (off - view.y0) / (view.y1 - view.y0)) * (this.h - MARGIN.top - MARGIN.bottom);
};
Panel.prototype.stepAt = function (view, px) {
  return view.x0 + (px - MARGIN.left) / (this.w - MARGIN.left - MARGIN.right) * (view.x1 - view.x0);
};
Panel.prototype.offAt = function (view, py) {
  return view.y0 + (1 - (py - MARGIN.top) / (this.h - MARGIN.top - MARGIN.bottom)) * (view.y1 - view.y0);
};
Panel.prototype.inPlot = function (px, py) {
  return px >= MARGIN.left && px <= this.w - MARGIN.right && py >= MARGIN.top && py <= this.h - MARGIN.bottom;
};

// rect returns a piece's rectangle in CSS pixels, or null when it is outside the window.
Panel.prototype.rect = function (view, pc) {
  if (pc[P_TO] < view.x0 || pc[P_FROM] > view.x1 || pc[P_HI] < view.y0 || pc[P_LO] > view.y1) return null;
  const x0 = this.px(view, pc[P_FROM]), x1 = this.px(view, pc[P_TO]);
  const y0 = this.py(view, pc[P_HI]), y1 = this.py(view, pc[P_LO]);
  return [x0, y0, Math.max(x1 - x0, MIN_PX), Math.max(y1 - y0, MIN_PX)];
};

// violationRects returns the rectangles of violation v: its byte runs from the step of
// its earlier op to one past its later op's.
Panel.prototype.violationRects = function (view, v) {
  const from = v.from >= 0 ? v.from : 0, to = (v.to >= 0 ? v.to : DATA.steps - 1) + 1;
  const out = [];
  for (const [lo, hi] of v.ranges) {
    const x0 = this.px(view, Math.min(from, to - 1)), x1 = this.px(view, Math.max(to, from + 1));
    const y0 = this.py(view, hi), y1 = this.py(view, lo);
    out.push([x0, y0, Math.max(x1 - x0, 3), Math.max(y1 - y0, 3)]);
  }
  return out;
};

// fmtAxisBytes is fmtBytes without trailing zeros: 8 KiB, 1.5 MiB.
function fmtAxisBytes(n) {
  return fmtBytes(n).replace(/(\.\d*?)0+ /, '$1 ').replace('. ', ' ');
}

function niceStep(span, n) {
  const raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

Panel.prototype.axes = function (view) {
  const ctx = this.ctx, w = this.w, h = this.h;
  ctx.fillStyle = '#fafafa';
  ctx.fillRect(MARGIN.left, MARGIN.top, w - MARGIN.left - MARGIN.right, h - MARGIN.top - MARGIN.bottom);
  ctx.font = '11px sans-serif';
  ctx.fillStyle = '#333';
  ctx.strokeStyle = '#e2e2e2';
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  // Offsets tick at powers of two, as arenas are laid out.
  const ys = Math.pow(2, Math.ceil(Math.log2(Math.max((view.y1 - view.y0) / 5, 1))));
  for (let y = Math.ceil(view.y0 / ys) * ys; y <= view.y1; y += ys) {
    const py = Math.round(this.py(view, y)) + 0.5;
    ctx.beginPath(); ctx.moveTo(MARGIN.left, py); ctx.lineTo(w - MARGIN.right, py); ctx.stroke();
    ctx.fillText(fmtAxisBytes(y), MARGIN.left - 6, py);
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  const xs = Math.max(1, niceStep(Math.max(view.x1 - view.x0, 1), 8));
  for (let x = Math.ceil(view.x0 / xs) * xs; x <= view.x1; x += xs) {
    const px = Math.round(this.px(view, x)) + 0.5;
    ctx.beginPath(); ctx.moveTo(px, MARGIN.top); ctx.lineTo(px, h - MARGIN.bottom); ctx.stroke();
    ctx.fillText(String(Math.round(x)), px, h - MARGIN.bottom + 4);
  }
  ctx.textAlign = 'left';
  ctx.fillText('host step', MARGIN.left, h - 13);
};

// draw paints the panel for the view window; sel is the selected buffer (-1: none).
// It returns the number of pieces drawn (those inside the window).
Panel.prototype.draw = function (view, sel) {
  const ctx = this.ctx, pieces = this.run.pieces;
  ctx.clearRect(0, 0, this.w, this.h);
  this.axes(view);
  ctx.save();
  ctx.beginPath();
  ctx.rect(MARGIN.left, MARGIN.top, this.w - MARGIN.left - MARGIN.right, this.h - MARGIN.top - MARGIN.bottom);
  ctx.clip();
  let drawn = 0;
  const pend = [];
  for (let i = 0; i < pieces.length; i++) {
    const pc = pieces[i];
    const rc = this.rect(view, pc);
    if (!rc) continue;
    drawn++;
    if (pc[P_FLAGS] & F_PENDING) { pend.push(i, rc); continue; }
    ctx.globalAlpha = sel >= 0 && pc[P_BUF] !== sel ? 0.18 : 1;
    ctx.fillStyle = COLORS[pc[P_BUF]];
    ctx.fillRect(rc[0], rc[1], rc[2], rc[3]);
    if (pc[P_HOST] >= 0 && rc[2] > 3 && rc[3] > 3) {
      ctx.setLineDash([3, 2]);
      ctx.strokeStyle = '#222';
      ctx.lineWidth = 0.8;
      ctx.strokeRect(rc[0], rc[1], rc[2], rc[3]);
      ctx.setLineDash([]);
    }
  }
  for (let j = 0; j < pend.length; j += 2) {
    const pc = pieces[pend[j]], rc = pend[j + 1];
    const dim = sel >= 0 && pc[P_BUF] !== sel;
    ctx.globalAlpha = dim ? 0.1 : 0.45;
    ctx.fillStyle = COLORS[pc[P_BUF]];
    ctx.fillRect(rc[0], rc[1], rc[2], rc[3]);
    ctx.globalAlpha = dim ? 0.25 : 1;
    ctx.fillStyle = this.hatch;
    ctx.fillRect(rc[0], rc[1], rc[2], rc[3]);
  }
  ctx.globalAlpha = 1;
  if (sel >= 0) {
    ctx.strokeStyle = '#000';
    ctx.lineWidth = 1.5;
    for (const i of piecesOf[this.r][sel]) {
      const rc = this.rect(view, pieces[i]);
      if (rc) ctx.strokeRect(rc[0], rc[1], rc[2], rc[3]);
    }
  }
  this.marks(view);
  this.violations(view);
  ctx.restore();
  ctx.strokeStyle = '#555';
  ctx.lineWidth = 1;
  ctx.strokeRect(MARGIN.left + 0.5, MARGIN.top + 0.5, this.w - MARGIN.left - MARGIN.right, this.h - MARGIN.top - MARGIN.bottom);
  this.drawn = drawn;
  return drawn;
};

// marks draws the running high-water mark, the HWM and LiveLB.
Panel.prototype.marks = function (view) {
  const ctx = this.ctx, hw = this.run.highWater, right = this.w - MARGIN.right;
  ctx.strokeStyle = '#d62728';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let prev = -1;
  for (let i = 0; i < hw.length; i++) {
    if (hw[i] === prev) continue;
    const x = this.px(view, i);
    if (prev >= 0) ctx.lineTo(x, this.py(view, prev)); else ctx.moveTo(x, this.py(view, hw[i]));
    ctx.lineTo(x, this.py(view, hw[i]));
    prev = hw[i];
  }
  if (prev >= 0) ctx.lineTo(this.px(view, DATA.steps), this.py(view, prev));
  ctx.stroke();
  const line = (val, color, text, below) => {
    const y = this.py(view, val);
    ctx.strokeStyle = color;
    ctx.setLineDash([6, 4]);
    ctx.lineWidth = 1.2;
    ctx.beginPath(); ctx.moveTo(MARGIN.left, y); ctx.lineTo(right, y); ctx.stroke();
    ctx.setLineDash([]);
    ctx.font = 'bold 11px sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = below ? 'top' : 'bottom';
    const tw = ctx.measureText(text).width, ty = below ? y + 2 : y - 15;
    ctx.fillStyle = 'rgba(255,255,255,0.8)';
    ctx.fillRect(right - tw - 6, ty, tw + 4, 13);
    ctx.fillStyle = color;
    ctx.fillText(text, right - 4, below ? y + 3 : y - 3);
  };
  line(this.run.hwm, '#d62728', 'high-water mark ' + fmtBytes(this.run.hwm), false);
  if (this.run.livelb > 0) line(this.run.livelb, '#1f5fbf', 'LiveLB ' + fmtBytes(this.run.livelb), true);
};

// violations draws each violation's overwritten bytes, from the reader's step to the
// writer's, with its missing edge beside it.
Panel.prototype.violations = function (view) {
  const ctx = this.ctx, placed = [], first = [];
  ctx.fillStyle = 'rgba(214,39,40,0.28)';
  ctx.strokeStyle = '#b00000';
  ctx.lineWidth = 2;
  for (const v of this.run.violations) {
    const rects = this.violationRects(view, v);
    for (const rc of rects) {
      ctx.fillRect(rc[0], rc[1], rc[2], rc[3]);
      ctx.strokeRect(rc[0], rc[1], rc[2], rc[3]);
    }
    first.push(rects.length ? rects[0] : null);
  }
  this.run.violations.forEach((v, i) => {
    if (!first[i] || placed.length >= 12) return;
    // Label the violation with its missing edge, unless that would cover another label.
    const rc = first[i];
    ctx.font = 'bold 11px sans-serif';
    const text = '✕ ' + v.missing_edge, tw = ctx.measureText(text).width;
    const x = Math.max(MARGIN.left + 2, Math.min(rc[0], this.w - MARGIN.right - tw - 6));
    const y = Math.max(rc[1] - 3, MARGIN.top + 14);
    const box = [x - 2, y - 14, tw + 4, 14];
    if (placed.some(b => b[0] < box[0] + box[2] && box[0] < b[0] + b[2] && b[1] < box[1] + box[3] && box[1] < b[1] + b[3])) {
      return;
    }
    placed.push(box);
    ctx.fillStyle = 'rgba(255,255,255,0.85)';
    ctx.fillRect(box[0], box[1], box[2], box[3]);
    ctx.fillStyle = '#b00000';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.fillText(text, x, y);
  });
};

function inRect(rc, x, y) {
  return x >= rc[0] - 1 && x <= rc[0] + rc[2] + 1 && y >= rc[1] - 1 && y <= rc[1] + rc[3] + 1;
}

// hit returns what is drawn at CSS pixel (x, y): a violation, a pending piece (drawn
// over live ones), a live piece, or null.
Panel.prototype.hit = function (view, x, y) {
  if (!this.inPlot(x, y)) return null;
  const vs = this.run.violations;
  for (let i = vs.length - 1; i >= 0; i--) {
    for (const rc of this.violationRects(view, vs[i])) if (inRect(rc, x, y)) return {kind: 'violation', i};
  }
  const pieces = this.run.pieces;
  for (const want of [F_PENDING, 0]) {
    for (let i = pieces.length - 1; i >= 0; i--) {
      const pc = pieces[i];
      if ((pc[P_FLAGS] & F_PENDING) !== want) continue;
      const rc = this.rect(view, pc);
      if (rc && x >= rc[0] && x <= rc[0] + rc[2] && y >= rc[1] && y <= rc[1] + rc[3]) return {kind: 'piece', i};
    }
  }
  return null;
};
