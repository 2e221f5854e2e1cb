// The thread timeline: one canvas, one row per (thread, lane), zoom and pan.
// Intervals are kept in typed arrays sorted by start, with a running maximum
// of the ends so that the first visible interval is one binary search away;
// intervals narrower than a pixel are merged with their neighbours of the
// same colour, so a frame costs at most a few rectangles per pixel column
// however many intervals the window holds (100,000 stay smooth).

import { fmtNs, fmtTime, fmtBytes, h } from './util.js';

const LANE_ORDER = ['cuda', 'nccl', 'offcpu', 'io', 'memory'];

// Colour classes; the actual colours come from CSS variables so the two
// themes stay in one place (style.css).
function colourKey(lane, iv) {
	if (lane === 'offcpu') {
		const r = iv.reason || 'other';
		return r === 'preempted' || r === 'blocked' || r === 'io' ? 'off-' + r : 'off-other';
	}
	if (lane === 'cuda' && iv.error) return 'cuda-error';
	// Waiting calls (synchronize, event waits) apart from the short ones
	// that only enqueue work.
	if (lane === 'cuda' && /Synchronize|Wait|Query/.test(iv.op || '')) return 'cuda-sync';
	return lane;
}

export const COLOUR_KEYS = ['cuda', 'cuda-sync', 'cuda-error', 'nccl', 'off-preempted', 'off-blocked', 'off-io', 'off-other', 'io', 'memory'];

export class Timeline {
	constructor(host, data, { onSelect } = {}) {
		this.host = host;
		this.onSelect = onSelect;
		this.canvas = h('canvas', { class: 'tl-canvas', tabindex: '0', role: 'img', 'aria-label': 'thread timeline; + and - zoom, arrows pan, 0 resets' });
		this.tip = h('div', { class: 'tl-tip', role: 'tooltip', hidden: true });
		// The time axis in words: what the ticks count from, and their step.
		this.axis = h('p', { class: 'tl-axis muted' });
		host.append(this.axis, this.canvas, this.tip);
		this.frameMs = [];
		this.setData(data);
		this.resizeObs = new ResizeObserver(() => this.resize());
		this.resizeObs.observe(host);
		this.bind();
		this.resize();
	}

	setData(data) {
		this.from = data.from_ns;
		this.to = data.to_ns > data.from_ns ? data.to_ns : data.from_ns + 1;
		const threads = new Map((data.threads || []).map((t) => [t.tid, t]));
		const rows = [];
		for (const l of data.lanes || []) {
			const ivs = (l.intervals || []).slice().sort((a, b) => a.start_ns - b.start_ns);
			const n = ivs.length;
			const s = new Float64Array(n);
			const e = new Float64Array(n);
			const maxE = new Float64Array(n);
			const col = new Array(n);
			let m = -Infinity;
			for (let i = 0; i < n; i++) {
				s[i] = ivs[i].start_ns - this.from;
				e[i] = Math.max(ivs[i].end_ns, ivs[i].start_ns) - this.from;
				m = Math.max(m, e[i]);
				maxE[i] = m;
				col[i] = colourKey(l.lane, ivs[i]);
			}
			const t = threads.get(l.tid);
			// I/O and memory lanes are per process (tid null).
			const who = l.tid !== null && l.tid !== undefined ? `${t ? t.comm + ' ' : ''}${l.tid}` : `pid ${l.pid}`;
			rows.push({ lane: l.lane, tid: l.tid ?? l.pid, label: `${who} · ${l.lane}`, ivs, s, e, maxE, col, thin: l.lane === 'memory' });
		}
		rows.sort((a, b) => a.tid - b.tid || LANE_ORDER.indexOf(a.lane) - LANE_ORDER.indexOf(b.lane));
		this.rows = rows;
		this.count = rows.reduce((a, r) => a + r.ivs.length, 0);
		this.v0 = 0;
		this.v1 = this.to - this.from;
		this.selected = null;
	}

	destroy() {
		this.resizeObs.disconnect();
		cancelAnimationFrame(this.raf);
	}

	colours() {
		const cs = getComputedStyle(document.documentElement);
		const c = {};
		for (const k of COLOUR_KEYS) c[k] = cs.getPropertyValue('--tl-' + k).trim() || '#888';
		for (const k of ['fg', 'muted', 'grid', 'bg', 'panel', 'accent']) c[k] = cs.getPropertyValue('--' + k).trim();
		return c;
	}

