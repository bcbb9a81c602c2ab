// The range board's script. Plain JS, no build step, served by the daemon itself.
//
// Where the data comes from:
// - GET /status on every (re)connect of /events and then every POLL_MS: the whole state
//   (vehicles, links, receiver clock). The poll is also how a silently dead connection is
//   noticed: EventSource does not expose the server's keep-alive comments.
// - GET /board/history on every (re)connect: each vehicle's gaps of the last 30 minutes and
//   latency reports of the last 10, and the latest events, kept by the daemon so a board opened
//   mid-sortie draws what one open all along would.
// - /events (EventSource): telemetry_gap open/closed the moment the receiver decides, a link
//   silent for a vehicle another link hears (link_gap), two senders on one id
//   (sysid_conflict), a stream that stopped (stream), traffic near a vehicle
//   (traffic_proximity: its card's traffic list and plan view), latency reports (sparklines),
//   link/clock/receiver events (the list). EventSource reconnects by
//   itself and sends Last-Event-ID; a `resync` event (the receiver restarted, or too much was
//   missed) makes the page reload /status and /board/history.
//
// A snapshot and an event can arrive in either order, so a snapshot never undoes a newer event:
// an open gap stays open until a heartbeat later than the gap's start is known, a closed gap
// stays closed unless the snapshot's gap started after that closing heartbeat. Open link gaps,
// conflicts and stream events likewise: a snapshot's lists stand, except for a key (a link, a
// compid, a msgid) on which an event about as new as the snapshot, or newer, said otherwise.
//
// Rendering is batched: changes mark vehicles dirty and one render pass applies them at most
// every RENDER_MS (so a few DOM updates per second whatever the event rate), reading nothing
// back from the DOM. Ages and open gap durations tick once a second, on the receiver's clock
// (the offset between it and this browser's clock is taken from each snapshot).
'use strict';

const POLL_MS = 2000;
const POLL_TIMEOUT_MS = 4000;
const RENDER_MS = 250;
const STRIP_MS = 30 * 60 * 1000;
const SPARK_MS = 10 * 60 * 1000;
const MAX_EVENTS_SHOWN = 40;
// A snapshot is built on the receiver's housekeeping tick, and an event can be stamped before
// it was decided (a link gap closes at its heartbeat's receipt, a conflict at the end of its
// quiet window): an event on a key stands over a snapshot built up to this long after it.
const EVENT_GRACE_MS = 1000;
// Clock offset samples kept (snapshots every 2 s and live events).
const OFFSET_SAMPLES = 30;
const OBSERVED = 'Observed: telemetry receive gap, not necessarily radio failure';
const TITLE_PREFIX = 'Heartbeat due and not received.';
// A namespace name, not an address: nothing is fetched from it.
const SVG = 'http://www.w3.org/2000/svg';

const board = {
  vehicles: new Map(),
  order: [],
  links: [],
  // The range view's sites (empty on a site receiver): one column per site in each vehicle.
  sites: [],
  clock: undefined,
  startedMs: null,
  offsetMs: 0,
  offsetSamples: [],
  live: false,
  lastGoodMs: null,
  lostReason: '',
  events: [],
  seen: new Set(),
  dirty: { vehicles: new Set(), links: false, events: false, order: false, all: false },
  source: null,
  sourceOpenedAt: 0,
  renderPending: false,
  lastRender: 0,
  // For measurement (BENCHMARKS.md, benches/board_page.rs): SSE event to changed element, in ms.
  stats: { eventToDom: [], renders: 0, renderMs: 0, snapshots: 0, events: 0 },
};
window.foxborneBoard = board;

const $ = (id) => document.getElementById(id);
const receiverNow = () => Date.now() + board.offsetMs;
const parseUtc = (text) => (text ? Date.parse(text) : null);

// Seconds to three significant figures, as the receiver words gap titles (6.96, 31.0, 3370).
function sig3(seconds) {
  if (!(seconds > 0)) return '0.00';
  const digits = Math.floor(Math.log10(seconds)) + 1;
  if (digits >= 3) {
    const unit = 10 ** (digits - 3);
    return String(Math.round(seconds / unit) * unit);
  }
  const decimals = 3 - digits;
  let text = seconds.toFixed(decimals);
  // A carry (9.996 -> 10.00) adds a digit: keep three.
  if (text.replace('.', '').replace(/^0+/, '').length > 3) text = Number(text).toFixed(Math.max(0, decimals - 1));
  return text;
}

