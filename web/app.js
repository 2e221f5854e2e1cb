// The dashboard: a hash router over the views, the shared header, the
// window and filters, live updates, themes and keys. Every number comes from
// /api/v1 (api.js); nothing is computed here that the server could get wrong
// differently.

import * as api from './api.js';
import { ApiError, explainError } from './api.js';
import { fmtNs, fmtCount, fmtBytes, fmtPct, fmtTime, tparam, h, clear, sparkline, lineChart, copyButton, download } from './util.js';
import { Timeline, COLOUR_KEYS } from './timeline.js';

const VIEWS = [
	{ id: 'overview', key: '1', title: 'Overview' },
	{ id: 'chains', key: '2', title: 'Chains' },
	{ id: 'timeline', key: '3', title: 'Timeline' },
	{ id: 'op', key: '4', title: 'Op detail' },
	{ id: 'fleet', key: '5', title: 'Fleet' },
	{ id: 'requests', key: '6', title: 'Requests' },
];
const WINDOWS = ['', '1m', '5m', '15m', '1h', '6h', '24h'];
const POLL_MS = 2000;
const STREAM_RETRY_MS = 30000;

const state = {
	view: 'overview',
	p: {}, // the hash's parameters: since, from, to, pid, tid, chain, op, source, sev, kind
	overview: null,
	chains: null,
	fleet: null,
	gen: 0,
	poll: 0,
	timeline: null,
	sel: 0, // the selected chain card (j/k)
	// Live updates (trace --serve): 'stream' while /api/v1/stream is read,
	// 'polling' after it failed; what caused the latest refresh.
	live: { mode: '', ctl: null, last: null, ticks: 0, busy: false, again: false, retry: 0 },
	updatedBy: '',
};
window.__cw = state; // for the browser tests and the paint benchmark

// ---- the URL ----------------------------------------------------------------

function parseHash() {
	const raw = location.hash.replace(/^#\/?/, '');
	const [view, query] = raw.split('?');
	state.view = VIEWS.some((v) => v.id === view) ? view : 'overview';
	state.p = Object.fromEntries(new URLSearchParams(query || ''));
}

export function link(view, p = {}) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(p)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
	const s = q.toString();
	return '#/' + view + (s ? '?' + s : '');
}

// The window part of the current hash, carried across views.
function win(p = state.p) {
	return p.since ? { since: p.since } : p.from && p.to ? { from: p.from, to: p.to } : {};
}

// The window as API parameters: since, or from/to in the server's seconds.
function winParams(p = state.p) {
	if (p.since) return { since: p.since };
	if (p.from && p.to) return { from: tparam(+p.from), to: tparam(+p.to) };
	return {};
}

// An explicit window in wall ns, for the routes that need one: the hash's,
// else the whole stored range from the overview.
function winNs() {
	const tr = state.overview && state.overview.time_range;
	if (state.p.from && state.p.to) return [+state.p.from, +state.p.to];
	if (state.p.since && tr) {
		const m = /^(\d+)(ms|s|m|h|d)$/.exec(state.p.since);
		const mult = m ? { ms: 1e6, s: 1e9, m: 60e9, h: 3600e9, d: 86400e9 }[m[2]] : 0;
		if (m) return [Math.max(tr.from_wall_ns, tr.to_wall_ns - +m[1] * mult), tr.to_wall_ns];
	}
	return tr ? [tr.from_wall_ns, tr.to_wall_ns] : [0, 0];
}

// ---- chrome -------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

function setTheme(t) {
	document.documentElement.dataset.theme = t;
	localStorage.setItem('causeway.theme', t);
	$('theme').textContent = t === 'dark' ? 'Light theme' : 'Dark theme';
	if (state.timeline) state.timeline.resize();
}

function renderNav() {
	const nav = clear($('nav'));
	for (const v of VIEWS) {
		if (v.id === 'fleet' && !(state.fleet && state.fleet.configured)) continue;
		const p = { ...win() };
		if (v.id === 'timeline' && state.view !== 'timeline' && state.lastTimeline) Object.assign(p, state.lastTimeline);
		if (v.id === 'op' && state.lastOp) Object.assign(p, state.lastOp);
		nav.append(h('a', { href: link(v.id, p), class: state.view === v.id ? 'active' : '', 'aria-current': state.view === v.id ? 'page' : null, title: `${v.title} (${v.key})` }, v.title));
	}
	const sel = $('window');
	clear(sel);
	const cur = state.p.since || (state.p.from ? 'custom' : '');
	for (const w of WINDOWS) sel.append(h('option', { value: w, selected: w === cur }, w ? 'last ' + w : 'whole database'));
	if (cur === 'custom') sel.append(h('option', { value: 'custom', selected: true }, `${fmtTime(+state.p.from)} – ${fmtTime(+state.p.to)}`));
}

function status(text, cls = '') {
	const s = $('status');
	s.textContent = text;
	s.className = cls;
}

// A full-width message for a failure; `retry` re-renders the view.
function errorPanel(e, where) {
	const x = explainError(e);
	const box = h('section', { class: 'message error', role: 'alert', 'data-kind': e instanceof ApiError ? e.kind : 'page' },
		h('h2', {}, x.title),
		h('p', {}, x.text),
		h('p', { class: 'hint' }, x.hint));
	if (x.token) {
		const inp = h('input', { type: 'password', 'aria-label': 'bearer token', placeholder: 'token', autocomplete: 'off' });
		const f = h('form', { class: 'token' }, inp, h('button', { type: 'submit' }, 'Use token'));
		f.addEventListener('submit', (ev) => {
			ev.preventDefault();
			api.setToken(inp.value.trim());
			route();
		});
		box.append(f);
	}
	if (where) box.dataset.where = where;
	box.append(h('button', { type: 'button', class: 'retry', onclick: () => route() }, 'Try again'));
	return box;
}

// A panel whose body fills in when its promise settles; a failure shows
// there, the rest of the view stays.
function panel(title, cls, fill, extra) {
	const body = h('div', { class: 'body' }, h('p', { class: 'loading' }, 'loading…'));
	const sec = h('section', { class: 'panel ' + (cls || '') }, h('header', {}, h('h2', {}, title), extra || null), body);
	Promise.resolve()
		.then(() => fill(body, sec))
		.catch((e) => {
			if (e && e.kind === 'missing' && sec.dataset.optional) sec.remove();
			else body.replaceChildren(errorPanel(e, title));
		});
	return sec;
}

// ---- data ---------------------------------------------------------------------

async function loadOverview() {
	state.overview = await api.get('overview', winParams());
	const live = !!state.overview.live;
	$('live').hidden = !live;
	if (live) startLive();
	else stopLive();
	$('node').textContent = state.overview.node || '';
	document.title = `causeway · ${state.overview.node}`;
	return state.overview;
}

async function loadChains() {
	state.chains = await api.get('chains', { ...winParams(), pid: state.p.pid });
	return state.chains;
}

function isEmpty(ov) {
	const c = ov.counts || {};
	return !c.events && !c.offcpu && !c.snapshots && !c.chains;
}

function emptyMessage() {
	return h('section', { class: 'message empty', role: 'status', 'data-kind': 'empty' },
		h('h2', {}, 'No trace in this database yet'),
		h('p', {}, 'The server is running and its database is readable, but it holds no events, off-CPU intervals, host snapshots or chains.'),
		h('p', { class: 'hint' }, 'Record one with ', h('code', {}, 'causeway trace -- python train.py'), ' (or ', h('code', {}, 'causeway demo --db PATH'), ') and point ', h('code', {}, 'serve --db'), ' at that file. With trace --serve this page fills in by itself.'));
}