	resize() {
		// Rows, labels and text follow the root font size (larger on 4K).
		const k = parseFloat(getComputedStyle(document.documentElement).fontSize) / 15 || 1;
		this.RH = Math.round(22 * k);
		this.AH = Math.round(24 * k);
		this.LW = Math.round(190 * k);
		this.fontPx = Math.round(12 * k);
		const w = Math.max(300, this.host.clientWidth);
		const hh = this.AH + Math.max(1, this.rows.length) * this.RH + 4;
		const dpr = window.devicePixelRatio || 1;
		this.w = w;
		this.hgt = hh;
		this.canvas.width = Math.round(w * dpr);
		this.canvas.height = Math.round(hh * dpr);
		this.canvas.style.width = w + 'px';
		this.canvas.style.height = hh + 'px';
		this.dpr = dpr;
		this.col = this.colours();
		this.draw();
	}

	// Schedules one frame; several zoom/pan steps in a frame paint once.
	draw() {
		if (this.raf) return;
		this.raf = requestAnimationFrame(() => {
			this.raf = 0;
			this.paint();
		});
	}

	x(t) {
		return this.LW + ((t - this.v0) / (this.v1 - this.v0)) * (this.w - this.LW - 8);
	}

	t(x) {
		return this.v0 + ((x - this.LW) / (this.w - this.LW - 8)) * (this.v1 - this.v0);
	}

	paint() {
		const t0 = performance.now();
		const g = this.canvas.getContext('2d');
		const c = this.col;
		g.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
		g.fillStyle = c.panel;
		g.fillRect(0, 0, this.w, this.hgt);
		g.font = this.fontPx + 'px system-ui, sans-serif';
		g.textBaseline = 'middle';
		// Axis: about one tick per 110 px, at a round step.
		const span = this.v1 - this.v0;
		const raw = span / ((this.w - this.LW) / 110);
		const p10 = Math.pow(10, Math.floor(Math.log10(raw)));
		const step = [1, 2, 5, 10].map((k) => k * p10).find((k) => k >= raw) || raw;
		g.fillStyle = c.muted;
		g.strokeStyle = c.grid;
		g.lineWidth = 1;
		const ticks = [];
		for (let t = Math.ceil(this.v0 / step) * step; t <= this.v1; t += step) {
			const x = Math.round(this.x(t)) + 0.5;
			g.beginPath();
			g.moveTo(x, this.AH - 4);
			g.lineTo(x, this.hgt);
			g.stroke();
			const label = '+' + fmtNs(t);
			if (x + 3 + g.measureText(label).width < this.w) {
				g.fillText(label, x + 3, this.AH / 2);
				ticks.push(label);
			}
		}
		g.fillText('time →', 6, this.AH / 2, this.LW - 12);
		// The labels drawn, for assistive tools and the browser test.
		this.ticks = ticks;
		this.host.dataset.ticks = ticks.join('|');
		this.axis.textContent = `time axis: + offsets from ${fmtTime(this.from, true)}, a tick every ${fmtNs(step)}`;
		const right = this.w - 8;
		this.rows.forEach((r, ri) => {
			const y = this.AH + ri * this.RH;
			if (ri % 2) {
				g.fillStyle = c.bg;
				g.globalAlpha = 0.35;
				g.fillRect(0, y, this.w, this.RH);
				g.globalAlpha = 1;
			}
			g.fillStyle = c.fg;
			g.fillText(r.label, 6, y + this.RH / 2, this.LW - 12);
			// First interval whose running-max end reaches the view.
			let lo = 0;
			let hi = r.s.length;
			while (lo < hi) {
				const mid = (lo + hi) >> 1;
				if (r.maxE[mid] < this.v0) lo = mid + 1;
				else hi = mid;
			}
			let runCol = null;
			let runX0 = 0;
			let runX1 = 0;
			const top = r.thin ? y + this.RH * 0.35 : y + 3;
			const bh = r.thin ? this.RH * 0.3 : this.RH - 6;
			const flush = () => {
				if (runCol === null) return;
				g.fillStyle = c[runCol];
				g.fillRect(runX0, top, Math.max(1, runX1 - runX0), bh);
			};
			for (let i = lo; i < r.s.length && r.s[i] <= this.v1; i++) {
				if (r.e[i] < this.v0) continue;
				let x0 = Math.max(this.LW, this.x(r.s[i]));
				let x1 = Math.min(right, this.x(r.e[i]));
				if (x1 - x0 < 1) x1 = x0 + 1;
				if (runCol === r.col[i] && x0 <= runX1 + 0.5) {
					if (x1 > runX1) runX1 = x1;
					continue;
				}
				flush();
				runCol = r.col[i];
				runX0 = x0;
				runX1 = x1;
			}
			flush();
		});
		if (this.selected) {
			const { row, i } = this.selected;
			const r = this.rows[row];
			if (r) {
				const y = this.AH + row * this.RH;
				const x0 = Math.max(this.LW, this.x(r.s[i]));
				const x1 = Math.min(right, Math.max(x0 + 2, this.x(r.e[i])));
				g.strokeStyle = c.accent;
				g.lineWidth = 2;
				g.strokeRect(x0 - 1, y + 1, x1 - x0 + 2, this.RH - 2);
			}
		}
		g.strokeStyle = c.grid;
		g.beginPath();
		g.moveTo(this.LW - 0.5, 0);
		g.lineTo(this.LW - 0.5, this.hgt);
		g.stroke();
		const ms = performance.now() - t0;
		this.frameMs.push(ms);
		if (this.frameMs.length > 200) this.frameMs.shift();
		this.host.dataset.frames = String((+this.host.dataset.frames || 0) + 1);
	}

