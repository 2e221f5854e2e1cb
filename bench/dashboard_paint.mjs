// The dashboard's first paint and timeline interaction on a large database
// (bench/dashboard_paint.sh). Prints one line per figure.
import { serve, browser, open, ready } from '../tests/browser/lib.mjs';

const DB = process.argv[2];
const RUNS = +(process.env.RUNS || 5);
const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)];
const pct = (a, q) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))];
const s = await serve('bench', DB, ['--timeout', '60s']);
const b = await browser();
const out = {};
try {
	// First paint of the overview: first contentful paint, the time the
	// node panel and top-ops table show their numbers, and the time every
	// panel (top chains included, which runs explain) is filled.
	const fcp = [];
	const numbers = [];
	const all = [];
	const chains = [];
	for (let i = 0; i < RUNS + 1; i++) {
		const p = await open(b, s.url);
		const t0 = Date.now();
		await p.goto(s.url + '/#/overview', { waitUntil: 'domcontentloaded' });
		await p.waitForFunction(() => document.querySelector('table[data-testid=ops] tbody tr') && document.querySelector('.node-panel dd'), { timeout: 60000, polling: 'raf' });
		const tn = Date.now() - t0;
		await p.waitForFunction(() => document.querySelector('.top-chains li, .top-chains [data-kind=healthy], .top-chains .message'), { timeout: 60000, polling: 'raf' });
		const tc = Date.now() - t0;
		await ready(p, 60000);
		const ta = Date.now() - t0;
		const f = await p.evaluate(() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0);
		if (i === 0) out.cold = { numbers_ms: tn, chains_ms: tc, all_ms: ta };
		else {
			fcp.push(f);
			numbers.push(tn);
			chains.push(tc);
			all.push(ta);
		}
		await p.close();
	}
	out.first_contentful_paint_ms = Math.round(median(fcp));
	out.overview_numbers_ms = median(numbers);
	out.overview_top_chains_ms = median(chains);
	out.overview_all_panels_ms = median(all);
	out.runs = { fcp: fcp.map(Math.round), numbers, chains, all };

	// Timeline: a thread's window holding >= 100,000 intervals. Load time,
	// then 40 zoom steps and 40 pan steps, each awaited to its painted
	// frame: the time per step and the canvas paint time per frame.
	const tl = process.env.TL || '';
	const p = await open(b, s.url);
	const t0 = Date.now();
	await p.goto(s.url + '/#/timeline?' + tl, { waitUntil: 'domcontentloaded' });
	await p.waitForFunction(() => document.querySelector('.tl-canvas') && window.__cw.timeline, { timeout: 120000 });
	await ready(p, 120000);
	out.timeline_load_ms = Date.now() - t0;
	out.timeline_intervals = await p.evaluate(() => window.__cw.timeline.count);
	const steps = await p.evaluate(async () => {
		const t = window.__cw.timeline;
		const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
		const res = { zoom: [], pan: [], paint: [] };
		t.reset();
		await frame();
		t.frameMs.length = 0;
		const rect = t.canvas.getBoundingClientRect();
		for (let i = 0; i < 40; i++) {
			const a = performance.now();
			t.canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: i < 20 ? -120 : 120, clientX: rect.left + rect.width * 0.6, clientY: rect.top + 40, bubbles: true, cancelable: true }));
			await frame();
			res.zoom.push(performance.now() - a);
		}
		t.zoom(0.05);
		for (let i = 0; i < 40; i++) {
			const a = performance.now();
			t.pan(i < 20 ? 0.1 : -0.1);
			await frame();
			res.pan.push(performance.now() - a);
		}
		res.paint = t.frameMs.slice();
		return res;
	});
	// A step awaits two animation frames (~33 ms at 60 Hz) by itself: the
	// paint time is what the timeline adds.
	out.zoom_step_ms = { median: +median(steps.zoom).toFixed(1), p95: +pct(steps.zoom, 0.95).toFixed(1) };
	out.pan_step_ms = { median: +median(steps.pan).toFixed(1), p95: +pct(steps.pan, 0.95).toFixed(1) };
	out.paint_ms = { median: +median(steps.paint).toFixed(2), p95: +pct(steps.paint, 0.95).toFixed(2), max: +Math.max(...steps.paint).toFixed(2), frames: steps.paint.length };
	out.errors = p.rec.errors;
	out.outside = p.rec.outside;
} finally {
	await b.close();
	await s.stop();
}
console.log(JSON.stringify(out, null, 1));