function age(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function hhmmss(ms) {
  return new Date(ms).toISOString().slice(11, 19);
}

function vehicleLabel(v) {
  return v.name ? `${v.name} (sysid ${v.sysid})` : `sysid ${v.sysid}`;
}

// --- the model --------------------------------------------------------------------------

function vehicle(sysid) {
  let v = board.vehicles.get(sysid);
  if (!v) {
    v = {
      sysid, name: null, links: [], perLink: [], lastHeard: null, firstHeard: null,
      gap: null, lastClosedEnd: null, expectedS: 1, p50: null, p95: null, resolution: null, offset: null,
      loss: 0, hb: null, gaps: [], latency: [], el: null, shownState: null, pendingEvent: null,
      // Issue 28: what each link delivers, and the open link gaps, conflicts and streams,
      // each keyed by what it is about (link, compid, msgid) so an event replaces its own.
      delivery: {}, deliveryUnreliable: false, linkGaps: new Map(), conflicts: new Map(), streams: new Map(),
      // The latest live event on each of those keys (`kind:key`): its stamp and whether it opened.
      eventAt: new Map(),
      // Issue 42: the traffic near it (the snapshot's list, nearest first) and the open
      // traffic_proximity events by track key (ICAO address or UAS ID).
      traffic: [], proximities: new Map(), position: null,
    };
    board.vehicles.set(sysid, v);
    board.dirty.order = true;
  }
  return v;
}

function stateOf(v) {
  if (v.lastHeard === null) return 'never';
  return v.gap ? 'gap' : 'ok';
}

function markDirty(v) {
  board.dirty.vehicles.add(v.sysid);
  schedule();
}

function openGap(v, start, dueMs) {
  v.gap = { start, due: dueMs };
  if (!v.gaps.some((g) => g[0] === start)) v.gaps.push([start, null]);
}

// A close whose heartbeat was stamped inside the threshold takes its open back: no gap.
function withdrawGap(v, start) {
  v.gap = null;
  v.gaps = v.gaps.filter((g) => !(g[1] === null || g[0] === start));
}

function closeGap(v, start, end) {
  v.gap = null;
  v.lastClosedEnd = Math.max(v.lastClosedEnd ?? end, end);
  const open = v.gaps.findLast((g) => g[1] === null);
  if (open) open[1] = end;
  else if (!v.gaps.some((g) => g[0] === start)) v.gaps.push([start, end]);
}

// Where a link_gap, sysid_conflict or stream event is kept on its vehicle, and under which key.
function openSet(v, kind, e) {
  if (kind === 'link_gap') return [v.linkGaps, e.link];
  if (kind === 'sysid_conflict') return [v.conflicts, e.compid];
  if (kind === 'traffic_proximity') return [v.proximities, trafficKey(e)];
  return [v.streams, e.msgid];
}

// A snapshot's open events of one kind replace the page's, except on a key where the latest
// live event is about as new as the snapshot, or newer, and says otherwise.
function reconcile(v, kind, served, built) {
  const [map] = openSet(v, kind, {});
  const open = new Map(served.map((x) => [openSet(v, kind, x)[1], x]));
  const eventSays = (key, state) => {
    const last = v.eventAt.get(`${kind}:${key}`);
    return last !== undefined && last.open === state && last.utc > built - EVENT_GRACE_MS;
  };
  for (const [key, x] of open) {
    if (!eventSays(key, false)) map.set(key, x);
  }
  for (const key of [...map.keys()]) {
    if (!open.has(key) && !eventSays(key, true)) map.delete(key);
  }
}

function applyOpenEvent(v, e) {
  const [map, key] = openSet(v, e.kind, e);
  const open = e.state === 'open';
  if (open) map.set(key, e);
  else map.delete(key);
  const at = `${e.kind}:${key}`;
  // Latest last (a Map keeps insertion order), and only the latest few hundred kept.
  v.eventAt.delete(at);
  v.eventAt.set(at, { utc: parseUtc(e.utc), open });
  if (v.eventAt.size > 256) v.eventAt.delete(v.eventAt.keys().next().value);
  if (e.kind === 'sysid_conflict') v.deliveryUnreliable = v.conflicts.size > 0;
}

// A track's key, as /status and the events name it: its ICAO address or its UAS ID.
function trafficKey(x) {
  return x.key ?? x.icao ?? x.uas_id;
}

function gapStart(gapEvent) {
  return parseUtc(gapEvent.last_recv_utc) ?? parseUtc(gapEvent.utc) - gapEvent.threshold_s * 1000;
}

// The receiver's clock minus this browser's, from a time the receiver stamped before sending.
// A snapshot is built on the receiver's housekeeping tick (up to half a second old when it
// arrives) and an event is stamped when it fell due: every sample is low by its age, so the
// largest of the recent ones is the least stale.
function sampleOffset(utc) {
  if (!utc) return;
  board.offsetSamples.push(utc - Date.now());
  if (board.offsetSamples.length > OFFSET_SAMPLES) board.offsetSamples.shift();
  board.offsetMs = Math.max(...board.offsetSamples);
}

function applySnapshot(s) {
  board.stats.snapshots++;
  sampleOffset(parseUtc(s.utc));
  board.startedMs = parseUtc(s.started_utc);
  board.clock = s.clock;
  board.links = s.links || [];
  board.trafficLimits = s.traffic_limits ?? board.trafficLimits;
  const siteKey = (s.sites || []).map((x) => x.name).join(',');
  if (siteKey !== board.sites.map((x) => x.name).join(',')) board.dirty.all = true;
  board.sites = s.sites || [];
  board.dirty.links = true;
  for (const sv of s.vehicles || []) {
    const v = vehicle(sv.sysid);
    const before = stateOf(v);
    v.name = sv.name;
    v.links = sv.links || [];
    v.perLink = sv.per_link || [];
    const heard = parseUtc(sv.last_heard_utc);
    if (heard !== null) v.lastHeard = Math.max(v.lastHeard ?? heard, heard);
    v.firstHeard = parseUtc(sv.first_heard_utc) ?? v.firstHeard;
    v.expectedS = sv.expected_interval_s;
    v.p50 = sv.latency_p50_ms;
    v.p95 = sv.latency_p95_ms;
    v.resolution = sv.latency_resolution_ms ?? null;
    v.offset = sv.clock_offset_ms;
    v.loss = sv.loss_percent;
    v.hb = sv.heartbeat || null;
    v.delivery = sv.delivery || {};
    const built = parseUtc(s.utc);
    reconcile(v, 'link_gap', sv.link_gaps || [], built);
    reconcile(v, 'sysid_conflict', sv.conflicts || [], built);
    reconcile(v, 'stream', (sv.streams || []).map((st) => st.event).filter(Boolean), built);
    v.traffic = sv.traffic || [];
    v.position = sv.position ?? null;
    // The snapshot's open proximities, as keys; an event since on a key says otherwise.
    reconcile(v, 'traffic_proximity', v.traffic.filter((t) => t.proximity), built);
    // The receiver's flag is its open conflicts: the same as the page's unless an event since
    // opened or closed one.
    v.deliveryUnreliable = v.conflicts.size > 0;
    if (sv.open_gap) {
      const start = gapStart(sv.open_gap);
      // Already closed by a heartbeat we heard of after this gap began: the snapshot is older.
      if (!(v.lastClosedEnd !== null && v.lastClosedEnd > start)) openGap(v, start, parseUtc(sv.open_gap.utc));
    } else if (v.gap && heard !== null && heard > v.gap.start) {
      closeGap(v, v.gap.start, heard);
    }
    if (stateOf(v) !== before) board.dirty.order = true;
    markDirty(v);
  }
  schedule();
}

function applyHistory(h) {
  for (const [sysid, hv] of Object.entries(h.vehicles || {})) {
    const v = vehicle(Number(sysid));
    // Spans the page learnt from events since are kept; the served ones come first.
    const known = new Set(hv.gaps.map((g) => g[0]));
    v.gaps = hv.gaps.map((g) => [g[0], g[1]]).concat(v.gaps.filter((g) => !known.has(g[0])));
    const newest = hv.latency.length ? hv.latency[hv.latency.length - 1][0] : -Infinity;
    v.latency = hv.latency.concat(v.latency.filter((p) => p[0] > newest));
    markDirty(v);
  }
  for (const line of h.events || []) addEvent(line, JSON.parse(line), false);
  board.dirty.events = true;
  schedule();
}

function addEvent(line, e, live) {
  if (board.seen.has(line)) return;
  board.seen.add(line);
  if (board.seen.size > 2000) board.seen = new Set([...board.seen].slice(-1000));
  if (e.kind === 'latency') return;
  board.events.push({ e, live });
  board.events.sort((a, b) => parseUtc(a.e.utc) - parseUtc(b.e.utc));
  if (board.events.length > MAX_EVENTS_SHOWN) board.events.splice(0, board.events.length - MAX_EVENTS_SHOWN);
  board.dirty.events = true;
}

function onEvent(data) {
  board.stats.events++;
  const received = performance.now();
  let e;
  try {
    e = JSON.parse(data);
  } catch (err) {
    return;
  }
  sampleOffset(parseUtc(e.utc));
  if (e.kind === 'telemetry_gap') {
    const v = vehicle(e.sysid);
    if (e.name) v.name = e.name;
    const before = stateOf(v);
    if (e.state === 'open') {
      openGap(v, gapStart(e), parseUtc(e.utc));
    } else {
      const end = parseUtc(e.next_recv_utc) ?? parseUtc(e.utc);
      v.lastHeard = Math.max(v.lastHeard ?? end, end);
      if (e.withdrawn) withdrawGap(v, gapStart(e));
      else closeGap(v, gapStart(e), end);
    }
    if (stateOf(v) !== before) {
      board.dirty.order = true;
      v.pendingEvent = v.pendingEvent ?? received;
    }
    markDirty(v);
  } else if (e.kind === 'traffic_proximity') {
    const v = vehicle(e.sysid);
    if (e.name) v.name = e.name;
    applyOpenEvent(v, e);
    // Its distances as the event measured them, until the next snapshot measures again.
    const key = trafficKey(e);
    const entry = {
      key, callsign: e.callsign, horizontal_m: e.horizontal_m, vertical_m: e.vertical_m,
      vertical_basis: e.vertical_basis, bearing_deg: e.bearing_deg, proximity: e.state === 'open',
    };
    v.traffic = v.traffic.filter((t) => t.key !== key).concat(e.state === 'open' ? [entry] : [])
      .sort((a, b) => a.horizontal_m - b.horizontal_m);
    board.dirty.order = true;
    markDirty(v);
  } else if (e.kind === 'link_gap' || e.kind === 'sysid_conflict' || e.kind === 'stream') {
    const v = vehicle(e.sysid);
    if (e.name) v.name = e.name;
    applyOpenEvent(v, e);
    // The header counts them.
    board.dirty.order = true;
    markDirty(v);
  } else if (e.kind === 'latency') {
    const v = vehicle(e.sysid);
    v.latency.push([parseUtc(e.utc), e.p50_ms, e.p95_ms, e.clock_offset_ms]);
    v.p50 = e.p50_ms;
    v.p95 = e.p95_ms;
    v.resolution = e.resolution_ms ?? null;
    v.offset = e.clock_offset_ms;
    markDirty(v);
  } else if (e.kind === 'clock') {
    board.clock = { synchronised: e.synchronised, max_error_us: e.max_error_us };
    board.dirty.links = true;
  }
  addEvent(data, e, true);
  schedule();
}

// --- the connection ----------------------------------------------------------------------

function setLive(live, reason) {
  if (live) {
    board.lastGoodMs = Date.now();
  } else {
    board.lostReason = reason;
  }
  if (board.live !== live) {
    board.live = live;
    board.dirty.all = true;
    // Said at once, not at the next render pass.
    renderConnection();
  }
  schedule();
}

async function fetchJson(path) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), POLL_TIMEOUT_MS);
  try {
    const response = await fetch(path, { cache: 'no-store', signal: abort.signal });
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    return await response.json();
  } finally {
    clearTimeout(timer);
  }
}

