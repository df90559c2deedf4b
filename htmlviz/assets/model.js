// model.js: reads the page's data (the subarena-viewer/v1 JSON document, see the Go
// package doc) and answers questions about it: names, view chains, events, colours,
// the pieces of a buffer, and the text of a piece's or a violation's description.

const T_START = performance.now();
const DATA = JSON.parse(document.getElementById('subarena-data').textContent);
const T_PARSED = performance.now();

// Positions in a piece array: [buffer, lo, hi, from, to, flags, holder, host, users].
const P_BUF = 0, P_LO = 1, P_HI = 2, P_FROM = 3, P_TO = 4, P_FLAGS = 5, P_HOLDER = 6, P_HOST = 7, P_USERS = 8;
const F_PENDING = 1;
const ACCESS = ['none', 'read', 'write', 'read-write'];
const MAX_LISTED = 8; // users listed in a description; the rest are counted

const bufferIndex = new Map();
DATA.buffers.forEach((b, i) => bufferIndex.set(b.name, i));

// fmtBytes renders n bytes as the command line does: 512 B, 1.50 KiB, 12.00 MiB.
function fmtBytes(n) {
  const k = 1024, a = Math.abs(n);
  if (a < k) return n + ' B';
  if (a < k * k) return (n / k).toFixed(2) + ' KiB';
  if (a < k * k * k) return (n / (k * k)).toFixed(2) + ' MiB';
  return (n / (k * k * k)).toFixed(2) + ' GiB';
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
}

// chain returns the view chain of a use, as check prints it: the name used, each view
// it was taken of, and the buffer.
function chain(view, buffer) {
  const out = [];
  for (let v = view; v >= 0; v = DATA.views[v].parent) out.push(DATA.views[v].name);
  out.push(DATA.buffers[buffer].name);
  return out;
}

function chainText(names) { return names.join(' → '); }

// eventName is an op's event: its engine and its place there, from 1.
function eventName(k) {
  const op = DATA.ops[k];
  return DATA.engines[op.engine] + '#' + op.seq;
}

// fence is the set of events the next owner of pending bytes must be ordered after:
// per engine, the latest event among the users.
function fence(users) {
  const last = new Map();
  for (let i = 0; i < users.length; i += 3) {
    const op = DATA.ops[users[i]];
    last.set(op.engine, Math.max(last.get(op.engine) || 0, op.seq));
  }
  const parts = [...last.entries()].sort((a, b) => a[0] - b[0]).map(([e, s]) => DATA.engines[e] + '#' + s);
  return '{' + parts.join(', ') + '}';
}

// bufferColor gives a buffer the colour the SVG timeline gives it (FNV-1a of the name
// picks hue, saturation and lightness).
function bufferColor(name) {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(name)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const hue = (h % 360) / 360, sat = 0.45 + ((h >>> 9) % 25) / 100, light = 0.55 + ((h >>> 17) % 15) / 100;
  const q = light < 0.5 ? light * (1 + sat) : light + sat - light * sat, p = 2 * light - q;
  const conv = t => {
    t -= Math.floor(t);
    let v;
    if (t < 1 / 6) v = p + (q - p) * 6 * t;
    else if (t < 0.5) v = q;
    else if (t < 2 / 3) v = p + (q - p) * (2 / 3 - t) * 6;
    else v = p;
    return Math.round(255 * v);
  };
  return 'rgb(' + conv(hue + 1 / 3) + ',' + conv(hue) + ',' + conv(hue - 1 / 3) + ')';
}

const COLORS = DATA.buffers.map(b => bufferColor(b.name));

// piecesOf[r][b] lists the indices of buffer b's pieces in run r.
const piecesOf = DATA.runs.map(run => {
  const by = DATA.buffers.map(() => []);
  run.pieces.forEach((pc, i) => by[pc[P_BUF]].push(i));
  return by;
});

// opWhen says where an op stands: its event, its step and when it ran.
function opWhen(k) {
  const op = DATA.ops[k];
  let s = eventName(k) + ', step ' + op.step;
  if (op.start >= 0) s += ', ran t=[' + op.start + ', ' + op.end + ')';
  return s;
}

// usesHTML lists a piece's users: op, event, access and the view chain it reads through.
function usesHTML(users, buffer) {
  const items = [];
  for (let i = 0; i < users.length && items.length < MAX_LISTED; i += 3) {
    const k = users[i], v = users[i + 1];
    items.push('<li><b>' + esc(DATA.ops[k].name) + '</b> ' + ACCESS[users[i + 2]] + 's via <span class="chain">' +
      esc(chainText(chain(v, buffer))) + '</span> <span class="dim">(' + esc(opWhen(k)) + ')</span></li>');
  }
  const more = users.length / 3 - items.length;
  if (more > 0) items.push('<li class="dim">… and ' + more + ' more</li>');
  return items.length ? '<ul>' + items.join('') + '</ul>' : '<div class="dim">no op uses these bytes</div>';
}