	zoom(factor, atX) {
		const span = this.v1 - this.v0;
		const full = this.to - this.from;
		const ns = Math.min(full, Math.max(1000, span * factor));
		const anchor = atX === undefined ? this.v0 + span / 2 : this.t(atX);
		const k = (anchor - this.v0) / span;
		this.v0 = anchor - k * ns;
		this.v1 = this.v0 + ns;
		this.clamp();
		this.draw();
		this.emitView();
	}

	pan(fraction) {
		const span = this.v1 - this.v0;
		this.v0 += span * fraction;
		this.v1 += span * fraction;
		this.clamp();
		this.draw();
		this.emitView();
	}

	reset() {
		this.v0 = 0;
		this.v1 = this.to - this.from;
		this.draw();
		this.emitView();
	}

	clamp() {
		const full = this.to - this.from;
		const span = this.v1 - this.v0;
		if (this.v0 < 0) {
			this.v0 = 0;
			this.v1 = span;
		}
		if (this.v1 > full) {
			this.v1 = full;
			this.v0 = Math.max(0, full - span);
		}
	}

	emitView() {
		// The tooltip described what was under the pointer before the move.
		this.tip.hidden = true;
		this.host.dataset.view = `${Math.round(this.v0)}:${Math.round(this.v1)}`;
		if (this.onView) this.onView(this.from + this.v0, this.from + this.v1);
	}