// The snapshot and the history, on (re)connect and after a resync.
async function reload() {
  try {
    const [status, history] = await Promise.all([fetchJson('/status'), fetchJson('/board/history')]);
    applyHistory(history);
    applySnapshot(status);
    if (board.source && board.source.readyState === EventSource.OPEN) setLive(true);
  } catch (err) {
    setLive(false, 'The receiver did not answer');
  }
}

async function poll() {
  try {
    const status = await fetchJson('/status');
    applySnapshot(status);
    const source = board.source;
    if (source && source.readyState === EventSource.OPEN) {
      setLive(true);
    } else if (!source || source.readyState === EventSource.CLOSED
      || Date.now() - board.sourceOpenedAt > 3 * POLL_MS) {
      // The receiver answers but the event stream is not back: EventSource gave up (it does
      // on an HTTP error) or is still waiting out its retry. Open a new one.
      connect();
    }
  } catch (err) {
    setLive(false, 'The receiver did not answer /status');
  }
}

function connect() {
  if (board.source) board.source.close();
  const source = new EventSource('/events');
  board.source = source;
  board.sourceOpenedAt = Date.now();
  source.onopen = () => {
    board.sourceOpenedAt = Date.now();
    reload();
  };
  source.onmessage = (m) => onEvent(m.data);
  source.addEventListener('resync', () => reload());
  source.onerror = () => {
    if (source !== board.source) return;
    board.sourceOpenedAt = Date.now();
    setLive(false, 'The event stream from the receiver dropped');
  };
}

// --- rendering ---------------------------------------------------------------------------