function stepWhere(step) {
  return step >= DATA.steps ? 'the end of the trace' : 'step ' + step;
}

// pieceHTML describes piece i of run r: buffer, bytes, who pins it through which view
// chain, the fence, and when it goes back.
function pieceHTML(r, i) {
  const pc = DATA.runs[r].pieces[i], b = pc[P_BUF], buf = DATA.buffers[b];
  const users = pc[P_USERS], pending = (pc[P_FLAGS] & F_PENDING) !== 0;
  let h = '<div class="tt-title" style="border-color:' + COLORS[b] + '">' + esc(buf.name) + ' <span class="dim">' +
    fmtBytes(buf.size) + '</span></div>';
  h += '<div>bytes [' + pc[P_LO] + ', ' + pc[P_HI] + ') · ' + fmtBytes(pc[P_HI] - pc[P_LO]) + ' · steps [' +
    pc[P_FROM] + ', ' + pc[P_TO] + ')</div>';
  if (pc[P_HOST] >= 0) h += '<div>laid over <b>' + esc(DATA.buffers[pc[P_HOST]].name) + '</b> (a placement)</div>';
  const holder = pc[P_HOLDER];
  const goes = holder >= 0
    ? 'let go by the discard of view <span class="chain">' + esc(chainText(chain(holder, b))) + '</span> at step ' +
      DATA.views[holder].discard
    : buf.release >= 0 ? 'let go by the release of ' + esc(buf.name) + ' at step ' + buf.release
      : 'held to the end of the trace';
  if (!pending) {
    h += '<div><span class="tag live">live</span> held by the program; ' + goes + '</div>';
    h += '<div class="tt-sec">users</div>' + usesHTML(users, b);
    return h;
  }
  h += '<div><span class="tag pending">pending</span> ' + goes + '; users not yet seen complete</div>';
  h += '<div class="tt-sec">pinned by</div>' + usesHTML(users, b);
  h += '<div>fence <b class="fence">' + esc(fence(users)) + '</b></div>';
  let done = 0;
  for (let j = 0; j < users.length; j += 3) done = Math.max(done, DATA.ops[users[j]].done);
  if (pc[P_TO] < done) {
    h += '<div>handed over at step ' + pc[P_TO] + ' to a writer ordered after the fence; clean once its users are ' +
      'seen complete, at ' + stepWhere(done) + '</div>';
  } else if (done >= DATA.steps) {
    h += '<div>clean at the end of the trace, when the host sees its users complete</div>';
  } else {
    h += '<div>clean after step ' + done + ', whose sync shows its users complete</div>';
  }
  return h;
}

function partyHTML(role, p) {
  return '<div><span class="role">' + role + '</span> <b>' + esc(p.op) + '</b> (' + esc(p.engine) + ', ' +
    esc(p.access) + ') via <span class="chain">' + esc(chainText(p.chain)) + '</span></div>';
}

// violationHTML describes violation i of run r: the bytes both buffers reach, the
// reader and the writer with their view chains, and the missing edge.
function violationHTML(r, i) {
  const v = DATA.runs[r].violations[i];
  const runs = v.ranges.map(x => '[' + x[0] + ', ' + x[1] + ')').join(' ');
  let h = '<div class="tt-title bad">UNSAFE: ' + esc(v.rule) + '</div>';
  h += '<div>overwritten bytes ' + runs + ' (' + fmtBytes(v.bytes) + ') shared by <b>' + esc(v.earlier.buffer) +
    '</b> and <b>' + esc(v.later.buffer) + '</b></div>';
  h += partyHTML(v.earlier.access === 'read' ? 'reader' : 'earlier', v.earlier);
  h += partyHTML(v.later.access === 'write' ? 'writer' : 'later', v.later);
  h += '<div>missing edge <b class="edge">' + esc(v.missing_edge) + '</b></div>';
  return h;
}

// search returns the buffers whose names contain q (case-insensitive), exact matches
// first, at most limit of them.
function searchBuffers(q, limit) {
  q = q.trim().toLowerCase();
  if (!q) return [];
  const exact = [], prefix = [], inner = [];
  for (let i = 0; i < DATA.buffers.length; i++) {
    const n = DATA.buffers[i].name.toLowerCase();
    if (n === q) exact.push(i);
    else if (n.startsWith(q)) prefix.push(i);
    else if (n.includes(q)) inner.push(i);
  }
  return exact.concat(prefix, inner).slice(0, limit);
}