	hit(px, py) {
		const row = Math.floor((py - this.AH) / this.RH);
		const r = this.rows[row];
		if (!r || px < this.LW) return null;
		// Within two pixels, the interval nearest the pointer.
		const slop = (2 * (this.v1 - this.v0)) / (this.w - this.LW);
		const t = this.t(px);
		let lo = 0;
		let hi = r.s.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (r.maxE[mid] < t - slop) lo = mid + 1;
			else hi = mid;
		}
		let best = null;
		let bestD = Infinity;
		for (let i = lo; i < r.s.length && r.s[i] <= t + slop; i++) {
			const d = t < r.s[i] ? r.s[i] - t : t > r.e[i] ? t - r.e[i] : 0;
			if (d <= slop && d < bestD) {
				best = i;
				bestD = d;
			}
		}
		return best === null ? null : { row, i: best };
	}

	describe(row, i) {
		const r = this.rows[row];
		const iv = r.ivs[i];
		const lines = [`${iv.label || iv.op || r.lane}`, `${fmtNs(iv.end_ns - iv.start_ns)} at ${fmtTime(iv.start_ns)} (+${fmtNs(iv.start_ns - this.from)})`];
		if (r.lane === 'offcpu') {
			lines.push('reason: ' + (iv.reason || '–') + (iv.wchan ? ` (${iv.wchan})` : ''));
			if (iv.preempted_by)
				lines.push(`preempted by ${iv.preempted_by.comm || '?'} (pid ${iv.preempted_by.pid})` + (iv.preempted_by.container ? ` in ${iv.preempted_by.container}` : ''));
		}
		if (r.lane === 'cuda') {
			if (iv.error) lines.push('error ' + iv.error);
			if (iv.python) lines.push(`${iv.python.file}:${iv.python.line} ${iv.python.function || ''}`);
		}
		if (r.lane === 'io') lines.push([iv.op, iv.device, iv.bytes !== undefined && iv.bytes !== null ? fmtBytes(iv.bytes) : null].filter(Boolean).join(' · '));
		if (r.lane === 'nccl') lines.push([iv.op, iv.seq !== undefined ? '#' + iv.seq : null, iv.bytes ? fmtBytes(iv.bytes) : null].filter(Boolean).join(' · '));
		if (r.lane === 'memory' && iv.kind) lines.push(iv.kind);
		return lines.filter(Boolean);
	}

	bind() {
		const cv = this.canvas;
		let drag = null;
		cv.addEventListener('wheel', (ev) => {
			ev.preventDefault();
			const rect = cv.getBoundingClientRect();
			if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) this.pan((ev.deltaX || ev.deltaY) / 1000);
			else this.zoom(Math.pow(1.0015, ev.deltaY), ev.clientX - rect.left);
		}, { passive: false });
		cv.addEventListener('pointerdown', (ev) => {
			drag = { x: ev.clientX, v0: this.v0, v1: this.v1, moved: false };
			this.tip.hidden = true;
			cv.setPointerCapture(ev.pointerId);
		});
		cv.addEventListener('pointermove', (ev) => {
			const rect = cv.getBoundingClientRect();
			if (drag) {
				const dx = ev.clientX - drag.x;
				if (Math.abs(dx) > 2) drag.moved = true;
				const dt = (dx / (this.w - this.LW)) * (drag.v1 - drag.v0);
				this.v0 = drag.v0 - dt;
				this.v1 = drag.v1 - dt;
				this.clamp();
				this.draw();
				return;
			}
			const hit = this.hit(ev.clientX - rect.left, ev.clientY - rect.top);
			if (!hit) {
				this.tip.hidden = true;
				return;
			}
			this.showTip(hit, ev.clientX - rect.left, ev.clientY - rect.top);
		});
		cv.addEventListener('pointerup', (ev) => {
			const rect = cv.getBoundingClientRect();
			if (drag && !drag.moved) {
				const hit = this.hit(ev.clientX - rect.left, ev.clientY - rect.top);
				this.select(hit);
			} else if (drag) this.emitView();
			drag = null;
		});
		cv.addEventListener('pointerleave', () => (this.tip.hidden = true));
		cv.addEventListener('keydown', (ev) => {
			const k = ev.key;
			if (k === '+' || k === '=') this.zoom(0.5);
			else if (k === '-' || k === '_') this.zoom(2);
			else if (k === 'ArrowLeft') this.pan(-0.2);
			else if (k === 'ArrowRight') this.pan(0.2);
			else if (k === '0') this.reset();
			else if (k === 'ArrowDown' || k === 'ArrowUp') this.step(k === 'ArrowDown' ? 1 : -1);
			else return;
			ev.preventDefault();
			ev.stopPropagation();
		});
	}

	// Arrow keys walk the intervals of the selected row (or the first row).
	step(dir) {
		const row = this.selected ? this.selected.row : 0;
		const r = this.rows[row];
		if (!r || !r.s.length) return;
		let i = this.selected ? this.selected.i + dir : 0;
		i = Math.max(0, Math.min(r.s.length - 1, i));
		this.select({ row, i });
		const mid = (r.s[i] + r.e[i]) / 2;
		if (mid < this.v0 || mid > this.v1) {
			const span = this.v1 - this.v0;
			this.v0 = mid - span / 2;
			this.v1 = mid + span / 2;
			this.clamp();
		}
		this.draw();
		this.showTip({ row, i }, Math.min(this.w - 200, Math.max(this.LW, this.x(mid))), this.AH + row * this.RH + this.RH);
	}

	select(hit) {
		this.selected = hit;
		this.draw();
		if (this.onSelect) this.onSelect(hit ? this.rows[hit.row] : null, hit ? this.rows[hit.row].ivs[hit.i] : null, hit ? this.describe(hit.row, hit.i) : null);
	}

	showTip(hit, x, y) {
		const lines = this.describe(hit.row, hit.i);
		this.tip.replaceChildren(...lines.map((l, k) => h('div', { class: k ? '' : 'tip-title' }, l)));
		this.tip.hidden = false;
		const tw = this.tip.offsetWidth;
		this.tip.style.left = Math.max(0, Math.min(this.w - tw - 4, x + 12)) + 'px';
		this.tip.style.top = y + 14 + 'px';
	}
}