function schedule() {
  if (board.renderPending) return;
  board.renderPending = true;
  const wait = Math.max(0, board.lastRender + RENDER_MS - performance.now());
  setTimeout(render, wait);
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, val] of Object.entries(attrs || {})) e.setAttribute(k, val);
  return e;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function buildCard(v) {
  const li = el('li', 'vehicle');
  li.dataset.sysid = String(v.sysid);
  li.tabIndex = 0;
  const titleId = `v${v.sysid}-title`;
  li.setAttribute('aria-labelledby', titleId);
  const head = el('div', 'v-head');
  const badge = el('span', 'badge');
  badge.append(el('span', 'shape'), el('span', 'state-text'));
  badge.firstChild.setAttribute('aria-hidden', 'true');
  const h3 = el('h3');
  h3.id = titleId;
  h3.append(el('span', 'sysid', String(v.sysid)), el('span', 'name'));
  head.append(badge, h3, el('span', 'age'));
  const gapTitle = el('p', 'gap-title');
  const observed = el('p', 'observed', OBSERVED);
  // Open link gaps, conflicts and stopped streams: each a line of text with its own shape.
  const alerts = el('ul', 'alerts');
  const facts = el('dl', 'facts');
  const row = (label, cls) => {
    const dd = el('dd', cls);
    facts.append(el('dt', null, label), dd);
    return dd;
  };
  const mode = row('Mode', 'mode');
  const links = row('Links', 'links');
  const latency = row('Latency', 'latency-row');
  const latencyText = el('span', 'latency');
  const spark = svg('svg', { class: 'spark', viewBox: '0 0 600 100', preserveAspectRatio: 'none', 'aria-hidden': 'true' });
  const p95 = svg('polyline', { class: 'p95' });
  const p50 = svg('polyline', { class: 'p50' });
  spark.append(p95, p50);
  latency.append(latencyText, spark);
  const loss = row('Loss', 'loss');
  const delivery = row('Delivered', 'delivery');
  // Nearby traffic: a plan view (our vehicle at the centre, north up, the proximity threshold
  // as a dashed ring) beside a list with each track's distance and altitude difference.
  const traffic = el('section', 'traffic');
  const trafficHead = el('h4', 'traffic-head', 'Traffic');
  const plan = svg('svg', { class: 'plan', viewBox: '-100 -100 200 200', role: 'img' });
  const trafficList = el('ul', 'traffic-list');
  traffic.append(trafficHead, plan, trafficList);
  const stripWrap = el('div', 'strip-wrap');
  const stripLabel = el('div', 'strip-label');
  stripLabel.append(el('span', null, '30 min ago'), el('span', null, 'now'));
  const strip = svg('svg', { class: 'strip', viewBox: `0 0 ${STRIP_MS / 1000} 10`, preserveAspectRatio: 'none', role: 'img' });
  stripWrap.append(strip, stripLabel);
  li.append(head, gapTitle, observed, alerts, facts, traffic, stripWrap);
  v.el = {
    li, stateText: badge.lastChild, name: h3.lastChild, age: head.lastChild, gapTitle, observed,
    alerts, mode, links, latencyText, p50, p95, loss, delivery, strip, stripKey: '', sparkKey: '',
    traffic, trafficHead, plan, trafficList, trafficKey: null,
  };
}

function renderCard(v, now) {
  if (!v.el) buildCard(v);
  const e = v.el;
  const state = stateOf(v);
  if (v.shownState !== state) {
    e.li.dataset.state = state;
    setText(e.stateText, state === 'ok' ? 'OK' : state === 'gap' ? 'GAP' : 'NEVER HEARD');
    v.shownState = state;
    if (v.pendingEvent !== null) {
      const stats = board.stats.eventToDom;
      stats.push(performance.now() - v.pendingEvent);
      if (stats.length > 2000) stats.splice(0, 1000);
    }
  }
  v.pendingEvent = null;
  setText(e.name, v.name || '(no name)');
  const silentFor = v.gap ? now - v.gap.start : null;
  if (state === 'never') {
    const since = v.gap ? v.gap.start : board.startedMs;
    setText(e.age, 'never heard');
    setText(e.gapTitle, since ? `Never heard since the receiver started, ${age(now - since)} ago` : 'Never heard');
  } else {
    setText(e.age, `heard ${age(now - v.lastHeard)} ago`);
    setText(e.gapTitle, state === 'gap' ? `${TITLE_PREFIX} Nothing for ${sig3(silentFor / 1000)} s` : '');
  }
  e.gapTitle.hidden = state === 'ok';
  e.observed.hidden = state !== 'gap';
  const hb = v.hb;
  if (hb) {
    const alarm = ['CRITICAL', 'EMERGENCY', 'FLIGHT_TERMINATION'].includes(hb.status);
    const key = `${hb.mode}|${hb.armed}|${hb.status}|${hb.type_name}`;
    if (e.mode.dataset.key !== key) {
      e.mode.dataset.key = key;
      e.mode.replaceChildren(
        el('span', null, `${hb.mode} · `),
        el('span', hb.armed ? 'armed' : null, hb.armed ? 'ARMED' : 'disarmed'),
        el('span', alarm ? 'status-alarm' : null, ` · ${hb.status}`),
        el('span', null, ` · ${hb.type_name}`),
      );
    }
  } else {
    setText(e.mode, 'no heartbeat fields');
  }
  if (board.sites.length) {
    // The range: a cell per site, in the same order on every vehicle, so they read as columns.
    const key = board.sites.map((site) => `${site.name}:${v.links.includes(site.name)}`).join(',');
    if (e.links.dataset.key !== key) {
      e.links.dataset.key = key;
      setText(e.links.previousSibling, 'Sites');
      e.links.replaceChildren(...board.sites.map((site) => {
        const hears = v.links.includes(site.name);
        return el('span', hears ? 'site site-hears' : 'site site-not', `${hears ? '\u25CF' : '\u2013'} ${site.name}`);
      }));
    }
  } else {
    const linkText = v.perLink.length
      ? v.perLink.map((l) => `${l.link} ${l.frames_per_s.toFixed(1)}/s`).join(' · ')
      : v.links.join(' · ') || 'none';
    setText(e.links, linkText);
  }
  let latencyText;
  const known = (x) => x !== null && x !== undefined;
  // A figure under the samples' resolution is null in the report: shown as below it.
  const figure = (ms) => (known(ms) ? `${ms < 10 ? ms.toFixed(1) : ms.toFixed(0)} ms` : `<${v.resolution} ms`);
  if (known(v.offset)) {
    const sign = v.offset > 0 ? '+' : '';
    const size = Math.abs(v.offset) < 1000 ? `${v.offset.toFixed(0)} ms` : `${(v.offset / 1000).toFixed(1)} s`;
    latencyText = `vehicle clock off UTC by ${sign}${size}`;
  } else if (known(v.p50) || known(v.resolution)) {
    latencyText = `p50 ${figure(v.p50)} · p95 ${figure(v.p95)}`;
  } else {
    latencyText = 'no SYSTEM_TIME';
  }
  setText(e.latencyText, latencyText);
  renderSpark(v, now);
  setText(e.loss, v.deliveryUnreliable
    ? `${v.loss.toFixed(1)} % (UNRELIABLE: two senders on this id)`
    : `${v.loss.toFixed(1)} %`);
  renderDelivery(v);
  renderAlerts(v, now);
  renderTraffic(v);
  renderStrip(v, now);
}

