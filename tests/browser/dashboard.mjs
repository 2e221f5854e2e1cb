// The dashboard in the distribution's headless Chromium, against real
// `causeway serve` processes on demo databases. Run by
// tests/integration/test_dashboard.sh, which makes the databases and
// certificates under $CW_DASH_DIR. Every page is checked for console errors
// and for requests that leave its origin; screenshots go to $CW_SHOTS.
import { readFileSync, writeFileSync, copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { serve, cli, browser, open, go, hash, ready, navigate, token } from './lib.mjs';

const D = process.env.CW_DASH_DIR;
const SHOTS = process.env.CW_SHOTS;
mkdirSync(SHOTS, { recursive: true });
let failed = 0;
let passed = 0;
const servers = [];
const pages = [];

const T0 = Date.now();
function check(cond, what, detail) {
	what = `[${((Date.now() - T0) / 1000).toFixed(1)}s] ` + what;
	if (cond) {
		passed++;
		console.log('ok - ' + what);
	} else {
		failed++;
		console.log('not ok - ' + what + (detail !== undefined ? ': ' + (typeof detail === 'string' ? detail : JSON.stringify(detail)).slice(0, 600) : ''));
	}
}

async function start(node, db, args) {
	const s = await serve(node, db, args);
	servers.push(s);
	return s;
}

async function page(b, origin, opts) {
	const p = await open(b, origin, opts);
	pages.push(p);
	return p;
}

const text = (p, sel) => p.$$eval(sel, (els) => els.map((e) => e.textContent.trim()));
const shot = (p, name, full = false) => p.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: full });

// Wall ns lose their last bits in a JS number: equal within a microsecond.
const near = (a, b) => Math.abs(a - b) < 1000;

