// Shared by the dashboard test and the paint benchmark: start `causeway
// serve` on a loopback port, open Chromium, watch a page for console
// errors and for requests that leave the origin.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import puppeteer from 'puppeteer-core';

export const BIN = process.env.CW_BIN;

// serve(name, db, ...args) -> {url, proc, stop()}; port 0, read back from
// the banner on stderr.
export function serve(node, db, args = []) {
	return new Promise((resolve, reject) => {
		const tls = args.includes('--cert');
		const argv = ['--node', node, 'serve', '--db', db, '--listen', '127.0.0.1:0', ...(tls ? [] : ['--no-tls']), ...args];
		const proc = spawn(BIN, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
		let err = '';
		const timer = setTimeout(() => reject(new Error(`serve ${node} did not start: ${err}`)), 10000);
		proc.stderr.on('data', (d) => {
			err += d;
			const m = /serving (https?:\/\/127\.0\.0\.1:\d+)/.exec(err);
			if (m) {
				clearTimeout(timer);
				resolve({ url: m[1], proc, stop: () => stop(proc) });
			}
		});
		proc.on('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`serve ${node} exited ${code}: ${err}`));
		});
	});
}

function stop(proc) {
	return new Promise((resolve) => {
		if (proc.exitCode !== null) return resolve();
		proc.removeAllListeners('exit');
		proc.on('exit', () => resolve());
		proc.kill('SIGTERM');
	});
}

export function cli(...args) {
	return JSON.parse(execFileSync(BIN, args, { encoding: 'utf8', maxBuffer: 256 << 20 }));
}

export async function browser() {
	return puppeteer.launch({
		executablePath: process.env.CW_CHROMIUM || '/usr/bin/chromium',
		headless: true,
		acceptInsecureCerts: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions',
			'--disable-background-networking', '--disable-component-update', '--disable-sync', '--font-render-hinting=none'],
	});
}

// open(b, origin): a page that records console errors, uncaught
// exceptions and every request to another origin (aborted). `fake`
// may answer chosen requests instead of the server: (url) -> {status, body}
// or null.
export async function open(b, origin, { width = 1280, height = 800, scale = 1, signedIn = true } = {}) {
	const page = await b.newPage();
	await page.setViewport({ width, height, deviceScaleFactor: scale });
	// Signed in as a browser is after the server's /?token= link: the
	// cookie of that server's port holding the token (none: mTLS only).
	const tok = token();
	if (tok && signedIn) await page.setCookie({ name: `causeway_token_${new URL(origin).port}`, value: tok, url: origin });
	const rec = { errors: [], outside: [], fake: null };
	page.on('console', (m) => {
		// "Failed to load resource" names no URL; its location is the resource.
		const at = m.location() && m.location().url;
		if (m.type() === 'error') rec.errors.push(m.text() + (at ? ` (${at})` : ''));
	});
	page.on('pageerror', (e) => rec.errors.push('pageerror: ' + e.message));
	await page.setRequestInterception(true);
	page.on('request', (req) => {
		const u = new URL(req.url());
		if (u.protocol === 'data:' || u.protocol === 'blob:') return req.continue();
		if (u.origin !== origin) {
			rec.outside.push(req.url());
			return req.abort('blockedbyclient');
		}
		const f = rec.fake && rec.fake(req.url());
		if (f) return req.respond({ status: f.status, contentType: 'application/json', body: f.body });
		return req.continue();
	});
	page.rec = rec;
	return page;
}

// The token the servers of a test require: $CW_TOKEN, else the file a
// server generated ($HOME/.causeway/token); null when neither exists.
export function token() {
	if (process.env.CW_TOKEN) return process.env.CW_TOKEN;
	try {
		return readFileSync(`${process.env.HOME || homedir()}/.causeway/token`, 'utf8').trim();
	} catch {
		return null;
	}
}

// Waits until the view rendered and every panel has left "loading…".
export async function ready(page, timeout = 20000) {
	await page.waitForFunction(() => {
		const m = document.getElementById('main');
		return m && m.dataset.ready && m.getAttribute('aria-busy') === 'false' && !document.querySelector('.loading');
	}, { timeout });
}

export async function go(page, url) {
	await page.goto(url, { waitUntil: 'domcontentloaded' });
	await ready(page);
}

// Same-document navigation: sets the hash and waits for that render.
export async function hash(page, h) {
	const gen = await page.evaluate(() => +(document.getElementById('main').dataset.ready || 0));
	await page.evaluate((x) => (location.hash = x), h);
	await page.waitForFunction((g) => +(document.getElementById('main').dataset.ready || 0) > g, { timeout: 20000 }, gen);
	await ready(page);
}

// Runs act (a click, a key) that changes the hash, then waits for the
// render it starts: the hash changes at once, but the view renders on the
// hashchange event after it, so the previous view still looks ready.
export async function navigate(page, act, timeout = 20000) {
	const gen = await page.evaluate(() => +(document.getElementById('main').dataset.ready || 0));
	await act();
	await page.waitForFunction((g) => +(document.getElementById('main').dataset.ready || 0) > g, { timeout }, gen);
	await ready(page, timeout);
}