// The proximity threshold, from the snapshot (the plan view's dashed ring; its edge is five
// times it, as far as the receiver lists traffic).
function trafficLimit() {
  return board.trafficLimits?.horizontal_m ?? 1000;
}

function metres(m) {
  return m >= 10000 ? `${(m / 1000).toFixed(1)} km` : `${Math.round(m)} m`;
}

// `45 m above`, `12 m below`, `altitude unknown`: the vertical separation in words.
function vertical(t) {
  if (t.vertical_m === null || t.vertical_m === undefined) return 'altitude unknown';
  const v = Math.round(t.vertical_m);
  return v < 0 ? `${-v} m below` : `${v} m above`;
}

function renderTraffic(v) {
  const list = v.traffic.map((t) => ({ ...t, proximity: v.proximities.has(t.key) }));
  const open = list.filter((t) => t.proximity).length;
  const key = list.map((t) => `${t.key}:${Math.round(t.horizontal_m)}:${Math.round(t.vertical_m ?? 0)}:${Math.round(t.bearing_deg)}:${t.proximity}`).join('|');
  const state = open ? 'proximity' : list.length ? 'clear' : 'none';
  v.el.li.dataset.traffic = state;
  // A vehicle whose position the receiver was never told (no GLOBAL_POSITION_INT) and with no
  // traffic near: nothing to draw.
  const shown = v.position !== null || list.length > 0;
  if (v.el.trafficKey === `${shown}|${key}`) return;
  v.el.trafficKey = `${shown}|${key}`;
  const e = v.el;
  e.traffic.hidden = !shown;
  setText(e.trafficHead, open
    ? `Traffic: ${open} WITHIN ${metres(trafficLimit())}`
    : list.length ? `Traffic: ${list.length} within ${metres(5 * trafficLimit())}, none within ${metres(trafficLimit())}` : 'Traffic: none known nearby');
  e.traffic.dataset.traffic = state;
  const items = list.map((t) => {
    const name = t.callsign || t.key;
    const shape = t.proximity ? '\u25B2' : '\u00B7';
    const text = `${t.proximity ? 'PROXIMITY ' : ''}${name}: ${metres(t.horizontal_m)}, ${vertical(t)}, bearing ${Math.round(t.bearing_deg)}\u00B0`;
    const li = alertItem(t.proximity ? 'traffic-near' : 'traffic-far', shape, text);
    li.dataset.track = t.key;
    li.dataset.proximity = t.proximity ? 'open' : 'clear';
    li.title = t.vertical_basis ? `altitudes compared: ${t.vertical_basis}` : 'no altitude reported';
    return li;
  });
  e.trafficList.replaceChildren(...items);
  e.trafficList.hidden = items.length === 0;
  // The plan: scaled so the list's edge (five times the threshold) is the rim.
  const scale = 90 / (5 * trafficLimit());
  const marks = [
    svg('circle', { class: 'plan-rim', cx: 0, cy: 0, r: 90 }),
    svg('circle', { class: 'plan-limit', cx: 0, cy: 0, r: (trafficLimit() * scale).toFixed(1) }),
    svg('path', { class: 'plan-own', d: 'M0,-6 L5,5 L0,2 L-5,5 Z' }),
  ];
  for (const t of list) {
    const r = Math.min(90, t.horizontal_m * scale);
    const b = (t.bearing_deg * Math.PI) / 180;
    const x = (r * Math.sin(b)).toFixed(1);
    const y = (-r * Math.cos(b)).toFixed(1);
    // Shape says it, not colour alone: a triangle within the threshold, a square beyond it.
    marks.push(t.proximity
      ? svg('path', { class: 'plan-near', d: `M${x},${y - 6} L${+x + 6},${+y + 5} L${x - 6},${+y + 5} Z` })
      : svg('rect', { class: 'plan-far', x: x - 3, y: y - 3, width: 6, height: 6 }));
  }
  e.plan.replaceChildren(...marks);
  const nearest = list[0];
  e.plan.setAttribute('aria-label', list.length
    ? `Plan view, north up, ${metres(5 * trafficLimit())} to the edge: ${list.length} track${list.length > 1 ? 's' : ''}, nearest ${nearest.callsign || nearest.key} ${metres(nearest.horizontal_m)} at bearing ${Math.round(nearest.bearing_deg)} degrees${open ? `, ${open} within ${metres(trafficLimit())}` : ''}`
    : `Plan view, north up, ${metres(5 * trafficLimit())} to the edge: no traffic`);
}

// "radio1 92.0 % · radio2 88.0 % · together 99.6 %": of the frames the vehicle's sequence
// numbers say it sent, what each link brought and what any link brought. Cut (not rounded) to a
// tenth, so a link that lost frames never reads 100 %.
function percent(p) {
  return `${(Math.floor(p * 10) / 10).toFixed(1)} %`;
}