const b = await browser();
try {
	// ---- live: trace --serve; the overview refreshes by itself ------------
	if (process.env.CW_LIVE_URL) {
		const live = process.env.CW_LIVE_URL;
		const pl = await page(b, live);
		const asked = [];
		pl.on('request', (r) => asked.push(new URL(r.url()).pathname));
		await go(pl, live + '/#/overview');
		check(await pl.$eval('#live', (e) => !e.hidden), 'live: the header says live on trace --serve');
		const calls = () => pl.evaluate(() => window.__cw.overview.calls);
		await pl.evaluate(() => (window.__sameDocument = 1));
		const c1 = await calls();
		await pl.waitForFunction((c) => window.__cw.overview.calls > c && !document.querySelector('.loading'), { timeout: 15000 }, c1);
		// One evaluate: the number and the page as one poll left them.
		const { c2, shown } = await pl.evaluate(() => ({ c2: window.__cw.overview.calls, shown: [...document.querySelectorAll('.node-panel dd')].map((x) => x.textContent) }));
		check(c2 > c1 && (await pl.evaluate(() => window.__sameDocument)) === 1, 'live: the overview updates without a reload', { c1, c2 });
		check(shown.includes(c2.toLocaleString('en-US')), 'live: the page shows the new call count', { c2, shown });
		const sess = await text(pl, 'ul.sessions li');
		check(sess.length && /live/.test(sess[0]), 'live: the session is marked live', sess);
		// The update came through /api/v1/stream, not a poll, and the
		// header says the stream is live.
		const how = await pl.evaluate(() => ({ by: window.__cw.updatedBy, mode: window.__cw.live.mode, ticks: window.__cw.live.ticks, shown: document.getElementById('live').textContent, dmode: document.getElementById('live').dataset.mode }));
		check(how.by === 'stream' && how.mode === 'stream' && how.ticks > 0 && asked.includes('/api/v1/stream'), 'live: the update arrived through /api/v1/stream', { ...how, streams: asked.filter((x) => /stream/.test(x)).length });
		check(how.shown === 'live' && how.dmode === 'stream', 'live: the indicator says the stream is live', how);
		await shot(pl, 'overview-live-1280x800');
		// A stream that cannot be opened: the page says so and polls.
		const pl2 = await page(b, live);
		pl2.rec.fake = (u) => (/\/api\/v1\/stream/.test(u) ? { status: 500, body: '{"error": "stream refused"}' } : null);
		await go(pl2, live + '/#/overview');
		await pl2.waitForFunction(() => window.__cw.live.mode === 'polling', { timeout: 10000 }).catch(() => {});
		const p1 = await pl2.evaluate(() => window.__cw.overview.calls);
		await pl2.waitForFunction((c) => window.__cw.overview.calls > c && window.__cw.updatedBy, { timeout: 15000 }, p1).catch(() => {});
		const how2 = await pl2.evaluate(() => ({ by: window.__cw.updatedBy, mode: window.__cw.live.mode, shown: document.getElementById('live').textContent, calls: window.__cw.overview.calls }));
		check(how2.mode === 'polling' && how2.shown === 'live (polling)' && how2.by === 'poll' && how2.calls > p1, 'live: a failed stream falls back to polling, and the indicator says so', { ...how2, p1 });
		pl2.rec.errors = pl2.rec.errors.filter((e) => !/status of 500/.test(e));
		// Checked and closed now: the trace ends (and its stream with it)
		// while the rest runs.
		for (const x of [pl, pl2]) {
			check(!x.rec.errors.length && !x.rec.outside.length, `live: no console error or outside request on ${x.url()}`, x.rec);
			pages.splice(pages.indexOf(x), 1);
			await x.close();
		}
	}

	// ---- incident: overview, chains, timeline, op detail --------------------
	const db = `${D}/incident.db`;
	const inc = await start('demo-node', db);
	const explain = cli('explain', '--db', db, '--json', '--no-store');
	const summary = cli('query', '--db', db, '--json');

	// Signing in: without the cookie the page says how; the /?token= link
	// sets it and lands on the dashboard.
	const pin = await page(b, inc.url, { signedIn: false });
	const r401 = await pin.goto(inc.url + '/', { waitUntil: 'domcontentloaded' });
	const t401 = await pin.evaluate(() => document.body.innerText);
	check(r401.status() === 401 && /Bearer token required/.test(t401) && /\?token=/.test(t401), 'unsigned browser: a page saying how to sign in', t401.slice(0, 200));
	await go(pin, `${inc.url}/?token=${token()}`);
	// The refused page load itself is the one console error expected.
	pin.rec.errors = pin.rec.errors.filter((e) => !/status of 401/.test(e));
	check(new URL(pin.url()).search === '' && (await text(pin, '.top-chains li')).length === explain.chains.length, 'sign-in link: the dashboard loads and the token leaves the address bar', pin.url());
	const p = await page(b, inc.url);
	await go(p, inc.url + '/');
	check((await p.evaluate(() => document.getElementById('main').dataset.view)) === 'overview', 'the root opens the overview');
	// The op table: every op of query's summary, same count, p50 and p99.
	const rows = await p.$$eval('table[data-testid=ops] tbody tr', (trs) => trs.map((tr) => ({
		op: tr.dataset.op, source: tr.dataset.source, cells: [...tr.querySelectorAll('td[data-v]')].map((td) => +td.dataset.v),
		spark: !!tr.querySelector('svg.spark path'),
	})));
	check(rows.length === summary.length, 'op table has one row per summary op', { page: rows.length, query: summary.length });
	const bad = summary.filter((o) => {
		const r = rows.find((x) => x.op === o.op && x.source === o.source);
		return !r || r.cells[0] !== o.count || r.cells[1] !== o.p50_ns || r.cells[2] !== o.p99_ns;
	});
	check(!bad.length, 'op table count/p50/p99 equal query --json', bad);
	check(rows.filter((r) => r.spark).length >= 3, 'top ops carry p50/p99 sparklines', rows.filter((r) => r.spark).length);
	const top = await text(p, '.top-chains li');
	check(top.length === explain.chains.length && top[0].includes(explain.chains[0].root_cause.summary), 'overview lists the chains of explain --json', top);
	const health = await text(p, '.health .body');
	check(/No record dropped or lost/.test(health[0]), 'capture health says nothing was lost', health[0]);
	check((await p.$$('.host svg.chart path')).length === 3, 'host chart draws CPU, memory and IO');
	await shot(p, 'overview-1280x800');

	// Chains: text, Python line, fix commands equal explain --json.
	await navigate(p, () => p.keyboard.press('2'));
	check(await p.evaluate(() => location.hash.startsWith('#/chains')), 'key 2 opens the chains');
	const cards = await p.$$eval('article.chain', (as) => as.map((a) => ({
		summary: a.querySelector('.summary').textContent, py: (a.querySelector('.pyline') || {}).textContent || null,
		fix: [...a.querySelectorAll('ul.fix code')].map((c) => c.textContent), kind: a.dataset.kind,
		share: a.querySelector('.share span').textContent,
	})));
	check(cards.length === explain.chains.length, 'one card per chain', { page: cards.length, explain: explain.chains.length });
	explain.chains.forEach((c, i) => {
		const k = cards[i] || {};
		check(k.summary === c.root_cause.summary && k.kind === c.root_cause.kind, `chain ${i} text equals explain --json`, { page: k.summary, explain: c.root_cause.summary });
		const py = c.python ? `${c.python.file}:${c.python.line} in ${c.python.function}()` : null;
		check(k.py === py, `chain ${i} Python line equals explain --json`, { page: k.py, explain: py });
		check(JSON.stringify(k.fix) === JSON.stringify(c.fix), `chain ${i} fix commands equal explain --json`, k.fix);
		check(k.share && k.share.startsWith((c.explained_share * 100).toFixed(1) + ' %'), `chain ${i} explained share`, k.share);
	});
	check((await p.$$('article.chain button.copy')).length === explain.chains.reduce((a, c) => a + c.fix.length, 0), 'a copy button per fix command');
	await shot(p, 'chains-1280x800');

	// Export chains JSON: the downloaded file is /chains' answer.
	const dl = `${D}/downloads`;
	mkdirSync(dl, { recursive: true });
	const cdp = await p.createCDPSession();
	await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dl });
	await p.$$eval('.toolbar button', (bs) => bs.find((x) => x.textContent === 'Export chains JSON').click());
	for (let i = 0; i < 50 && !existsSync(`${dl}/causeway-chains.json`); i++) await new Promise((r) => setTimeout(r, 100));
	let exported = null;
	try {
		exported = JSON.parse(readFileSync(`${dl}/causeway-chains.json`, 'utf8'));
	} catch (e) {
		exported = null;
	}
	check(exported && exported.chains.length === explain.chains.length && exported.chains[0].root_cause.summary === explain.chains[0].root_cause.summary, 'Export chains JSON downloads the chains');

	// Clicking a chain's "Open timeline" opens its thread's timeline.
	await navigate(p, () => p.click('article.chain a.open-timeline'));
	check(/chain=0/.test(await p.evaluate(() => location.hash)), 'the chain link carries the chain in the URL');
	const tl = await p.evaluate(() => {
		const t = window.__cw.timeline;
		return { from: t.from, to: t.to, rows: t.rows.map((r) => ({ lane: r.lane, tid: r.tid, starts: r.ivs.map((x) => x.start_ns), ends: r.ivs.map((x) => x.end_ns), reasons: r.ivs.map((x) => x.reason || null) })) };
	});
	const c0 = explain.chains[0];
	const cuda = tl.rows.find((r) => r.lane === 'cuda' && r.tid === c0.tid);
	check(!!cuda && cuda.starts.length > 100, 'the timeline has the chain thread\'s CUDA lane', tl.rows.map((r) => r.lane + r.tid));
	// The same intervals from the store, through query --json. (Bounds
	// widened by 1 us: the page's copy of from/to is a JS number.)
	const lo = Math.floor(tl.from) - 1000;
	const hi = Math.ceil(tl.to) + 1000;
	const qc = cli('query', '--db', db, '--json', '--limit', '1000000',
		`SELECT wall_ns, duration_ns FROM events WHERE tid = ${c0.tid} AND source IN ('cuda','driver','graph') AND wall_ns <= ${hi} AND wall_ns + duration_ns >= ${lo} ORDER BY wall_ns`);
	const ps = cuda ? cuda.starts.slice().sort((a, b2) => a - b2) : [];
	check(ps.length === qc.length && qc.every((r, i) => near(r.wall_ns, ps[i])), 'timeline CUDA intervals equal query --json', { page: ps.length, query: qc.length });
	const off = tl.rows.find((r) => r.lane === 'offcpu' && r.tid === c0.tid);
	const qo = cli('query', '--db', db, '--json', '--limit', '1000000',
		`SELECT wall_ns, duration_ns, reason FROM offcpu WHERE tid = ${c0.tid} AND wall_ns <= ${hi} AND wall_ns + duration_ns >= ${lo} ORDER BY wall_ns`);
	const po = off ? off.starts.map((s, i) => [s, off.reasons[i]]).sort((a, b2) => a[0] - b2[0]) : [];
	check(po.length === qo.length && qo.every((r, i) => near(r.wall_ns, po[i][0]) && r.reason === po[i][1]), 'timeline off-CPU intervals and reasons equal query --json', { page: po.length, query: qo.length });
	check(qo.some((r) => r.reason === 'preempted'), 'the chain window holds preempted intervals');
	// Hover a preempted interval: the tooltip names the preemptor.
	const hover = await p.evaluate(() => {
		const t = window.__cw.timeline;
		const row = t.rows.findIndex((r) => r.lane === 'offcpu');
		const r = t.rows[row];
		let best = 0;
		r.ivs.forEach((iv, i) => {
			if (iv.reason === 'preempted' && iv.end_ns - iv.start_ns > r.ivs[best].end_ns - r.ivs[best].start_ns) best = i;
		});
		const rect = t.canvas.getBoundingClientRect();
		return { x: rect.left + t.x((r.s[best] + r.e[best]) / 2), y: rect.top + t.AH + row * t.RH + t.RH / 2 };
	});
	await p.mouse.move(hover.x, hover.y);
	const tip = await p.$eval('.tl-tip', (e) => (e.hidden ? '' : e.textContent));
	check(/preempted by stress-ng \(pid 9001\)/.test(tip), 'hovering a preempted interval names the preemptor', tip);
	// The time axis: tick labels with their unit, growing, and a caption.
	const axis = await p.evaluate(() => ({ ticks: (document.querySelector('.tl-wrap').dataset.ticks || '').split('|').filter(Boolean), caption: (document.querySelector('.tl-axis') || {}).textContent || '' }));
	const unitNs = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9 };
	const tv = axis.ticks.map((t) => /^\+([\d.]+) (ns|µs|ms|s)$/.exec(t)).map((m) => (m ? +m[1] * unitNs[m[2]] : NaN));
	check(tv.length >= 3 && tv.every((v, i) => !Number.isNaN(v) && (i === 0 || v > tv[i - 1])), 'timeline: the time axis has growing tick labels with units', axis.ticks);
	check(/^time axis: \+ offsets from \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC, a tick every [\d.]+ (ns|µs|ms|s)$/.test(axis.caption), 'timeline: the axis caption says where ticks count from and their step', axis.caption);
	await shot(p, 'timeline-1280x800');
	// Export Perfetto: the trace file of the visible window.
	await p.$$eval('.toolbar button', (bs) => bs.find((x) => x.textContent === 'Export Perfetto').click());
	let perf = null;
	for (let i = 0; i < 100 && !perf; i++) {
		await new Promise((r) => setTimeout(r, 100));
		perf = readdirSync(dl).find((f) => f.endsWith('.perfetto-trace'));
	}
	let pj = null;
	try {
		pj = JSON.parse(readFileSync(`${dl}/${perf}`, 'utf8'));
	} catch {
		pj = null;
	}
	const evs = pj ? pj.traceEvents || pj : [];
	check(Array.isArray(evs) && evs.some((e) => e.name === c0.op && e.tid === c0.tid), 'Export Perfetto downloads the window\'s trace with the chain\'s op', perf);
	// Zoom and pan from the keyboard change the view.
	const v0 = await p.$eval('.tl-wrap', (e) => e.dataset.view || '');
	await p.focus('.tl-canvas');
	await p.keyboard.press('+');
	await p.keyboard.press('+');
	await p.keyboard.press('ArrowRight');
	const v1 = await p.$eval('.tl-wrap', (e) => e.dataset.view || '');
	check(v1 && v1 !== v0, 'keys zoom and pan the timeline', { v0, v1 });
	await new Promise((r) => setTimeout(r, 100));
	await shot(p, 'timeline-zoomed-1280x800');

	// Op detail from the overview's op link; the slowest call equals the
	// store's, and its drill-down opens a timeline around it.
	await hash(p, '#/overview');
	await navigate(p, () => p.click('table[data-testid=ops] a'));
	const opName = await p.evaluate(() => new URLSearchParams(location.hash.split('?')[1]).get('op'));
	const slowest = cli('query', '--db', db, '--json', `SELECT max(duration_ns) AS d, count(*) AS n FROM events WHERE op = '${opName}'`)[0];
	const firstDur = await p.$eval('table[data-testid=slowest] tbody tr td:nth-child(2)', (e) => e.textContent);
	const detail = await p.evaluate(async (op) => (await fetch(`/api/v1/ops/detail?op=${op}&source=cuda`)).json(), opName);
	check(detail.slowest[0].duration_ns === slowest.d, 'op detail slowest call equals the store\'s longest', { page: detail.slowest[0].duration_ns, query: slowest.d });
	check(detail.histogram.reduce((a, x) => a + x.count, 0) === detail.count && detail.count === summary.find((o) => o.op === opName).count, 'histogram counts add up to the op\'s calls');
	check((await p.$$('svg.hist rect.bar')).length === detail.histogram.length && firstDur.length > 0, 'histogram bars and slowest table drawn');
	// Both axes: latency ticks with units (growing), call counts up to the
	// largest bucket, and a title on each.
	const hax = await p.evaluate(() => ({
		x: [...document.querySelectorAll('svg.hist text.x-tick')].map((t) => [t.textContent, +t.dataset.v]),
		y: [...document.querySelectorAll('svg.hist text.y-tick')].map((t) => [t.textContent, +t.dataset.v]),
		titles: [...document.querySelectorAll('svg.hist text.axis-title')].map((t) => t.textContent),
	}));
	const hxv = hax.x.map(([t, v]) => { const m = /^([\d.]+) (ns|µs|ms|s)$/.exec(t); return m ? [+m[1] * unitNs[m[2]], v] : [NaN, v]; });
	check(hxv.length >= 2 && hxv.every(([ns, v], i) => Math.abs(ns - v) <= v * 0.01 && (i === 0 || v > hxv[i - 1][1])) &&
		hxv[0][1] <= detail.p50_ns * 10 && hxv[hxv.length - 1][1] >= detail.histogram[0].lo_ns, 'histogram: latency axis ticks with units', hax.x);
	const hmax = Math.max(...detail.histogram.map((x) => x.count));
	check(hax.y.length >= 2 && hax.y[0][1] === 0 && hax.y[hax.y.length - 1][1] === hmax && hax.y.every(([t, v]) => t === v.toLocaleString('en-US')), 'histogram: calls axis from 0 to the largest bucket', { y: hax.y, hmax });
	check(hax.titles.some((t) => /^latency per call/.test(t)) && hax.titles.some((t) => /^calls/.test(t)), 'histogram: both axes titled', hax.titles);
	await shot(p, 'op-detail-1280x800');
	await navigate(p, () => p.click('table[data-testid=slowest] a'));
	check(await p.evaluate(() => location.hash.startsWith('#/timeline?tid=')), 'the slow call links its thread');
	check((await p.$eval('.tl-wrap', (e) => +e.dataset.count)) > 0, 'a slow call drills down to its timeline');

	// Chains of one process: the timeline link names the thread and span.
	await hash(p, `#/chains?pid=${c0.pid}`);
	const href = await p.$eval('article.chain a.open-timeline', (a) => a.getAttribute('href'));
	check(new RegExp(`tid=${c0.tid}&from=\\d+&to=\\d+`).test(href), 'with a pid filter the chain links its thread and span', href);
	await navigate(p, () => p.click('article.chain a.open-timeline'));
	check((await p.$eval('.tl-wrap', (e) => +e.dataset.count)) === tl.rows.reduce((a, r) => a + r.starts.length, 0), 'the same intervals as the chain=0 timeline');

	// Paged: 1,000 intervals an answer, fetched on to the same picture.
	await hash(p, '#/timeline?chain=0&limit=1000');
	const paged = await p.evaluate(() => window.__cw.timeline.rows.map((r) => r.lane + ':' + r.tid + ':' + r.ivs.length).join(','));
	check(paged === tl.rows.map((r) => r.lane + ':' + r.tid + ':' + r.starts.length).join(','), 'a timeline fetched in pages of 1,000 has every interval', paged);

	// Theme, keyboard help, deep link of a filtered chains view.
	await hash(p, '#/chains?sev=HIGH');
	await p.keyboard.press('t');
	check((await p.evaluate(() => document.documentElement.dataset.theme)) === 'dark', 't switches to the dark theme');
	await p.keyboard.press('j');
	check(await p.evaluate(() => document.activeElement && document.activeElement.classList.contains('chain')), 'j focuses a chain');
	await shot(p, 'chains-dark-1280x800');
	await navigate(p, () => p.keyboard.press('Enter'));
	check(await p.evaluate(() => location.hash.startsWith('#/timeline?') && !!document.querySelector('.tl-canvas')), 'Enter on a focused chain opens its timeline');
	await shot(p, 'timeline-dark-1280x800');
	await hash(p, '#/overview');
	await shot(p, 'overview-dark-1280x800');
	await p.keyboard.press('t');

	// 4K: the same overview on a 3840x2160 screen.
	const p4 = await page(b, inc.url, { width: 3840, height: 2160 });
	await go(p4, inc.url + '/#/chains');
	const fs4 = await p4.evaluate(() => parseFloat(getComputedStyle(document.querySelector('.chain .summary')).fontSize));
	check(fs4 >= 24, 'text scales up on a 4K screen', fs4);
	await shot(p4, 'chains-3840x2160');
	await go(p4, inc.url + '/#/timeline?chain=0');
	await shot(p4, 'timeline-3840x2160');

	// ---- healthy and io-contention ----------------------------------------
	const hdb = `${D}/healthy.db`;
	const healthy = await start('demo-node', hdb);
	const ph = await page(b, healthy.url);
	await go(ph, healthy.url + '/#/chains');
	const hx = cli('explain', '--db', hdb, '--json', '--no-store');
	const msg = await text(ph, '.message[data-kind=healthy] h2');
	check(hx.chains.length === 0 && msg[0] === 'Nothing to explain', 'healthy: no chain, and the page says so', msg);
	await go(ph, healthy.url + '/#/overview');
	check((await ph.$$('[data-kind=healthy]')).length === 1, 'healthy overview says nothing to explain');
	await shot(ph, 'overview-healthy-1280x800');

	const idb = `${D}/io-contention.db`;
	const io = await start('demo-node', idb);
	const pi = await page(b, io.url);
	await go(pi, io.url + '/#/chains');
	const ix = cli('explain', '--db', idb, '--json', '--no-store');
	const icards = await pi.$$eval('article.chain', (as) => as.map((a) => [a.dataset.kind, a.querySelector('.summary').textContent, (a.querySelector('.pyline') || {}).textContent || null]));
	check(icards.length === ix.chains.length && ix.chains.every((c, i) => icards[i][0] === c.root_cause.kind && icards[i][1] === c.root_cause.summary),
		'io-contention chains equal explain --json', icards.map((c) => c[0]));
	check(ix.chains.some((c) => c.root_cause.kind === 'io_contention'), 'io-contention has an io_contention chain');
	const ipy = ix.chains[0].python;
	check(icards[0] && icards[0][2] === (ipy ? `${ipy.file}:${ipy.line} in ${ipy.function}()` : null), 'io-contention Python line equals explain --json', icards[0]);
	await go(pi, io.url + '/#/timeline?chain=' + ix.chains.findIndex((c) => c.root_cause.kind === 'io_contention'));
	const reasons = await pi.evaluate(() => window.__cw.timeline.rows.filter((r) => r.lane === 'offcpu').flatMap((r) => r.ivs.map((x) => x.reason)));
	check(reasons.includes('blocked'), 'io-contention timeline shows the blocked intervals', [...new Set(reasons)]);
	await shot(pi, 'timeline-io-contention-1280x800');

	// ---- capability panels: NCCL ranks, GPU health, tenants ----------------
	for (const [scen, sel, want] of [['nccl-straggler', 'table[data-testid=ranks] tbody tr', 'ranks'], ['thermal-throttling', 'table[data-testid=gpus] tbody tr', 'gpu'], ['noisy-neighbour', 'table[data-testid=tenants] tbody tr', 'tenants']]) {
		const sdb = `${D}/${scen}.db`;
		const sv = await start('demo-node', sdb);
		const pp = await page(b, sv.url);
		await go(pp, sv.url + '/#/overview');
		const n = (await pp.$$(sel)).length;
		if (want === 'ranks') {
			const rx = cli('explain', '--db', sdb, '--json', '--no-store', '--ranks').ranks;
			const shown = await pp.$$eval(sel, (trs) => trs.map((tr) => [+tr.dataset.rank, tr.lastChild.textContent]));
			check(n === rx.length && rx.every((r, i) => shown[i][0] === r.rank && shown[i][1] === (r.missing ? 'missing' : r.straggler ? 'straggler' : 'ok')), 'NCCL ranks panel equals explain --ranks --json', shown);
			await shot(pp, 'overview-nccl-ranks-1280x800', true);
		} else if (want === 'gpu') {
			const g = cli('query', '--db', sdb, '--json', 'SELECT count(*) AS n FROM gpu_devices')[0];
			check(n === g.n && n > 0, 'GPU health panel: one row per GPU of the store', { page: n, query: g.n });
		} else {
			check(n >= 2, 'tenant panel lists the tenants', n);
			await shot(pp, 'overview-tenants-1280x800', true);
		}
		// A panel shows exactly when its data exists.
		const gpus = cli('query', '--db', sdb, '--json', 'SELECT count(*) AS n FROM gpu_devices')[0].n;
		const ranks = cli('explain', '--db', sdb, '--json', '--no-store', '--ranks').ranks || [];
		const shownP = { gpu: (await pp.$$('section.panel.gpu')).length, nccl: (await pp.$$('section.panel.nccl')).length };
		check(shownP.gpu === (gpus > 0 ? 1 : 0) && shownP.nccl === (ranks.length ? 1 : 0), `${scen}: the GPU and NCCL panels show exactly when there is such data`, { shownP, gpus, ranks: ranks.length });
	}

	// ---- empty database, unreadable database, server error ---------------
	const empty = await start('empty-node', `${D}/empty.db`);
	const pe = await page(b, empty.url);
	await go(pe, empty.url + '/');
	const em = await text(pe, '.message[data-kind=empty] h2');
	check(em[0] === 'No trace in this database yet', 'empty database: a clear message', em);
	await shot(pe, 'empty-database-1280x800');
	for (const v of ['chains', 'timeline', 'op']) {
		await hash(pe, '#/' + v);
		check((await pe.$$('.message[data-kind=empty]')).length === 1, `empty database: ${v} says so too`);
	}

	// A database that turns unreadable under a running server (serve
	// refuses to start on one): its file overwritten with noise.
	copyFileSync(`${D}/healthy.db`, `${D}/broken.db`);
	const corrupt = await start('broken-node', `${D}/broken.db`);
	writeFileSync(`${D}/broken.db`, randomBytes(65536));
	const pc = await page(b, corrupt.url);
	await go(pc, corrupt.url + '/');
	const cm = await text(pc, '.message.error h2, .message.error p');
	check(cm[0] === 'Database unreadable' && /cannot read its database/.test(cm[1]), 'unreadable database: a clear message', cm);
	await shot(pc, 'database-unreadable-1280x800');
	// The console reports the 503 itself; the page adds nothing of its own.
	pc.rec.errors = pc.rec.errors.filter((e) => !/status of 503/.test(e));

	// A server error on one route: the failing panel says so, the rest of
	// the page still renders. (The 500 is answered by the test in place of
	// the server: serve has no way to fail on purpose.)
	const p5 = await page(b, inc.url);
	p5.rec.fake = (u) => (/\/api\/v1\/chains/.test(u) ? { status: 500, body: '{"error": "explain failed: Input/output error"}' } : null);
	await go(p5, inc.url + '/#/overview');
	const em5 = await text(p5, '.top-chains .message.error h2, .top-chains .message.error p');
	check(em5[0] === 'Server error (500)' && /explain failed: Input\/output error/.test(em5[1]), 'server error: the panel says which route failed and why', em5);
	check((await p5.$$('table[data-testid=ops] tbody tr')).length === summary.length, 'server error: the other panels still render');
	await shot(p5, 'server-error-1280x800');
	p5.rec.errors = p5.rec.errors.filter((e) => !/status of 500/.test(e));

	// The page loaded, then its server went away: reload data with r.
	const gone = await start('demo-node', db);
	const pg = await page(b, gone.url);
	await go(pg, gone.url + '/#/chains');
	await gone.stop();
	await pg.keyboard.press('r');
	await pg.waitForFunction(() => document.querySelector('.message.error'), { timeout: 20000 });
	const gm = await text(pg, '.message.error h2, .message.error p');
	check(gm[0] === 'Cannot reach the server' && gm[1].includes(gone.url), 'unreachable server: a clear message naming it', gm);
	await shot(pg, 'server-unreachable-1280x800');
	pg.rec.errors = pg.rec.errors.filter((e) => !/ERR_CONNECTION_REFUSED/.test(e));

	// ---- mutual TLS: a browser without a client certificate ---------------
	const pki = `${D}/pki`;
	const mt = await start('demo-node', db, ['--cert', `${pki}/server.crt`, '--key', `${pki}/server.key`, '--client-ca', `${pki}/ca.crt`]);
	const pm = await page(b, mt.url);
	const resp = await pm.goto(mt.url + '/', { waitUntil: 'domcontentloaded' });
	const mtext = await pm.evaluate(() => document.body.innerText);
	check(resp.status() === 403 && /Client certificate refused/.test(mtext) && /client certificate required/.test(mtext), 'refused client certificate: a clear page', mtext.slice(0, 200));
	await shot(pm, 'client-certificate-refused-1280x800');
	const apiAns = await pm.evaluate(async () => (await fetch('/api/v1/overview')).text());
	pm.rec.errors = pm.rec.errors.filter((e) => !/status of 403/.test(e));
	check(/^\{"error": ?"client certificate required"\}/.test(apiAns.trim()), 'the API itself still answers 403 JSON', apiAns);

	// ---- fleet of four loopback agents -------------------------------------
	if (existsSync(`${D}/fleet.yaml`)) {
		const fl = await start('workstation', `${D}/incident.db`, ['--config', `${D}/fleet.yaml`]);
		const pf = await page(b, fl.url);
		await go(pf, fl.url + '/#/overview');
		await pf.waitForFunction(() => [...document.querySelectorAll('#nav a')].some((a) => a.textContent === 'Fleet'), { timeout: 20000 });
		await navigate(pf, () => pf.keyboard.press('5'), 30000);
		check(await pf.evaluate(() => location.hash.startsWith('#/fleet')), 'key 5 opens the fleet');
		const nodes = await pf.$$eval('table.fleet-table tbody tr', (trs) => trs.map((tr) => [tr.dataset.node, tr.children[2].textContent, tr.children[5].textContent]));
		check(nodes.length === 4 && nodes.every((n) => n[1] === 'ok'), 'fleet: four agents, all ok', nodes);
		const withChains = nodes.filter((n) => +n[2] > 0).map((n) => n[0]);
		check(withChains.length === 1 && withChains[0] === 'gpu-3', 'fleet: only gpu-3 has chains', nodes);
		await shot(pf, 'fleet-1280x800');
	}

	// ---- a fleet of two agents that do not answer: one banner each ----------
	{
		const closed = [];
		for (let i = 0; i < 2; i++) {
			const srv = createServer();
			await new Promise((r) => srv.listen(0, '127.0.0.1', r));
			closed.push(srv.address().port);
			await new Promise((r) => srv.close(r));
		}
		writeFileSync(`${D}/dead.yaml`, `fleet:\n  nodes:\n${closed.map((pt) => `    - http://127.0.0.1:${pt}\n`).join('')}  timeout: 2s\n`);
		const dv = await start('workstation', `${D}/incident.db`, ['--config', `${D}/dead.yaml`]);
		const pd = await page(b, dv.url);
		await go(pd, dv.url + '/#/fleet');
		const banners = await pd.$$eval('main .warning', (ps) => ps.map((x) => [x.dataset.node || '', x.textContent]));
		check(banners.length === 2 && closed.every((pt) => banners.filter(([n, t]) => n.endsWith(':' + pt) && t.includes(`port ${pt}`)).length === 1),
			'fleet: two unreachable agents, exactly one banner each, in its own words', { closed, banners });
		await shot(pd, 'fleet-unreachable-1280x800');
	}

	// ---- a merged file of two nodes: each top chain names its node -------
	if (existsSync(`${D}/merged.db`)) {
		const mx = cli('explain', '--db', `${D}/merged.db`, '--json', '--no-store');
		const ms = await start('merged', `${D}/merged.db`);
		const pm = await page(b, ms.url);
		await go(pm, ms.url + '/');
		const mtop = await text(pm, '.top-chains li');
		check(mtop.length === Math.min(5, mx.chains.length) && mx.chains.slice(0, 5).every((c, i) => mtop[i].includes(c.node + ' ')) &&
			new Set(mx.chains.map((c) => c.node)).size === 2, 'merged file: every top chain names its node', { page: mtop, explain: mx.chains.map((c) => c.node) });
		// Ops: one row per node and op, named; each node's calls those of
		// its aggregates, its wall shares its own (never past 100 %).
		const orows = await pm.$$eval('table[data-testid=ops] tbody tr', (trs) => trs.map((tr) => ({ node: tr.dataset.node, cell: tr.children[0].textContent, count: +(tr.querySelector('td[data-v]') || { dataset: {} }).dataset.v, share: +(tr.querySelector('td.share') || { dataset: {} }).dataset.v })));
		const per = {};
		for (const r of orows) {
			per[r.node] = per[r.node] || { calls: 0, share: 0 };
			per[r.node].calls += r.count;
			per[r.node].share += r.share;
		}
		const agg = Object.fromEntries(cli('query', '--db', `${D}/merged.db`, '--json', 'SELECT node, sum(count) AS n FROM aggregates GROUP BY node').map((r) => [r.node, r.n]));
		check(orows.length && orows.every((r) => r.cell === r.node) && Object.keys(per).sort().join() === 'n-a,n-b' &&
			Object.keys(agg).every((n) => per[n] && per[n].calls === agg[n]), 'merged file: ops rows name their node, with each node\'s own calls', { per, agg });
		check(Object.values(per).every((x) => x.share > 0 && x.share <= 1 + 1e-9), 'merged file: each node\'s wall shares sum to at most 100 %', per);
		await shot(pm, 'overview-merged-1280x800', true);
	}

	// ---- requests: the Requests view on a database with inference requests --
	// (tests/fixtures/requests_db.py: the incident plus 92 requests, two of
	// them with markup in their path, as the wire may send it.)
	const rdb = `${D}/requests.db`;
	if (existsSync(rdb)) {
		const rs = await start('demo-node', rdb);
		const pr = await page(b, rs.url);
		let dialogs = 0;
		pr.on('dialog', async (dlg) => {
			dialogs++;
			await dlg.dismiss();
		});
		await go(pr, rs.url + '/#/overview');
		await navigate(pr, () => pr.keyboard.press('6'));
		check((await pr.evaluate(() => document.getElementById('main').dataset.view)) === 'requests', 'key 6 opens the requests view');
		const want = cli('query', '--db', rdb, '--json', "SELECT method, path, count(*) AS n, sum(status >= 500 OR (status IS NULL AND end_reason = 'closed')) AS errors FROM requests GROUP BY method, path");
		const routes = await pr.$$eval('table[data-testid=routes] tbody tr', (trs) => trs.map((tr) => ({
			method: tr.dataset.method, path: tr.dataset.path, cells: [...tr.querySelectorAll('td[data-v]')].map((td) => td.dataset.v),
			shown: tr.children[1].textContent,
		})));
		const badRoutes = want.filter((w) => !routes.some((r) => r.method === w.method && r.path === w.path && +r.cells[0] === w.n && +r.cells[1] === w.errors && r.shown === w.path));
		check(routes.length === want.length && !badRoutes.length, 'requests: one route row per (method, path), counts and errors equal SQL', { routes, badRoutes });
		const api = await pr.evaluate(() => window.__cw.requests.routes.map((r) => [r.path, r.p50_ms, r.p99_ms]));
		const pct = await pr.$$eval('table[data-testid=routes] tbody tr', (trs) => trs.map((tr) => [tr.dataset.path, +tr.querySelectorAll('td[data-v]')[2].dataset.v, +tr.querySelectorAll('td[data-v]')[4].dataset.v]));
		check(JSON.stringify(api) === JSON.stringify(pct), 'requests: the route percentiles are /api/v1/requests\'', { api, pct });
		const slow = cli('query', '--db', rdb, '--json', 'SELECT path, duration_ns FROM requests ORDER BY duration_ns DESC, id DESC LIMIT 100');
		const shownRows = await pr.$$eval('table[data-testid=requests] tbody tr', (trs) => trs.map((tr) => ({ path: tr.querySelector('td.path').textContent, ms: +tr.querySelector('td[data-v]').dataset.v })));
		check(shownRows.length === slow.length && slow.every((r, i) => shownRows[i].path === r.path && Math.abs(shownRows[i].ms * 1e6 - r.duration_ns) < 1000),
			'requests: the slowest requests, slowest first, equal SQL', { page: shownRows.slice(0, 4), query: slow.slice(0, 4) });
		// The hostile paths are text: shown character for character, no
		// element made of them, no script run.
		const hostile = await pr.evaluate(() => ({
			imgs: document.querySelectorAll('#main img').length,
			cells: [...document.querySelectorAll('table[data-testid=requests] td.path')].slice(0, 2).map((td) => td.textContent),
			routeLinks: [...document.querySelectorAll('table[data-testid=routes] td a')].map((a) => a.textContent).filter((t) => t.includes('<')),
			tds: document.querySelectorAll('table[data-testid=requests] tbody tr:first-child td').length,
		}));
		check(hostile.imgs === 0 && dialogs === 0 && hostile.cells[0] === '/<img src=x onerror=alert(1)>' && hostile.cells[1] === '/a"quote\'&amp;</td>' &&
			hostile.routeLinks.length === 2 && hostile.tds === 11, 'requests: a path holding markup renders as text', { ...hostile, dialogs });
		await shot(pr, 'requests-1280x800', true);
		// A status class narrows the list: the two 500s.
		await navigate(pr, () => pr.select('select[data-testid=req-status]', '5xx'));
		const st5 = await pr.$$eval('table[data-testid=requests] tbody tr', (trs) => trs.map((tr) => tr.children[3].textContent));
		check(st5.length === 2 && st5.every((x) => x === '500'), 'requests: status 5xx lists the two 500s', st5);
		// A request opens its thread's timeline around it.
		await navigate(pr, () => pr.click('table[data-testid=requests] a.open-timeline'));
		const tlr = await pr.evaluate(() => ({ hash: location.hash, rows: window.__cw.timeline ? window.__cw.timeline.rows.map((r) => r.lane + ' ' + r.tid) : [] }));
		check(/tid=4821/.test(tlr.hash) && tlr.rows.some((r) => r === 'cuda 4821'), 'requests: a request links to its thread\'s timeline at its time', tlr);
	}

	// ---- every page: no console error, nothing outside the origin --------
	for (const x of pages) {
		check(!x.rec.errors.length, `no console errors on ${x.url()}`, x.rec.errors);
		check(!x.rec.outside.length, `no request leaves the origin of ${x.url()}`, x.rec.outside);
	}
	check(readdirSync(SHOTS).filter((f) => f.endsWith('.png')).length >= 12, 'screenshots written', readdirSync(SHOTS));
} catch (e) {
	failed++;
	console.log('not ok - ' + (e.stack || e));
	for (const x of pages) {
		try {
			await x.screenshot({ path: `${SHOTS}/failure-${pages.indexOf(x)}.png` });
		} catch {
			// the page may be gone
		}
	}
} finally {
	await b.close();
	for (const s of servers) await s.stop();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
