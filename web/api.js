// The one path to the server: same-origin fetches of /api/v1, classified
// into the errors the page explains (unreachable, refused certificate,
// token, unreadable database, server error, route not offered).

const TOKEN_KEY = 'causeway.token';

export class ApiError extends Error {
	constructor(kind, status, message, route) {
		super(message);
		this.kind = kind; // 'unreachable' | 'cert' | 'token' | 'db' | 'missing' | 'bad' | 'server'
		this.status = status;
		this.route = route;
	}
}

export function token() {
	return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(t) {
	if (t) sessionStorage.setItem(TOKEN_KEY, t);
	else sessionStorage.removeItem(TOKEN_KEY);
}

export function qs(params) {
	const u = new URLSearchParams();
	for (const [k, v] of Object.entries(params || {}))
		if (v !== null && v !== undefined && v !== '') u.set(k, String(v));
	const s = u.toString();
	return s ? '?' + s : '';
}

export async function raw(route, params, { timeoutMs = 30000, signal = null } = {}) {
	const headers = {};
	if (token()) headers.Authorization = 'Bearer ' + token();
	const ctl = new AbortController();
	// A stream has no answer time: it ends when its caller's signal aborts.
	const timer = signal ? 0 : setTimeout(() => ctl.abort(), timeoutMs);
	let res;
	try {
		res = await fetch('/api/v1/' + route + qs(params), { headers, signal: signal || ctl.signal, cache: 'no-store' });
	} catch (e) {
		throw new ApiError('unreachable', 0,
			`cannot reach the causeway API at ${location.origin}` +
			(e.name === 'AbortError' ? ` (no answer in ${timeoutMs / 1000} s)` : ': the server stopped or the connection failed'),
			route);
	} finally {
		clearTimeout(timer);
	}
	if (res.ok) return res;
	let msg = res.statusText || 'HTTP ' + res.status;
	try {
		const j = await res.json();
		if (j && typeof j.error === 'string') msg = j.error;
	} catch {
		// not JSON: keep the status text
	}
	const kind =
		res.status === 403 && /certificate/i.test(msg) ? 'cert'
		: res.status === 401 ? 'token'
		: res.status === 503 ? 'db'
		: res.status === 404 && /no such route/.test(msg) ? 'missing'
		: res.status === 400 || res.status === 404 ? 'bad'
		: 'server';
	throw new ApiError(kind, res.status, msg, route);
}

// /api/v1/stream's server-sent events through fetch, which sends the same
// Authorization header as every other request (EventSource cannot send
// one; the cookie alone would leave a typed-in token out). onEvent gets
// each event's data parsed; resolves with the number of events when the
// server ends the stream, throws (ApiError or the read's error) when it
// cannot be opened or read.
export async function stream(route, signal, onEvent) {
	const res = await raw(route, null, { signal });
	if (!res.body || !/^text\/event-stream/.test(res.headers.get('Content-Type') || ''))
		throw new ApiError('server', res.status, `the answer of /api/v1/${route} is not an event stream`, route);
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	let n = 0;
	for (;;) {
		const { value, done } = await reader.read();
		if (done) return n;
		buf += dec.decode(value, { stream: true });
		let i;
		while ((i = buf.indexOf('\n\n')) >= 0) {
			const data = buf.slice(0, i).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
			buf = buf.slice(i + 2);
			if (!data) continue;
			n++;
			onEvent(JSON.parse(data));
		}
	}
}

export async function get(route, params, opts) {
	const res = await raw(route, params, opts);
	try {
		return await res.json();
	} catch {
		throw new ApiError('server', res.status, `the answer of /api/v1/${route} is not JSON`, route);
	}
}

// POST /api/v1/query: bound parameters, never text built into the SQL.
export async function sql(text, params = [], maxRows = 10000) {
	const headers = { 'Content-Type': 'application/json' };
	if (token()) headers.Authorization = 'Bearer ' + token();
	let res;
	try {
		res = await fetch('/api/v1/query', { method: 'POST', headers, cache: 'no-store', body: JSON.stringify({ sql: text, params, max_rows: maxRows }) });
	} catch {
		throw new ApiError('unreachable', 0, `cannot reach the causeway API at ${location.origin}`, 'query');
	}
	const j = await res.json().catch(() => null);
	if (!res.ok) {
		const msg = (j && j.error) || 'HTTP ' + res.status;
		throw new ApiError(res.status === 403 ? 'cert' : res.status === 401 ? 'token' : res.status === 503 ? 'db' : 'server', res.status, msg, 'query');
	}
	return j.rows.map((r) => Object.fromEntries(j.columns.map((c, i) => [c, r[i]])));
}

// What the page says for each kind of failure: the first sentence is the
// server's own words, the second what to do.
export function explainError(e) {
	if (!(e instanceof ApiError)) return { title: 'The page failed', text: String(e && e.message ? e.message : e), hint: 'Reload the page; if it persists, report it with the browser console output.' };
	switch (e.kind) {
	case 'unreachable':
		return { title: 'Cannot reach the server', text: e.message.charAt(0).toUpperCase() + e.message.slice(1) + '.', hint: 'Check that causeway serve (or trace --serve) is still running and reachable, then try again (r).' };
	case 'cert':
		return { title: 'Client certificate refused', text: `The server refused this browser's client certificate: ${e.message}.`, hint: 'Import a client certificate signed by the CA given to serve --client-ca, with the clientAuth purpose, and reload (docs/api.md, Mutual TLS).' };
	case 'token':
		return { title: 'Bearer token required', text: `The server answered: ${e.message}.`, hint: 'Enter the token of serve --token-file below; it is kept for this tab only.', token: true };
	case 'db':
		return { title: 'Database unreadable', text: `The server cannot read its database: ${e.message}.`, hint: 'Check the --db path and that the file is a causeway database.' };
	case 'missing':
		return { title: 'Not offered by this server', text: `This server has no /api/v1/${e.route} route (${e.message}).`, hint: 'Upgrade causeway on this node.' };
	case 'bad':
		return { title: 'Request refused', text: `The server refused the request: ${e.message}.`, hint: 'Check the window and filters in the address (the part after #).' };
	default:
		return { title: `Server error (${e.status})`, text: `The server failed to answer /api/v1/${e.route}: ${e.message}.`, hint: 'See the server log; the other views may still work.' };
	}
}