function renderDelivery(v) {
  const links = Object.entries(v.delivery).filter(([k]) => k !== 'any');
  let text;
  if (!links.length) {
    text = 'not known yet';
  } else {
    const parts = links.map(([k, pct]) => `${k} ${percent(pct)}`);
    if (links.length > 1 && v.delivery.any !== undefined) parts.push(`together ${percent(v.delivery.any)}`);
    text = parts.join(' \u00B7 ');
    if (v.deliveryUnreliable) text += ' (UNRELIABLE: two senders on this id)';
  }
  setText(v.el.delivery, text);
  v.el.delivery.classList.toggle('unreliable', v.deliveryUnreliable);
  v.el.delivery.dataset.unreliable = String(v.deliveryUnreliable);
}

// A few MAV_TYPE and MAV_AUTOPILOT names, for a conflict's two identities; others by number.
const MAV_TYPES = { 1: 'fixed wing', 2: 'quadrotor', 4: 'helicopter', 10: 'ground rover', 11: 'boat', 13: 'hexarotor', 14: 'octorotor', 19: 'VTOL', 20: 'VTOL', 21: 'VTOL tiltrotor' };
const AUTOPILOTS = { 3: 'ArduPilot', 12: 'PX4', 8: 'no autopilot' };

// A conflict's evidence, each reason in words with what shows it.
function conflictEvidence(c) {
  return (c.reasons || []).map((r) => {
    if (r === 'heartbeat_identity') {
      const kinds = (c.identities || []).map((i) => `${MAV_TYPES[i.type] ?? `type ${i.type}`} (${AUTOPILOTS[i.autopilot] ?? `autopilot ${i.autopilot}`})`);
      return `heartbeats of two kinds of vehicle${kinds.length ? `: ${kinds.join(' and ')}` : ''}`;
    }
    if (r === 'sources') return 'two peer addresses at once';
    if (r === 'interleaved_sequences') {
      const runs = (c.sequences || []).map((q) => `on ${q.link} near ${q.runs[0]} and ${q.runs[1]}, ${q.interleaved} frames`);
      return `sequence numbers in two runs${runs.length ? ` (${runs.join('; ')})` : ''}`;
    }
    return r.replaceAll('_', ' ');
  });
}

// One line of a card's alerts: a shape (hidden from screen readers: the words say it) and text.
function alertItem(cls, shape, text) {
  const li = el('li', cls);
  const mark = el('span', 'alert-shape', shape);
  mark.setAttribute('aria-hidden', 'true');
  li.append(mark, el('span', 'alert-text', text));
  return li;
}

function renderAlerts(v, now) {
  const items = [];
  for (const c of v.conflicts.values()) {
    const sources = c.sources && c.sources.length ? ` From ${c.sources.join(' and ')}` : '';
    const links = c.links && c.links.length ? ` on ${c.links.join(', ')}` : '';
    const li = alertItem('alert-conflict', '\u26A0',
      `TWO SENDERS on sysid ${c.sysid}, component ${c.compid}: ${conflictEvidence(c).join('; ')}.${sources}${links}. Loss and delivery figures unreliable while this lasts.`);
    li.dataset.conflict = 'open';
    li.dataset.compid = String(c.compid);
    li.dataset.reasons = (c.reasons || []).join(' ');
    items.push(li);
  }
  for (const g of v.linkGaps.values()) {
    const silent = now - parseUtc(g.last_recv_utc);
    const hearing = g.hearing && g.hearing.length ? `heard on ${g.hearing.join(', ')}` : 'heard on other links';
    const li = alertItem('alert-link-gap', '\u25D2', `Not heard on ${g.link} for ${age(silent)}; ${hearing}`);
    li.dataset.linkGap = g.link;
    items.push(li);
  }
  for (const st of v.streams.values()) {
    const since = age(now - parseUtc(st.last_recv_utc));
    const text = st.reason === 'stopped'
      ? `${st.msg} stopped ${since} ago (was ${st.expected_hz.toFixed(1)}/s); heartbeats go on`
      : `${st.msg} slowed to ${st.observed_hz.toFixed(1)}/s (was ${st.expected_hz.toFixed(1)}/s); heartbeats go on`;
    const li = alertItem('alert-stream', '\u25BC', text);
    li.dataset.streamState = st.reason;
    li.dataset.msg = st.msg;
    items.push(li);
  }
  const key = items.map((i) => `${i.className}:${i.textContent}`).join('|');
  if (v.el.alerts.dataset.key !== key) {
    v.el.alerts.dataset.key = key;
    v.el.alerts.replaceChildren(...items);
  }
  v.el.alerts.hidden = items.length === 0;
}

function renderSpark(v, now) {
  const from = now - SPARK_MS;
  v.latency = v.latency.filter((p) => p[0] >= from);
  const points = v.latency.filter((p) => p[2] !== null);
  const key = `${points.length}|${points.length ? points[points.length - 1][0] : 0}|${Math.floor(now / 10000)}`;
  if (v.el.sparkKey === key) return;
  v.el.sparkKey = key;
  const top = Math.max(1, ...points.map((p) => p[2]));
  const line = (i) => points
    .map((p) => `${(((p[0] - from) / SPARK_MS) * 600).toFixed(1)},${(100 - (p[i] / top) * 96).toFixed(1)}`)
    .join(' ');
  v.el.p95.setAttribute('points', line(2));
  v.el.p50.setAttribute('points', line(1));
}