// ---- overview -----------------------------------------------------------------

function sevBadge(sev) {
	return h('span', { class: 'sev sev-' + String(sev).toLowerCase() }, sev);
}

function kv(rows) {
	return h('dl', { class: 'kv' }, rows.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

async function viewOverview(root) {
	const ov = await loadOverview();
	if (isEmpty(ov)) {
		root.append(emptyMessage());
		root.append(panel('Sessions', 'sessions', (b) => b.replaceChildren(sessionsTable(ov))));
		return;
	}
	root.append(panel('Top chains', 'top-chains wide', async (b) => {
		const ch = await loadChains();
		if (!ch.chains.length) {
			b.replaceChildren(h('p', { class: 'ok', 'data-kind': 'healthy' }, `No causal chain in this window: ${fmtCount(ch.window.calls_analysed)} calls over ${ch.window.ops_analysed} ops have no tail that a rule explains.`));
			return;
		}
		// A file of several nodes (merged): which node each chain is on.
		const many = (ov.nodes || []).length > 1;
		b.replaceChildren(h('ol', { class: 'chain-list' }, ch.chains.slice(0, 5).map((c, i) =>
			h('li', {}, sevBadge(c.severity), ' ', many && c.node ? h('span', { class: 'node' }, c.node, ' ') : null,
				h('strong', {}, c.root_cause.kind.replace(/_/g, ' ')), ' ',
				h('a', { href: link('chains', { ...win(), chain: i }) }, c.root_cause.summary),
				c.python ? h('span', { class: 'muted' }, ' · ', h('code', {}, pyText(c.python))) : null))),
			...(ch.chains.length > 5 ? [h('a', { href: link('chains', win()) }, `all ${ch.chains.length} chains`)] : []));
	}));
	root.append(panel('Top ops', 'ops wide', opsBody));
	const grid = h('div', { class: 'grid' });
	root.append(grid);
	grid.append(panel('Host', 'host', (b) => b.replaceChildren(hostBody(ov))));
	grid.append(panel('Capture health', 'health', (b) => b.replaceChildren(healthBody(ov))));
	grid.append(panel('Node and sessions', 'node-panel', (b) => {
		b.replaceChildren(
			kv([
				['node', ov.node],
				['nodes in the database', (ov.nodes || []).join(', ') || '–'],
				['stored range', ov.time_range ? `${fmtTime(ov.time_range.from_wall_ns, true)} – ${fmtTime(ov.time_range.to_wall_ns)}` : '–'],
				['calls', fmtCount(ov.calls)],
				['events / off-CPU / snapshots', `${fmtCount(ov.counts.events)} / ${fmtCount(ov.counts.offcpu)} / ${fmtCount(ov.counts.snapshots)}`],
			]),
			sessionsTable(ov));
	}));
	const extra = h('div', { class: 'grid' });
	root.append(extra);
	optionalPanels(extra);
}

function sessionsTable(ov) {
	const ss = (ov.capture && ov.capture.sessions) || ov.sessions || [];
	if (!ss.length) return h('p', { class: 'muted' }, 'No session recorded.');
	return h('ul', { class: 'sessions' }, ss.slice(0, 8).map((s) => {
		const full = (ov.sessions || []).find((x) => x.id === s.id) || s;
		const t0 = s.started_ns || full.started_wall_ns;
		const t1 = s.ended_ns || full.ended_wall_ns;
		return h('li', {}, h('strong', {}, `#${s.id} ${full.kind || ''}`), ' · ', fmtTime(t0, true), ' · ',
			s.live ? h('span', { class: 'live-dot' }, 'live') : t1 ? fmtNs(t1 - t0) : 'ended without a close',
			(s.command || full.command) ? h('div', {}, h('code', { class: 'cmd' }, s.command || full.command)) : null);
	}));
}

function healthBody(ov) {
	const cap = ov.capture;
	if (!cap) return h('p', { class: 'muted' }, 'This server does not report capture health (no "capture" in /api/v1/overview).');
	const drops = Object.entries(cap.drops || {});
	const lost = drops.filter(([, n]) => n > 0);
	const losses = cap.losses || ov.losses || [];
	const attach = cap.attach || [];
	return h('div', {},
		h('p', { class: lost.length || losses.length ? 'bad' : 'ok' },
			lost.length || losses.length
				? `${fmtCount(lost.reduce((a, [, n]) => a + n, 0))} records dropped; ${losses.length} session(s) lost records.`
				: 'No record dropped or lost.'),
		lost.length ? h('table', { class: 'drops' }, h('tbody', {}, lost.map(([k, n]) => h('tr', { class: 'bad' }, h('td', {}, k), h('td', { class: 'num' }, fmtCount(n)))))) : null,
		drops.length ? h('p', { class: 'muted', title: drops.map(([k, n]) => `${k} ${n}`).join('\n') }, `${drops.length} loss counters${lost.length ? '' : ', all zero'}` + (drops.length <= 10 ? `: ${drops.map(([k]) => k.replace(/^[a-z]+\./, '')).join(', ')}.` : ' (hover for the list).')) : null,
		losses.length ? h('ul', { class: 'losses' }, losses.map((l) => h('li', { class: 'bad' }, `session ${l.session_id} (${l.kind}, ${l.node}): lost ${fmtCount(l.lost)} of ${fmtCount(l.stored + l.lost)} records (${fmtPct(l.lost_share, 1)})`))) : null,
		h('h3', {}, 'Attach'),
		attach.length
			? h('table', { class: 'attach' }, h('tbody', {}, attach.map((a) => h('tr', {}, h('td', { class: 'cmd' }, a.path), h('td', { class: 'num' }, a.pid ?? '–'), h('td', { class: a.state === 'attached' ? 'ok' : 'bad' }, a.state)))))
			: h('p', { class: 'muted' }, 'No attach record stored (demo and merged databases have none).'));
}

function hostBody(ov) {
	const hs = ov.host;
	if (!hs) return h('p', { class: 'muted' }, 'This server does not report host snapshots (no "host" in /api/v1/overview).');
	if (!hs.length) return h('p', { class: 'muted' }, 'No host snapshot in this window.');
	// cpu_busy and io_busy are 0..1 shares; memory is a share of the total.
	const share = (v, pct) => (v !== undefined && v !== null ? v : pct !== undefined && pct !== null ? pct / 100 : null);
	const pts = hs.map((p) => ({
		t: p.t_ns,
		cpu: share(p.cpu_busy, p.cpu_pct),
		mem: p.mem_total_bytes ? p.mem_used_bytes / p.mem_total_bytes : share(null, p.mem_pct),
		io: share(p.io_busy, p.io_busy_pct),
	}));
	const last = hs[hs.length - 1];
	const lp = pts[pts.length - 1];
	return h('div', {},
		h('div', { class: 'legend' },
			h('span', { class: 'k cpu' }, `CPU ${fmtPct(lp.cpu)}`),
			h('span', { class: 'k mem' }, last.mem_total_bytes ? `memory ${fmtBytes(last.mem_used_bytes)} of ${fmtBytes(last.mem_total_bytes)}` : `memory ${fmtPct(lp.mem)}`),
			h('span', { class: 'k io' }, `IO busy ${fmtPct(lp.io)}`),
			last.load1 !== undefined ? h('span', {}, `load ${last.load1}${last.ncpu ? ' on ' + last.ncpu + ' CPUs' : ''}`) : null),
		lineChart(pts, [{ key: 'cpu', cls: 'cpu' }, { key: 'mem', cls: 'mem' }, { key: 'io', cls: 'io' }]),
		h('p', { class: 'axis' }, h('span', {}, fmtTime(hs[0].t_ns)), h('span', {}, `${hs.length} snapshots, share of 100 %`), h('span', {}, fmtTime(last.t_ns))));
}

async function opsBody(b) {
	// A file of several nodes (merged, a fleet export): one row per node
	// and op, each wall share that node's own.
	if ((state.overview && state.overview.nodes || []).length > 1) return opsPerNode(b);
	let series = null;
	let ops;
	try {
		series = await api.get('ops/series', { ...winParams(), points: 60 });
		ops = series.ops;
	} catch (e) {
		if (!(e instanceof ApiError) || e.kind !== 'missing') throw e;
		ops = (await api.get('ops', state.p.since ? { since: state.p.since } : {})).ops;
	}
	if (!ops.length) {
		b.replaceChildren(h('p', { class: 'muted' }, 'No call in this window.'));
		return;
	}
	// p50/p95/p99/max come from /ops (the same aggregates explain reads);
	// the series adds the sparklines.
	let totals = null;
	if (series) totals = (await api.get('ops', state.p.since ? { since: state.p.since } : {})).ops;
	const byKey = new Map((totals || ops).map((o) => [o.source + '/' + o.op, o]));
	const rows = ops.map((o) => ({ ...byKey.get(o.source + '/' + o.op), ...o, t: byKey.get(o.source + '/' + o.op) || o }));
	rows.sort((a, b2) => (b2.t.total_ns || 0) - (a.t.total_ns || 0) || b2.count - a.count);
	const tbl = h('table', { class: 'ops-table', 'data-testid': 'ops' },
		h('thead', {}, h('tr', {}, ['op', 'source', 'calls', 'p50', 'p99', 'max', 'wall share', 'p50 / p99 over time'].map((c) => h('th', { scope: 'col' }, c)))),
		h('tbody', {}, rows.map((o) => h('tr', { dataset: { op: o.op, source: o.source } },
			h('td', {}, h('a', { href: link('op', { ...win(), op: o.op, source: o.source }) }, o.op)),
			h('td', {}, o.source),
			h('td', { class: 'num', dataset: { v: o.t.count } }, fmtCount(o.t.count)),
			h('td', { class: 'num', dataset: { v: o.t.p50_ns } }, fmtNs(o.t.p50_ns)),
			h('td', { class: 'num', dataset: { v: o.t.p99_ns } }, fmtNs(o.t.p99_ns)),
			h('td', { class: 'num' }, fmtNs(o.t.max_ns)),
			h('td', { class: 'num' }, o.t.wall_share !== undefined ? fmtPct(o.t.wall_share, 1) : '–'),
			h('td', { class: 'spark-cell' }, Array.isArray(o.p50_ns) ? sparkline([o.p50_ns, o.p99_ns]) : h('span', { class: 'muted' }, '–'))))));
	b.replaceChildren(tbl, series ? h('p', { class: 'legend' }, h('span', { class: 'k p50' }, 'p50'), h('span', { class: 'k p99' }, 'p99'), ` per ${fmtNs(series.step_ns)}, log scale`) : null);
}

async function opsPerNode(b) {
	const d = await api.get('ops', { ...(state.p.since ? { since: state.p.since } : {}), per_node: 1 });
	if (!d.ops.length) {
		b.replaceChildren(h('p', { class: 'muted' }, 'No call in this window.'));
		return;
	}
	const tbl = h('table', { class: 'ops-table', 'data-testid': 'ops' },
		h('thead', {}, h('tr', {}, ['node', 'op', 'source', 'calls', 'p50', 'p99', 'max', 'wall share of the node'].map((c) => h('th', { scope: 'col' }, c)))),
		h('tbody', {}, d.ops.map((o) => h('tr', { dataset: { op: o.op, source: o.source, node: o.node || '' } },
			h('td', { class: 'nowrap node' }, o.node || '–'),
			h('td', {}, h('a', { href: link('op', { ...win(), op: o.op, source: o.source }) }, o.op)),
			h('td', {}, o.source),
			h('td', { class: 'num', dataset: { v: o.count } }, fmtCount(o.count)),
			h('td', { class: 'num', dataset: { v: o.p50_ns } }, fmtNs(o.p50_ns)),
			h('td', { class: 'num', dataset: { v: o.p99_ns } }, fmtNs(o.p99_ns)),
			h('td', { class: 'num' }, fmtNs(o.max_ns)),
			h('td', { class: 'num share', dataset: { v: o.wall_share } }, fmtPct(o.wall_share, 1))))));
	b.replaceChildren(tbl, h('p', { class: 'legend' }, `${d.ops.length} rows of ${new Set(d.ops.map((o) => o.node)).size} nodes; each wall share is of its own node's ${fmtNs(d.window_ns)}`));
}

// GPU health, NCCL ranks and tenants: each panel appears only when the
// server offers the route and it has data.
function optionalPanels(grid) {
	const add = (title, cls, route, fill) => {
		const p = panel(title, cls, async (b, sec) => {
			let d;
			try {
				d = await api.get(route, winParams());
			} catch (e) {
				if (e instanceof ApiError && (e.kind === 'missing' || e.kind === 'bad')) {
					sec.remove();
					return;
				}
				throw e;
			}
			if (!fill(b, d)) sec.remove();
		});
		grid.append(p);
	};
	add('GPU health', 'gpu', 'gpu', (b, d) => {
		if (!d.devices || !d.devices.length) return false;
		const watt = (x) => (x.power_w !== undefined ? x.power_w : x.power_mw !== undefined ? x.power_mw / 1000 : null);
		b.replaceChildren(
			h('table', { 'data-testid': 'gpus' }, h('thead', {}, h('tr', {}, ['GPU', 'name', 'util', 'memory', 'temp', 'power', 'SM clock', 'throttle', 'util over time'].map((c) => h('th', {}, c)))),
				h('tbody', {}, d.devices.map((g) => {
					const s = (d.samples || []).filter((x) => x.index === g.index);
					const l = g.latest || s[s.length - 1] || {};
					const w = watt(l);
					return h('tr', { dataset: { index: g.index } }, h('td', { class: 'num' }, g.index), h('td', {}, g.name || g.uuid || '–'),
						h('td', { class: 'num' }, l.util !== undefined ? l.util + ' %' : '–'),
						h('td', { class: 'num' }, fmtBytes(l.mem_used) + (g.memory_total ? ' of ' + fmtBytes(g.memory_total) : '')),
						h('td', { class: 'num' }, l.temp_c !== undefined ? l.temp_c + ' °C' : '–'), h('td', { class: 'num' }, w !== null ? Math.round(w) + ' W' : '–'),
						h('td', { class: 'num' }, l.sm_mhz ? l.sm_mhz + ' MHz' : '–'),
						h('td', { class: l.throttle_reasons ? 'bad' : '' }, l.throttle_reasons ? '0x' + Number(l.throttle_reasons).toString(16) : 'none'),
						h('td', { class: 'spark-cell' }, sparkline([s.map((x) => x.util), s.map((x) => x.temp_c)], { log: false, cls: ['p50', 'p99'] })));
				}))),
			h('p', { class: 'legend' }, h('span', { class: 'k p50' }, 'utilisation'), h('span', { class: 'k p99' }, 'temperature')),
			(d.xid || []).length ? h('ul', { class: 'bad' }, d.xid.map((x) => h('li', {}, `${fmtTime(x.t_ns)} GPU ${x.index}: Xid ${x.code} ${x.text || ''}`))) : null);
		return true;
	});
	add('NCCL ranks', 'nccl', 'nccl/ranks', (b, d) => {
		const ranks = d.ranks || [];
		if (!ranks.length) return false;
		b.replaceChildren(h('table', { 'data-testid': 'ranks' }, h('thead', {}, h('tr', {}, ['rank', 'node', 'pid', 'collectives', 'late', 'lag', 'last seq', 'state'].map((c) => h('th', {}, c)))),
			h('tbody', {}, ranks.map((r) => h('tr', { class: r.straggler || r.missing ? 'bad' : '', dataset: { rank: r.rank } },
				h('td', { class: 'num' }, r.rank), h('td', {}, r.node), h('td', { class: 'num' }, r.pid), h('td', { class: 'num' }, fmtCount(r.collectives)),
				h('td', { class: 'num' }, fmtCount(r.late)), h('td', { class: 'num' }, fmtNs(r.lag_ns)), h('td', { class: 'num' }, r.last_seq),
				h('td', {}, r.missing ? 'missing' : r.straggler ? 'straggler' : 'ok'))))));
		return true;
	});
	add('Tenants', 'tenants', 'tenants', (b, d) => {
		// A cgroup that ran nothing traced (the root, a system slice) is
		// not a tenant worth a row.
		const ts = (d.tenants || []).filter((t) => t.calls || t.offcpu_ns || t.chains || t.culprit_of);
		if (!ts.length) return false;
		b.replaceChildren(h('table', { 'data-testid': 'tenants' }, h('thead', {}, h('tr', {}, ['runtime', 'container / pod', 'namespace', 'calls', 'off-CPU', 'chains', 'culprit of'].map((c) => h('th', {}, c)))),
			h('tbody', {}, ts.map((t) => h('tr', {}, h('td', {}, t.runtime || '–'), h('td', { class: 'cmd' }, t.pod || t.container_id || t.cgroup || '–'), h('td', {}, t.namespace || '–'),
				h('td', { class: 'num' }, fmtCount(t.calls)), h('td', { class: 'num' }, fmtNs(t.offcpu_ns)), h('td', { class: 'num' }, fmtCount(t.chains)),
				h('td', { class: t.culprit_of ? 'num bad' : 'num' }, t.culprit_of !== undefined ? fmtCount(t.culprit_of) + ' chain(s)' : '–'))))));
		return true;
	});
}

// ---- chains -------------------------------------------------------------------

function pyText(py) {
	return py ? `${py.file}:${py.line}${py.function ? ' in ' + py.function + '()' : ''}` : null;
}

function chainCard(c, i) {
	const who = [
		c.comm ? `${c.comm}` : null,
		c.pid !== null && c.pid !== undefined ? `pid ${c.pid}` : null,
		c.tid !== null && c.tid !== undefined ? `tid ${c.tid}` : null,
		c.rank !== null && c.rank !== undefined ? `rank ${c.rank}` : null,
		c.node ? `node ${c.node}` : null,
		c.container ? `container ${c.container.pod || c.container.id || c.container.cgroup}` : null,
	].filter(Boolean).join(' · ');
	const share = Math.max(0, Math.min(1, c.explained_share || 0));
	// chain=INDEX indexes the unfiltered /chains list, so with a pid filter
	// the link names the chain's thread and span instead.
	const tw = c.timeline_window;
	const tlLink = state.p.pid && tw && tw.tid
		? link('timeline', { tid: tw.tid, from: tw.from_ns, to: tw.to_ns })
		: link('timeline', { ...win(), chain: i });
	const card = h('article', { class: 'chain', id: 'chain-' + i, tabindex: '0', dataset: { index: i, kind: c.root_cause.kind } },
		h('header', {},
			sevBadge(c.severity),
			h('span', { class: 'kind' }, c.root_cause.kind.replace(/_/g, ' ')),
			h('a', { class: 'op', href: link('op', { ...win(), op: c.op, source: c.source }) }, c.op),
			h('span', { class: 'who' }, who)),
		h('p', { class: 'summary' }, c.root_cause.summary),
		h('div', { class: 'share', title: `explained ${fmtPct(share, 1)} of ${fmtNs(c.slow_time_ns)} slow time` },
			h('div', { class: 'bar' }, h('div', { class: 'fill', style: `width:${(share * 100).toFixed(1)}%` })),
			h('span', {}, `${fmtPct(share, 1)} of ${fmtNs(c.slow_time_ns)} slow time explained · p50 ${fmtNs(c.p50_ns)} · p99 ${fmtNs(c.p99_ns)} (${c.tail_ratio}x) · ${fmtCount(c.slow_count)} slow of ${fmtCount(c.count)} calls`)),
		c.python ? h('p', { class: 'python' }, h('span', { class: 'label' }, 'Python '), h('code', { class: 'pyline' }, pyText(c.python))) : null,
		c.culprit ? h('p', { class: 'culprit' }, h('span', { class: 'label' }, 'Culprit '), `${c.culprit.comm} (pid ${c.culprit.pid}${c.culprit.cpu !== null && c.culprit.cpu !== undefined ? ', cpu ' + c.culprit.cpu : ''}) overlapping ${fmtNs(c.culprit.overlap_ns)}${c.culprit.container && c.culprit.container.cgroup ? ' · ' + c.culprit.container.cgroup : ''}`) : null,
		h('div', { class: 'cols' },
			h('div', {}, h('h3', {}, 'Timeline by layer'),
				h('table', { class: 'layers' }, h('tbody', {}, (c.timeline || []).map((t) => h('tr', {}, h('td', {}, h('span', { class: 'layer layer-' + t.layer.toLowerCase() }, t.layer)), h('td', { class: 'num' }, fmtTime(t.t_ns)), h('td', {}, t.text)))))),
			h('div', {}, h('h3', {}, 'Fix'),
				(c.fix || []).length ? h('ul', { class: 'fix' }, c.fix.map((f) => h('li', {}, h('code', {}, f), copyButton(f)))) : h('p', { class: 'muted' }, 'No command suggested.'))),
		(c.stack || []).length ? h('details', { class: 'stack' }, h('summary', {}, `Stack (${c.stack.length} frames, innermost first)`),
			h('ol', {}, c.stack.map((f) => h('li', { class: f.kind }, f.kind === 'py' ? pyText(f) : f.frame)))) : null,
		h('footer', {},
			h('a', { class: 'button open-timeline', href: tlLink }, 'Open timeline'),
			h('a', { class: 'button', href: link('op', { ...win(), op: c.op, source: c.source }) }, 'Op detail')));
	card.addEventListener('keydown', (ev) => {
		if (ev.key === 'Enter' && ev.target === card) location.hash = tlLink;
	});
	return card;
}

async function viewChains(root) {
	const [ov, ch] = await Promise.all([loadOverview(), loadChains()]);
	if (isEmpty(ov)) {
		root.append(emptyMessage());
		return;
	}
	const kinds = [...new Set(ch.chains.map((c) => c.root_cause.kind))];
	const sevSel = h('select', { 'aria-label': 'severity' }, ['', 'HIGH', 'MEDIUM', 'LOW'].map((s) => h('option', { value: s, selected: state.p.sev === s }, s || 'any severity')));
	const kindSel = h('select', { 'aria-label': 'kind' }, ['', ...kinds].map((k) => h('option', { value: k, selected: state.p.kind === k }, k || 'any kind')));
	const setF = () => (location.hash = link('chains', { ...state.p, sev: sevSel.value, kind: kindSel.value, chain: null }));
	sevSel.addEventListener('change', setF);
	kindSel.addEventListener('change', setF);
	const tools = h('div', { class: 'toolbar' },
		h('span', {}, `${ch.chains.length} chain(s) · ${fmtCount(ch.window.calls_analysed)} calls over ${ch.window.ops_analysed} ops · ${ch.window.from} – ${ch.window.to}`),
		sevSel, kindSel,
		h('button', { type: 'button', onclick: () => download('causeway-chains.json', new Blob([JSON.stringify(ch, null, 2)], { type: 'application/json' })) }, 'Export chains JSON'));
	root.append(tools);
	for (const w of ch.warnings || []) root.append(h('p', { class: 'warning', role: 'note' }, w));
	if (!ch.chains.length) {
		root.append(h('section', { class: 'message ok', 'data-kind': 'healthy' }, h('h2', {}, 'Nothing to explain'), h('p', {}, `No op in this window has a tail that a rule explains (${fmtCount(ch.window.calls_analysed)} calls analysed).`)));
		return;
	}
	const list = h('div', { class: 'chains' });
	ch.chains.forEach((c, i) => {
		if (state.p.sev && c.severity !== state.p.sev) return;
		if (state.p.kind && c.root_cause.kind !== state.p.kind) return;
		list.append(chainCard(c, i));
	});
	root.append(list);
	const want = state.p.chain !== undefined ? document.getElementById('chain-' + state.p.chain) : null;
	if (want) {
		want.classList.add('focus');
		want.scrollIntoView({ block: 'start' });
		want.focus({ preventScroll: true });
	}
}

// ---- timeline -----------------------------------------------------------------

async function viewTimeline(root) {
	const ov = await loadOverview();
	if (isEmpty(ov)) {
		root.append(emptyMessage());
		return;
	}
	const p = state.p;
	let params;
	let chain = null;
	if (p.chain !== undefined) {
		params = { chain: p.chain, ...winParams() };
		const ch = await loadChains();
		chain = ch.chains[+p.chain] || null;
	} else if (p.tid || p.pid) {
		let [f, t] = p.from && p.to ? [+p.from, +p.to] : winNs();
		params = { tid: p.tid, pid: p.tid ? undefined : p.pid, from: tparam(f), to: tparam(t) };
	} else {
		// No thread chosen: the first chain's, or a list of threads to pick.
		const ch = await loadChains();
		if (ch.chains.length) {
			location.replace(link('timeline', { ...win(), chain: 0 }));
			return;
		}
		root.append(h('section', { class: 'message' }, h('h2', {}, 'Choose a thread'), h('p', {}, 'Open a timeline from a chain, from a slow call in Op detail, or add tid=N to the address (#/timeline?tid=N).')));
		return;
	}
	params.limit = p.limit || 50000;
	state.lastTimeline = Object.fromEntries(Object.entries({ chain: p.chain, tid: p.tid, pid: p.pid, from: p.from, to: p.to }).filter(([, v]) => v !== undefined));
	const t0 = performance.now();
	const data = await api.get('timeline', params, { timeoutMs: 60000 });
	// A window with more intervals than one answer holds comes in pages
	// (the cursor in "next"); up to 200,000 intervals are fetched on.
	for (let n = data.lanes.reduce((a, l) => a + l.intervals.length, 0); data.next && n < 200000;) {
		const more = await api.get('timeline', { ...params, after: data.next }, { timeoutMs: 60000 });
		for (const l of more.lanes) {
			const same = data.lanes.find((x) => x.lane === l.lane && x.tid === l.tid && x.pid === l.pid);
			if (same) same.intervals.push(...l.intervals);
			else data.lanes.push(l);
			n += l.intervals.length;
		}
		data.next = more.next;
		data.truncated = more.truncated;
	}
	const loadMs = performance.now() - t0;
	const head = h('div', { class: 'toolbar' });
	const info = h('div', { class: 'tl-info', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Hover an interval for its details; click to select it. Keys: + / − zoom, ← / → pan, ↑ / ↓ step through intervals, 0 resets.'));
	const wrap = h('div', { class: 'tl-wrap', 'data-testid': 'timeline' });
	const count = data.lanes.reduce((a, l) => a + l.intervals.length, 0);
	const threads = (data.threads || []).map((t) => `${t.comm} ${t.tid}${t.rank !== null && t.rank !== undefined ? ' (rank ' + t.rank + ')' : ''}`).join(', ');
	const range = h('span', { class: 'range' });
	const setRange = (a, b) => (range.textContent = `${fmtTime(a, true)} – ${fmtTime(b)} (${fmtNs(b - a)})`);
	setRange(data.from_ns, data.to_ns);
	head.append(
		h('span', {}, chain ? h('span', {}, sevBadge(chain.severity), ' ', h('a', { href: link('chains', { ...win(), chain: p.chain }) }, chain.root_cause.kind.replace(/_/g, ' ') + ' on ' + chain.op), ' · ') : null,
			`${threads || 'no thread'} · ${fmtCount(count)} intervals`, data.truncated ? h('strong', { class: 'bad' }, ' (truncated: narrow the window)') : null),
		h('span', { class: 'spacer' }),
		h('button', { type: 'button', onclick: () => state.timeline && state.timeline.zoom(0.5), title: 'zoom in (+)' }, '+'),
		h('button', { type: 'button', onclick: () => state.timeline && state.timeline.zoom(2), title: 'zoom out (−)' }, '−'),
		h('button', { type: 'button', onclick: () => state.timeline && state.timeline.reset(), title: 'reset (0)' }, 'Reset'),
		h('button', { type: 'button', onclick: () => exportPerfetto(state.timeline ? state.timeline.from + state.timeline.v0 : data.from_ns, state.timeline ? state.timeline.from + state.timeline.v1 : data.to_ns, (data.threads[0] || {}).pid) }, 'Export Perfetto'));
	const legend = h('div', { class: 'legend tl-legend' }, COLOUR_KEYS.map((k) => h('span', { class: 'k tl-' + k }, k.replace('off-', 'off-CPU ').replace('-', ' '))), h('span', { class: 'spacer' }), range);
	root.append(head, legend, wrap, info);
	if (!count) {
		wrap.append(h('p', { class: 'muted' }, 'No interval for this thread in this window.'));
		return;
	}
	state.timeline = new Timeline(wrap, data, {
		onSelect: (row, iv, lines) => {
			if (!iv) return;
			info.replaceChildren(h('h3', {}, lines[0]), h('ul', {}, lines.slice(1).map((l) => h('li', {}, l))),
				row.lane === 'cuda' && iv.op ? h('a', { href: link('op', { ...win(), op: iv.op, source: 'cuda' }) }, `${iv.op} detail`) : null);
		},
	});
	state.timeline.onView = setRange;
	wrap.dataset.loadMs = String(Math.round(loadMs));
	wrap.dataset.count = String(count);
}

async function exportPerfetto(from, to, pid) {
	try {
		const res = await api.raw('export/perfetto', { from: tparam(from), to: tparam(to), pid });
		download('causeway-' + Math.floor(from / 1e9) + '.perfetto-trace', await res.blob());
		status('Perfetto trace downloaded: open it in ui.perfetto.dev.', 'ok');
	} catch (e) {
		status(explainError(e).text, 'bad');
	}
}

// ---- op detail ----------------------------------------------------------------

async function viewOp(root) {
	const ov = await loadOverview();
	if (isEmpty(ov)) {
		root.append(emptyMessage());
		return;
	}
	let { op, source } = state.p;
	if (!op) {
		const ops = (await api.get('ops', state.p.since ? { since: state.p.since } : {})).ops;
		if (!ops.length) {
			root.append(h('p', { class: 'muted' }, 'No call in this window.'));
			return;
		}
		ops.sort((a, b) => b.total_ns - a.total_ns);
		location.replace(link('op', { ...win(), op: ops[0].op, source: ops[0].source }));
		return;
	}
	state.lastOp = { op, source };
	const d = await api.get('ops/detail', { op, source, ...winParams(), limit: 20 });
	root.append(h('div', { class: 'toolbar' }, h('h2', {}, `${d.op}`, h('span', { class: 'muted' }, ` (${d.source})`)),
		h('span', {}, `${fmtCount(d.count)} calls · p50 ${fmtNs(d.p50_ns)} · p99 ${fmtNs(d.p99_ns)} · max ${fmtNs(d.max_ns)}`)));
	const grid = h('div', { class: 'grid two' });
	root.append(grid);
	grid.append(panel('Latency histogram', 'hist', (b) => b.replaceChildren(histogram(d.histogram || [], [['p50', d.p50_ns], ['p99', d.p99_ns]]))));
	grid.append(panel(`Slowest ${(d.slowest || []).length} calls`, 'slowest', (b) => {
		if (!(d.slowest || []).length) {
			b.replaceChildren(h('p', { class: 'muted' }, 'No call stored for this op in this window.'));
			return;
		}
		b.replaceChildren(h('table', { class: 'slowest', 'data-testid': 'slowest' },
			h('thead', {}, h('tr', {}, ['when', 'duration', 'thread', 'rank', 'Python line', ''].map((c) => h('th', {}, c)))),
			h('tbody', {}, d.slowest.map((s) => {
				const pad = Math.max(s.duration_ns * 2, 5e6);
				return h('tr', { class: s.error ? 'bad' : '' },
					h('td', {}, fmtTime(s.start_ns)), h('td', { class: 'num' }, fmtNs(s.duration_ns)), h('td', { class: 'nowrap' }, `${s.comm || ''} ${s.tid}`),
					h('td', { class: 'num' }, s.rank ?? '–'), h('td', {}, s.python ? h('code', {}, pyText(s.python)) : '–'),
					h('td', {}, h('a', { href: link('timeline', { tid: s.tid, from: Math.round(s.start_ns - pad), to: Math.round(s.start_ns + s.duration_ns + pad) }) }, 'timeline')));
			}))));
	}));
}

function histogram(bins, marks = []) {
	if (!bins.length) return h('p', { class: 'muted' }, 'No call.');
	const w = 560;
	const hh = 180;
	const ml = 52; // the calls axis
	const max = Math.max(...bins.map((b) => b.count));
	// Buckets sit on a log-latency axis, so empty ranges show as gaps.
	const lo = Math.log10(Math.max(1, bins[0].lo_ns));
	const hi = Math.log10(Math.max(bins[bins.length - 1].hi_ns, bins[0].lo_ns + 1));
	const x = (ns) => ((Math.log10(Math.max(1, ns)) - lo) / (hi - lo || 1)) * (w - ml - 10) + ml + 5;
	// Square-root heights: the rare slow buckets stay visible next to a
	// bucket holding most calls.
	const y = (n) => hh - (n ? Math.max(2, (Math.sqrt(n) / Math.sqrt(max)) * (hh - 14)) : 0);
	const svg = h('svg:svg', { class: 'hist', viewBox: `0 0 ${w} ${hh + 40}`, role: 'img', 'aria-label': 'latency histogram: calls per latency bucket' });
	svg.append(h('svg:line', { x1: ml, x2: w, y1: hh + 0.5, y2: hh + 0.5, class: 'grid axis-line' }),
		h('svg:line', { x1: ml + 0.5, x2: ml + 0.5, y1: 0, y2: hh, class: 'grid axis-line' }));
	bins.forEach((b) => {
		const x0 = x(b.lo_ns);
		const bw = Math.max(2, x(b.hi_ns) - x0 - 1);
		const r = h('svg:rect', { x: x0, y: y(b.count), width: bw, height: hh - y(b.count), class: 'bar' });
		r.append(h('svg:title', {}, `${fmtNs(b.lo_ns)} – ${fmtNs(b.hi_ns)}: ${fmtCount(b.count)} calls`));
		svg.append(r, h('svg:text', { x: x0 + bw / 2, y: y(b.count) - 3, class: 'tick', 'text-anchor': 'middle' }, fmtCount(b.count)));
	});
	// Latency ticks at both ends and each power of ten between them, at
	// least 48 units apart, labelled with their unit.
	const xt = [];
	const cand = [bins[0].lo_ns, bins[bins.length - 1].hi_ns];
	for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) cand.push(10 ** e);
	for (const v of cand.sort((a, b2) => a - b2)) if (!xt.length || x(v) - x(xt[xt.length - 1]) >= 48) xt.push(v);
	for (const v of xt) {
		const xv = x(v);
		svg.append(h('svg:line', { x1: xv, x2: xv, y1: hh, y2: hh + 4, class: 'grid' }),
			h('svg:text', { x: xv, y: hh + 15, class: 'tick x-tick', 'text-anchor': xv < ml + 20 ? 'start' : xv > w - 20 ? 'end' : 'middle', dataset: { v } }, fmtNs(v)));
	}
	// Calls: 0, a quarter, the largest bucket (on the square-root scale).
	for (const v of [...new Set([0, Math.round(max / 4), max])]) {
		svg.append(h('svg:line', { x1: ml - 4, x2: ml, y1: y(v), y2: y(v), class: 'grid' }),
			h('svg:text', { x: ml - 6, y: y(v) + 4, class: 'tick y-tick', 'text-anchor': 'end', dataset: { v } }, fmtCount(v)));
	}
	svg.append(h('svg:text', { x: ml + (w - ml) / 2, y: hh + 34, class: 'axis-title x-title', 'text-anchor': 'middle' }, 'latency per call (log scale)'),
		h('svg:text', { x: 10, y: hh / 2, class: 'axis-title y-title', 'text-anchor': 'middle', transform: `rotate(-90 10 ${hh / 2})` }, 'calls (√ scale)'));
	for (const [name, v] of marks) if (v) svg.append(h('svg:line', { x1: x(v), x2: x(v), y1: 0, y2: hh, class: 'mark ' + name }));
	return h('div', {}, svg,
		h('p', { class: 'legend' }, marks.filter(([, v]) => v).map(([name, v]) => h('span', { class: 'k dash ' + name }, `${name} ${fmtNs(v)}`))), h('p', { class: 'muted' }, 'calls per latency bucket; hover a bar for its range'));
}

// ---- fleet --------------------------------------------------------------------

async function viewFleet(root) {
	const f = await api.get('fleet');
	state.fleet = f;
	if (!f.configured) {
		root.append(h('section', { class: 'message' }, h('h2', {}, 'No fleet configured'), h('p', {}, 'This node has no fleet.nodes in its configuration, so there is nothing to fan out to (docs/fleet.md).')));
		return;
	}
	// One banner per node that did not answer (its own words), then the
	// warnings about nothing such a banner already says.
	const down = f.nodes.filter((n) => n.status !== 'ok');
	for (const n of down)
		root.append(h('p', { class: 'warning node-down', role: 'note', dataset: { node: n.node } },
			`${n.node === n.address ? n.node : `${n.node} (${n.address})`} ${n.status === 'unreachable' ? 'did not answer' : 'answered with an error'}: ${n.error || 'no answer'}`));
	const about = (w) => down.some((n) => w.includes(`"${n.address}"`) || w.includes(`"${n.node}"`));
	for (const w of new Set(f.warnings || [])) if (!about(w)) root.append(h('p', { class: 'warning', role: 'note' }, w));
	if (f.straggler) root.append(h('p', { class: 'warning' }, `Straggler: rank ${f.straggler.rank} on ${f.straggler.node}, ${fmtNs(f.straggler.lag_ns)} behind.`));
	root.append(panel(`${f.nodes.length} nodes`, 'fleet wide', (b) => b.replaceChildren(h('table', { class: 'fleet-table' },
		h('thead', {}, h('tr', {}, ['node', 'address', 'status', 'clock offset', 'RTT', 'chains', 'top chain'].map((c) => h('th', {}, c)))),
		h('tbody', {}, f.nodes.map((n) => h('tr', { class: n.status === 'ok' ? '' : 'bad', dataset: { node: n.node } },
			h('td', { class: 'nowrap' }, n.node), h('td', { class: 'cmd nowrap' }, n.address), h('td', {}, n.status + (n.error ? ': ' + n.error : '')),
			h('td', { class: 'num' }, n.clock_offset_ns === null ? '–' : fmtNs(n.clock_offset_ns)), h('td', { class: 'num' }, n.rtt_ns === null ? '–' : fmtNs(n.rtt_ns)),
			h('td', { class: 'num' }, n.chains ?? '–'),
			h('td', {}, n.top_chain ? h('span', {}, sevBadge(n.top_chain.severity), ' ', n.top_chain.summary) : '–'))))))));
}

// ---- requests -----------------------------------------------------------------

// Milliseconds from the API as the page prints every duration.
const fmtMs = (ms) => (ms === null || ms === undefined ? '–' : fmtNs(ms * 1e6));

// The inference requests of a traced server (trace --inference): per-route
// percentiles, then the slowest (or newest) requests, each linked to its
// thread's timeline at its time. Method and path come from the network:
// they reach the page only as text nodes (h()), never as markup.
async function viewRequests(root) {
	await loadOverview();
	const p = state.p;
	const order = p.order === 'recent' ? 'recent' : 'slowest';
	const d = await api.get('requests', { ...winParams(), order, status: p.status, path: p.path, min_duration: p.min_duration, limit: p.limit || 100 });
	state.requests = d;
	const set = (k, v) => (location.hash = link('requests', { ...state.p, [k]: v || null }));
	const orderSel = h('select', { 'aria-label': 'order', 'data-testid': 'req-order' },
		h('option', { value: 'slowest', selected: order === 'slowest' }, 'slowest first'),
		h('option', { value: 'recent', selected: order === 'recent' }, 'most recent first'));
	orderSel.addEventListener('change', () => set('order', orderSel.value === 'slowest' ? '' : orderSel.value));
	const statusSel = h('select', { 'aria-label': 'status class', 'data-testid': 'req-status' },
		['', '2xx', '3xx', '4xx', '5xx', 'none'].map((v) => h('option', { value: v, selected: (p.status || '') === v }, v ? (v === 'none' ? 'no status' : 'status ' + v) : 'any status')));
	statusSel.addEventListener('change', () => set('status', statusSel.value));
	const total = d.routes.reduce((a, r) => a + r.count, 0);
	root.append(h('div', { class: 'toolbar' }, h('h2', {}, 'Requests'),
		h('span', {}, `${fmtCount(total)} requests over ${d.routes.length} route(s) · ` + (d.from_ns && d.to_ns ? `${fmtTime(d.from_ns, true)} – ${fmtTime(d.to_ns)}` : 'whole database')),
		p.path ? h('span', { class: 'filter' }, 'path ', h('code', {}, p.path), ' ', h('a', { href: link('requests', { ...p, path: null }) }, '(all)')) : null,
		orderSel, statusSel));
	if (!d.requests_table || !total) {
		root.append(h('section', { class: 'message', role: 'status', 'data-kind': 'no-requests' },
			h('h2', {}, d.requests_table ? 'No inference request in this window' : 'No requests table in this database'),
			h('p', {}, 'Requests are recorded by ', h('code', {}, 'causeway trace --inference PORT'), ' (HTTP served on PORT by the traced process).')));
		return;
	}
	if (d.summary_truncated) root.append(h('p', { class: 'warning', role: 'note' }, 'The summary read its row limit: narrow the window for exact counts.'));
	root.append(panel('Routes', 'routes wide', (b) => b.replaceChildren(h('table', { class: 'routes-table', 'data-testid': 'routes' },
		h('thead', {}, h('tr', {}, ['method', 'path', 'requests', 'errors', 'p50', 'p95', 'p99', 'TTFT p50', 'TTFT p99'].map((c, i) => h('th', { class: i > 1 ? 'num' : '' }, c)))),
		h('tbody', {}, d.routes.map((r) => h('tr', { class: r.errors ? 'bad' : '', dataset: { path: r.path, method: r.method || '' } },
			h('td', {}, r.method || '*'),
			h('td', {}, r.other ? h('span', { class: 'muted' }, 'other routes') : h('a', { href: link('requests', { ...p, path: r.path }) }, r.path)),
			h('td', { class: 'num', 'data-v': r.count }, fmtCount(r.count)),
			h('td', { class: 'num', 'data-v': r.errors, title: `${r.client_errors} client errors (4xx)` }, fmtCount(r.errors)),
			[r.p50_ms, r.p95_ms, r.p99_ms, r.ttft_p50_ms, r.ttft_p99_ms].map((v) => h('td', { class: 'num', 'data-v': v ?? '' }, fmtMs(v))))))))));
	const title = `${order === 'recent' ? 'Most recent' : 'Slowest'} ${d.requests.length} of ${fmtCount(d.matched)} requests`;
	root.append(panel(title, 'requests wide', (b) => {
		if (!d.requests.length) {
			b.replaceChildren(h('p', { class: 'muted' }, 'No request matches these filters.'));
			return;
		}
		b.replaceChildren(h('table', { class: 'slowest req-table', 'data-testid': 'requests' },
			h('thead', {}, h('tr', {}, ['when', 'method', 'path', 'status', 'duration', 'TTFT', 'streamed', 'bytes in / out', 'thread', 'container', ''].map((c) => h('th', {}, c)))),
			h('tbody', {}, d.requests.map((q) => {
				const pad = Math.max(q.duration_ns * 0.2, 5e6);
				const tid = q.resp_tid || q.tid;
				const bad = q.status === null || q.status >= 500;
				return h('tr', { class: bad ? 'bad' : '', dataset: { id: q.id } },
					h('td', { class: 'nowrap', title: q.wall }, fmtTime(q.wall_ns, true)),
					h('td', {}, q.method ?? '?'),
					h('td', { class: 'path' }, h('code', {}, q.path ?? '?')),
					h('td', { class: 'num' }, q.status ?? (q.end_reason || '–')),
					h('td', { class: 'num', 'data-v': q.duration_ms }, fmtMs(q.duration_ms)),
					h('td', { class: 'num' }, fmtMs(q.ttft_ms)),
					h('td', {}, q.streamed ? 'yes' : 'no'),
					h('td', { class: 'num' }, `${fmtBytes(q.bytes_in)} / ${fmtBytes(q.bytes_out)}`),
					h('td', { class: 'nowrap' }, `${q.comm || ''} ${tid}`),
					h('td', { class: 'container' }, q.container ?? '–'),
					h('td', {}, h('a', { class: 'open-timeline', href: link('timeline', { tid, from: Math.round(q.wall_ns - pad), to: Math.round(q.wall_ns + q.duration_ns + pad) }) }, 'timeline')));
			}))));
		if (d.truncated) b.append(h('p', { class: 'muted' }, `${fmtCount(d.matched - d.requests.length)} more match; narrow the window or raise limit= in the address.`));
	}));
}

// ---- router, polling, keys ----------------------------------------------------

const RENDER = { overview: viewOverview, chains: viewChains, timeline: viewTimeline, op: viewOp, fleet: viewFleet, requests: viewRequests };

export async function route() {
	parseHash();
	const gen = ++state.gen;
	if (state.timeline) {
		state.timeline.destroy();
		state.timeline = null;
	}
	renderNav();
	const root = clear($('main'));
	root.dataset.view = state.view;
	root.setAttribute('aria-busy', 'true');
	status('');
	try {
		await RENDER[state.view](root);
	} catch (e) {
		if (gen !== state.gen) return;
		root.append(errorPanel(e, state.view));
		if (!(e instanceof ApiError)) console.error(e);
	} finally {
		if (gen === state.gen) {
			root.setAttribute('aria-busy', 'false');
			root.dataset.ready = String(gen);
			renderNav();
			schedulePoll();
		}
	}
}

// While the overview says live (trace --serve), the overview and the chains
// refresh in place when /api/v1/stream says rows were added (a tick a
// second); other views keep what they show. Polling every two seconds is
// the fallback while the stream cannot be read (tried again every 30 s).
function setLive(mode) {
	const l = state.live;
	const el = $('live');
	l.mode = mode;
	el.dataset.mode = mode;
	el.textContent = mode === 'polling' ? 'live (polling)' : 'live';
	el.title = mode === 'polling' ? 'trace --serve: the update stream failed; refreshing every 2 s'
		: 'trace --serve: updated as rows are stored (/api/v1/stream)';
}

function startLive() {
	const l = state.live;
	if (l.ctl || l.mode === 'polling') return;
	const ctl = new AbortController();
	l.ctl = ctl;
	setLive('stream');
	api.stream('stream', ctl.signal, onTick).then((n) => {
		if (ctl.signal.aborted) return;
		l.ctl = null;
		// The server ends each stream after a while: open the next one,
		// unless it ended without a tick (then it is not streaming).
		if (n) startLive();
		else streamFailed();
	}, () => {
		if (ctl.signal.aborted) return;
		l.ctl = null;
		streamFailed();
	});
}

function streamFailed() {
	const l = state.live;
	setLive('polling');
	schedulePoll();
	clearTimeout(l.retry);
	l.retry = setTimeout(() => {
		if (l.mode !== 'polling') return;
		l.mode = '';
		startLive();
	}, STREAM_RETRY_MS);
}

function stopLive() {
	const l = state.live;
	if (l.ctl) l.ctl.abort();
	l.ctl = null;
	l.last = null;
	clearTimeout(l.retry);
	l.mode = '';
}

function onTick(t) {
	const l = state.live;
	const key = `${t.events}/${t.chains}`;
	l.ticks++;
	// A hidden tab keeps what it showed: the first tick after it shows
	// again compares with that.
	if (document.hidden) return;
	if (l.last !== null && key !== l.last) refresh('stream');
	l.last = key;
}

// Re-renders the view in place (scroll kept); a change arriving during a
// refresh is picked up by one more refresh after it.
async function refresh(by) {
	const l = state.live;
	if (document.hidden || !['overview', 'chains'].includes(state.view)) return;
	if (l.busy) {
		l.again = true;
		return;
	}
	l.busy = true;
	try {
		do {
			l.again = false;
			const y = window.scrollY;
			await route();
			state.updatedBy = by;
			window.scrollTo(0, y);
		} while (l.again);
	} finally {
		l.busy = false;
	}
}

function schedulePoll() {
	clearTimeout(state.poll);
	if (state.live.mode !== 'polling' || !(state.overview && state.overview.live) || !['overview', 'chains'].includes(state.view)) return;
	state.poll = setTimeout(async () => {
		if (document.hidden) return schedulePoll();
		await refresh('poll');
	}, POLL_MS);
}

function onKey(ev) {
	if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
	const tag = (ev.target.tagName || '').toLowerCase();
	if (tag === 'input' || tag === 'select' || tag === 'textarea') return;
	const v = VIEWS.find((x) => x.key === ev.key);
	if (v) {
		const a = [...document.querySelectorAll('#nav a')].find((x) => x.textContent === v.title);
		location.hash = a ? a.getAttribute('href') : link(v.id, win());
	} else if (ev.key === 't') setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
	else if (ev.key === 'r') route();
	else if (ev.key === '?') $('help').hidden = !$('help').hidden;
	else if (ev.key === 'Escape') $('help').hidden = true;
	else if ((ev.key === 'j' || ev.key === 'k') && state.view === 'chains') {
		const cards = [...document.querySelectorAll('.chain')];
		if (!cards.length) return;
		const cur = cards.indexOf(document.activeElement);
		const next = cards[Math.max(0, Math.min(cards.length - 1, cur + (ev.key === 'j' ? 1 : -1)))] || cards[0];
		next.focus();
	} else if (state.timeline && ['+', '=', '-', '_', 'ArrowLeft', 'ArrowRight', '0'].includes(ev.key) && state.view === 'timeline') {
		state.timeline.canvas.dispatchEvent(new KeyboardEvent('keydown', { key: ev.key }));
	} else return;
	ev.preventDefault();
}

async function start() {
	const saved = localStorage.getItem('causeway.theme');
	setTheme(saved || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
	$('theme').addEventListener('click', () => setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
	$('helpbtn').addEventListener('click', () => ($('help').hidden = !$('help').hidden));
	$('window').addEventListener('change', (ev) => {
		const v = ev.target.value;
		if (v === 'custom') return;
		const p = { ...state.p, since: v || null, from: null, to: null };
		location.hash = link(state.view, p);
	});
	document.addEventListener('keydown', onKey);
	window.addEventListener('hashchange', route);
	// The fleet tab shows only when fleet nodes are configured; a server
	// without the route is simply a single node.
	api.get('fleet').then((f) => {
		state.fleet = f;
		renderNav();
	}, () => {});
	await route();
}

start();
