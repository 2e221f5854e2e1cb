// Formatting, DOM and small SVG chart helpers shared by the views.

export const NS = { us: 1e3, ms: 1e6, s: 1e9 };

export function fmtNs(ns) {
	if (ns === null || ns === undefined || Number.isNaN(ns)) return '–';
	const a = Math.abs(ns);
	if (a >= 60e9) {
		const m = Math.floor(a / 60e9);
		const sec = Math.round((a - m * 60e9) / 1e9);
		return (ns < 0 ? '-' : '') + (sec ? `${m} min ${sec} s` : `${m} min`);
	}
	if (a >= 1e9) return (ns / 1e9).toFixed(a >= 10e9 ? 1 : 2) + ' s';
	if (a >= 1e6) return (ns / 1e6).toFixed(a >= 10e6 ? 1 : 2) + ' ms';
	if (a >= 1e3) return (ns / 1e3).toFixed(a >= 10e3 ? 1 : 2) + ' µs';
	return Math.round(ns) + ' ns';
}

export function fmtCount(n) {
	if (n === null || n === undefined) return '–';
	return Number(n).toLocaleString('en-US');
}

export function fmtBytes(b) {
	if (b === null || b === undefined) return '–';
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
	let i = 0;
	let v = Number(b);
	while (Math.abs(v) >= 1024 && i < u.length - 1) {
		v /= 1024;
		i++;
	}
	return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
}

export function fmtPct(x, digits = 0) {
	if (x === null || x === undefined) return '–';
	return (x * 100).toFixed(digits) + ' %';
}

// Wall-clock ns as UTC, millisecond precision (what explain prints).
export function fmtTime(ns, withDate = false) {
	if (!ns) return '–';
	const d = new Date(Math.floor(ns / 1e6));
	const iso = d.toISOString();
	return withDate ? iso.replace('T', ' ').replace('Z', ' UTC') : iso.slice(11, 23);
}

// Wall ns -> the API's time parameter: epoch seconds with a nine-digit
// fraction, which the server's window parser reads exactly.
export function tparam(ns) {
	const b = BigInt(Math.round(ns));
	const s = b / 1000000000n;
	const f = (b % 1000000000n).toString().padStart(9, '0');
	return `${s}.${f}`;
}

// h('div', {class: 'x', onclick: fn}, child, 'text', [children]) builds DOM
// without innerHTML, so data from the API is never parsed as markup.
export function h(tag, attrs, ...kids) {
	const svg = tag.startsWith('svg:');
	const el = svg
		? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
		: document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === null || v === undefined || v === false) continue;
		if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
		else if (k === 'dataset') Object.assign(el.dataset, v);
		else el.setAttribute(k, v === true ? '' : String(v));
	}
	const add = (k) => {
		if (k === null || k === undefined || k === false) return;
		if (Array.isArray(k)) k.forEach(add);
		else el.append(k instanceof Node ? k : document.createTextNode(String(k)));
	};
	kids.forEach(add);
	return el;
}

export function clear(el) {
	while (el.firstChild) el.removeChild(el.firstChild);
	return el;
}

// A polyline sparkline of one or two series (nulls leave gaps).
export function sparkline(series, { w = 120, h: hh = 28, cls = ['p50', 'p99'], log = true } = {}) {
	const all = series.flat().filter((v) => v !== null && v !== undefined && v > 0);
	const svg = h('svg:svg', { class: 'spark', width: w, height: hh, viewBox: `0 0 ${w} ${hh}`, role: 'img' });
	if (!all.length) return svg;
	const f = log ? (v) => Math.log10(v) : (v) => v;
	let lo = Math.min(...all.map(f));
	let hi = Math.max(...all.map(f));
	if (hi - lo < 1e-9) {
		lo -= 0.5;
		hi += 0.5;
	}
	series.forEach((s, k) => {
		const n = s.length;
		let d = '';
		let pen = false;
		s.forEach((v, i) => {
			if (v === null || v === undefined || v <= 0) {
				pen = false;
				return;
			}
			const x = n > 1 ? (i / (n - 1)) * (w - 2) + 1 : w / 2;
			const y = hh - 2 - ((f(v) - lo) / (hi - lo)) * (hh - 4);
			d += (pen ? 'L' : 'M') + x.toFixed(1) + ' ' + y.toFixed(1);
			pen = true;
		});
		if (d) svg.append(h('svg:path', { d, class: 'line ' + (cls[k] || '') }));
	});
	return svg;
}

// A line chart with a time axis for the host panel.
export function lineChart(points, lines, { w = 560, h: hh = 140, max = 1 } = {}) {
	const svg = h('svg:svg', { class: 'chart', viewBox: `0 0 ${w} ${hh}`, preserveAspectRatio: 'none', role: 'img' });
	if (!points.length) return svg;
	const t0 = points[0].t;
	const t1 = points[points.length - 1].t || t0 + 1;
	const x = (t) => (t1 > t0 ? ((t - t0) / (t1 - t0)) * (w - 4) + 2 : w / 2);
	const y = (v) => hh - 2 - Math.max(0, Math.min(1, v / max)) * (hh - 4);
	for (const g of [0.25, 0.5, 0.75]) svg.append(h('svg:line', { x1: 0, x2: w, y1: y(g * max), y2: y(g * max), class: 'grid' }));
	for (const l of lines) {
		let d = '';
		let pen = false;
		for (const p of points) {
			const v = p[l.key];
			if (v === null || v === undefined) {
				pen = false;
				continue;
			}
			d += (pen ? 'L' : 'M') + x(p.t).toFixed(1) + ' ' + y(v).toFixed(1);
			pen = true;
		}
		if (d) svg.append(h('svg:path', { d, class: 'line ' + l.cls }));
	}
	return svg;
}

export function copyButton(text, label = 'copy') {
	const b = h('button', { class: 'copy', type: 'button', title: 'copy to the clipboard', 'aria-label': 'copy: ' + text }, label);
	b.addEventListener('click', async () => {
		let ok = false;
		try {
			await navigator.clipboard.writeText(text);
			ok = true;
		} catch {
			// Plain-HTTP origins have no clipboard API: select a hidden
			// textarea and use the legacy command instead.
			const ta = h('textarea', { class: 'offscreen' });
			ta.value = text;
			document.body.append(ta);
			ta.select();
			ok = document.execCommand('copy');
			ta.remove();
		}
		b.textContent = ok ? 'copied' : 'select and copy';
		setTimeout(() => (b.textContent = label), 1500);
	});
	return b;
}

export function download(name, blob) {
	const url = URL.createObjectURL(blob);
	const a = h('a', { href: url, download: name, class: 'offscreen' });
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 10000);
}