function renderStrip(v, now) {
  // Redrawn when a gap changes, and every 10 s as the window slides.
  const from = now - STRIP_MS;
  v.gaps = v.gaps.filter((g) => g[1] === null || g[1] >= from);
  const key = `${v.gaps.map((g) => `${g[0]}-${g[1]}`).join(',')}|${v.firstHeard}|${Math.floor(now / 10000)}`;
  if (v.el.stripKey === key) return;
  v.el.stripKey = key;
  const x = (t) => Math.max(0, (t - from) / 1000);
  const children = [];
  const heardFrom = v.firstHeard ?? v.lastHeard;
  if (heardFrom !== null) {
    children.push(svg('rect', { class: 'heard', x: x(heardFrom).toFixed(1), y: 0, width: (x(now) - x(heardFrom)).toFixed(1), height: 10 }));
  }
  let longest = 0;
  for (const [start, end] of v.gaps) {
    const stop = end ?? now;
    longest = Math.max(longest, stop - start);
    // At least 4 s wide, so a short gap still shows on a wall.
    children.push(svg('rect', {
      class: end === null ? 'openmark' : 'gapmark', x: x(start).toFixed(1), y: 0,
      width: Math.max(4, x(stop) - x(start)).toFixed(1), height: 10,
    }));
  }
  v.el.strip.replaceChildren(...children);
  const n = v.gaps.length;
  v.el.strip.setAttribute('aria-label', n === 0
    ? 'Last 30 minutes: no gap'
    : `Last 30 minutes: ${n} gap${n > 1 ? 's' : ''}, longest ${sig3(longest / 1000)} s`);
}

function sortKey(v) {
  const rank = { gap: 0, never: 1, ok: 2 }[stateOf(v)];
  return rank * 1000 + v.sysid;
}

function renderOrder() {
  const sorted = [...board.vehicles.values()].sort((a, b) => sortKey(a) - sortKey(b));
  const list = $('vehicles');
  const same = sorted.length === board.order.length && sorted.every((v, i) => board.order[i] === v);
  if (!same) {
    for (const v of sorted) {
      if (!v.el) buildCard(v);
    }
    list.replaceChildren(...sorted.map((v) => v.el.li));
    board.order = sorted;
  }
  const counts = { gap: 0, never: 0, ok: 0 };
  for (const v of sorted) counts[stateOf(v)]++;
  setText($('vehicle-count'), `(${sorted.length})`);
  const parts = [];
  if (counts.gap) parts.push(`${counts.gap} in gap`);
  if (counts.never) parts.push(`${counts.never} never heard`);
  parts.push(`${counts.ok} OK`);
  // Issue 28's findings, vehicles counted once per kind.
  const some = (pick) => sorted.filter((v) => pick(v).size > 0).length;
  const conflicted = some((v) => v.conflicts);
  const linkGapped = some((v) => v.linkGaps);
  const streamed = some((v) => v.streams);
  const traffic = some((v) => v.proximities);
  if (conflicted) parts.push(`${conflicted} with two senders`);
  if (linkGapped) parts.push(`${linkGapped} silent on a link`);
  if (streamed) parts.push(`${streamed} with a stream stopped`);
  if (traffic) parts.push(`${traffic} with traffic near`);
  setText($('summary'), sorted.length ? parts.join(' · ') : 'No vehicles yet');
}

function renderSites() {
  setText($('links-heading'), 'Sites');
  $('links-head').replaceChildren(...['Site', 'State', 'Clock'].map((name) => {
    const th = el('th', null, name);
    th.scope = 'col';
    return th;
  }));
  const rows = board.sites.map((site) => {
    const tr = el('tr');
    const th = el('th', null, site.name);
    th.scope = 'row';
    // A stalled input says nothing of the site's vehicles: shown before silence.
    const state = site.input_stalled
      ? ['link-down', '\u29D6 INPUT STALLED (judged when it catches up)']
      : site.silent ? ['link-down', '\u2715 SILENT'] : ['link-up', '\u25CF heard'];
    const clock = site.clock_off
      ? ['link-down', '\u2715 OFF (corrected)']
      : site.unsynchronised ? ['link-down', '! not NTP-synchronised'] : [null, 'agrees'];
    tr.append(th, el('td', state[0], state[1]), el('td', clock[0], clock[1]));
    return tr;
  });
  $('links').replaceChildren(...rows);
}

function renderLinks() {
  if (board.sites.length) {
    renderSites();
    return;
  }
  const now = receiverNow();
  const dbm = (x, raw) => (x === null || x === undefined ? `unknown (${raw})` : `${x.toFixed(1)} dBm`);
  const rows = board.links.flatMap((l) => {
    const tr = el('tr');
    const state = l.up === true ? ['link-up', '\u25CF up'] : l.up === false ? ['link-down', '\u2715 DOWN'] : [null, '? not reported'];
    const rejects = Object.entries(l.rejects || {}).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    const drops = Object.entries(l.dropped || {}).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    const th = el('th', null, l.name);
    th.scope = 'row';
    const stateCell = el('td', state[0], state[1]);
    // Frames that continued a second run of sequence numbers: two senders on one id.
    if (l.seq_interleaved > 0) stateCell.append(el('span', 'interleaved', `${l.seq_interleaved} interleaved`));
    tr.append(th, stateCell, el('td', null, l.rate_per_s.toFixed(1)), el('td', null, rejects), el('td', null, drops));
    // Each SiK radio reporting on the link (RADIO_STATUS): a row of its own under the link's.
    const radios = (l.radios || []).map((r) => {
      const row = el('tr', 'radio-row');
      row.dataset.radio = `${r.sysid}/${r.compid}`;
      row.dataset.link = l.name;
      const name = el('th', null, `\u21B3 radio ${r.sysid}/${r.compid}`);
      name.scope = 'row';
      const heard = parseUtc(r.utc);
      const numbers = el('td', 'radio',
        `RSSI ${dbm(r.rssi_dbm, r.rssi)} here, ${dbm(r.remrssi_dbm, r.remrssi)} remote \u00B7 noise ${r.noise} here, ${r.remnoise} remote \u00B7 rx errors ${r.rxerrors} (fixed ${r.fixed}) \u00B7 tx buffer ${r.txbuf} % \u00B7 reported ${age(now - heard)} ago`);
      numbers.colSpan = 4;
      row.append(name, numbers);
      return row;
    });
    return [tr, ...radios];
  });
  $('links').replaceChildren(...rows);
  const c = board.clock;
  const clock = $('receiver-clock');
  if (c) {
    setText(clock, c.synchronised
      ? `Receiver clock: synchronised (max error ${(c.max_error_us / 1000).toFixed(1)} ms)`
      : `Receiver clock: NOT SYNCHRONISED (max error ${(c.max_error_us / 1000).toFixed(0)} ms)`);
    clock.classList.toggle('unsynchronised', !c.synchronised);
  } else {
    setText(clock, 'Receiver clock: sync state not known');
  }
}

// What the radios said around a gap (facts, not a verdict): the remote RSSI before the last
// heartbeat and since, per radio.
function radioEvidence(radio) {
  if (!Array.isArray(radio) || !radio.length) return '';
  const dbm = (x) => (x === null || x === undefined ? '?' : `${x.toFixed(1)}`);
  return radio.map((r) => {
    const window = (w) => (w ? `${dbm(w.remrssi_dbm.first)} to ${dbm(w.remrssi_dbm.last)} dBm` : 'no report');
    return `radio ${r.sysid}/${r.compid} on ${r.link}: remote RSSI before ${window(r.before)}, during ${window(r.during)}`;
  }).join('; ');
}

function eventText(e) {
  const who = e.sysid !== undefined ? vehicleLabel({ sysid: e.sysid, name: e.name ?? board.vehicles.get(e.sysid)?.name }) : '';
  switch (e.kind) {
    case 'telemetry_gap':
      return e.state === 'open'
        ? ['kind-gap', `${who}: ${TITLE_PREFIX}`, [e.observed, radioEvidence(e.radio)].filter(Boolean).join('; ')]
        : ['kind-ok', `${who}: ${e.title ?? 'heard again'}`, e.observed];
    case 'link': {
      const counts = e.counts ? Object.entries(e.counts).map(([k, n]) => `${k} ${n}`).join(', ') : '';
      return [e.state === 'down' ? 'kind-gap' : '', `Link ${e.link} ${e.state}`, [e.reason, counts].filter(Boolean).join(': ')];
    }
    case 'clock':
      return [e.synchronised ? 'kind-ok' : 'kind-gap', `Receiver clock ${e.state.replaceAll('_', ' ')}`, `max error ${(e.max_error_us / 1000).toFixed(1)} ms`];
    case 'receiver':
      return ['', `Receiver ${e.state}${e.version ? ` (version ${e.version})` : ''}`, e.message ?? ''];
    case 'dropped':
      return ['kind-gap', `${e.count} ${e.stream} records dropped`, e.reason ?? ''];
    case 'link_gap':
      return e.state === 'open'
        ? ['kind-gap', `${who}: not heard on ${e.link}`,
          [(e.hearing || []).length ? `heard on ${e.hearing.join(', ')}` : '', radioEvidence(e.radio)].filter(Boolean).join('; ')]
        : ['kind-ok', `${who}: ${e.title}`, ''];
    case 'sysid_conflict':
      return e.state === 'open'
        ? ['kind-gap', `${who}: ${e.title}`, [conflictEvidence(e).join('; '), (e.sources || []).join(' and ')].filter(Boolean).join('; ')]
        : ['kind-ok', `${who}: ${e.title}`, e.lasted_s !== undefined ? `lasted ${sig3(e.lasted_s)} s` : ''];
    case 'stream':
      return [e.state === 'open' ? 'kind-gap' : 'kind-ok', `${who}: ${e.title}`, ''];
    case 'traffic_proximity':
      return [e.state === 'open' ? 'kind-gap' : 'kind-ok', `${who}: ${e.title}`,
        [e.vertical_basis ? `altitudes ${e.vertical_basis}` : 'no altitude reported', `${e.source.kind} on ${e.source.link}`].join('; ')];
    case 'traffic':
      return ['', e.title, `${e.source.kind} on ${e.source.link}`];
    default:
      return ['', e.kind, ''];
  }
}

function renderEvents() {
  const items = board.events.slice().reverse().map(({ e }) => {
    const [cls, what, detail] = eventText(e);
    const li = el('li', cls);
    const when = el('time', 'when', hhmmss(parseUtc(e.utc)));
    when.dateTime = e.utc;
    li.append(when, el('span', 'what', what));
    if (detail) li.append(el('span', 'detail', detail));
    return li;
  });
  $('events').replaceChildren(...items);
}

function renderConnection() {
  const live = board.live;
  const c = $('connection');
  c.dataset.connection = live ? 'live' : 'lost';
  setText($('connection-text'), live ? 'LIVE' : 'CONNECTION LOST');
  $('lost').hidden = live;
  document.body.classList.toggle('stale', !live);
  const since = board.lastGoodMs;
  setText($('lost-detail'), since === null
    ? 'Waiting for the first answer from the receiver. Nothing on this page is live.'
    : `${board.lostReason}. Everything below is stale: last update ${age(Date.now() - since)} ago, at ${hhmmss(since + board.offsetMs)} UTC. Reconnecting by itself.`);
}

function render() {
  const started = performance.now();
  board.renderPending = false;
  board.lastRender = started;
  const now = receiverNow();
  const all = board.dirty.all;
  board.dirty.all = false;
  const dirty = all ? [...board.vehicles.keys()] : [...board.dirty.vehicles];
  board.dirty.vehicles.clear();
  for (const sysid of dirty) renderCard(board.vehicles.get(sysid), now);
  if (board.dirty.order || all) {
    board.dirty.order = false;
    renderOrder();
  }
  if (board.dirty.links || all) {
    board.dirty.links = false;
    renderLinks();
  }
  if (board.dirty.events) {
    board.dirty.events = false;
    renderEvents();
  }
  renderConnection();
  setText($('now'), `UTC ${hhmmss(now)}`);
  board.stats.renders++;
  board.stats.renderMs += performance.now() - started;
}

// Once a second: every age and open gap ticks.
function tick() {
  board.dirty.all = true;
  schedule();
}

document.addEventListener('keydown', (ev) => {
  if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
  if (ev.key === 'g' || ev.key === 'G') {
    const first = board.order.find((v) => stateOf(v) === 'gap');
    if (first) first.el.li.focus();
  } else if (ev.key === 'e' || ev.key === 'E') {
    $('events').focus();
  }
});

connect();
setInterval(poll, POLL_MS);
setInterval(tick, 1000);
renderConnection();
