// Drives causeway's MCP server with the official TypeScript SDK client,
// over stdio (`causeway mcp`) and over HTTPS with a client certificate
// (`causeway serve`'s /mcp), and checks every tool's answer against
// `causeway explain --json` / `query --json` on the same database.
//
// Environment (set by tests/integration/test_mcp_sdk.sh):
//   CW_BIN        the causeway binary
//   MCP_DB        a demo database (incident scenario)
//   MCP_NCCL_DB   a demo database of an NCCL job (nccl-straggler scenario)
//   MCP_REQ_DB    the incident with inference requests (tests/fixtures/requests_db.py)
//   MCP_URL       https://127.0.0.1:PORT/mcp of a serve with --client-ca
//   MCP_CA, MCP_CERT, MCP_KEY, MCP_WRONG_CERT, MCP_WRONG_KEY   PEM files
//   MCP_TOKEN     the bearer token serve requires
//   MCP_FLEET     "host:port,..." for the stdio server's fleet tool
//   MCP_OUT       a scratch directory
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import { Readable } from 'node:stream';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

const env = process.env;
const BIN = env.CW_BIN;
const DB = env.MCP_DB;
const TOOLS = ['causal_chains', 'trace_summary', 'explain_call', 'stacks', 'run_sql', 'fleet',
	'query_fleet', 'export_timeline', 'where', 'run_demo', 'check', 'nccl_ranks', 'slow_requests'];
let checks = 0;

function ok(cond, msg) {
	assert.ok(cond, msg);
	checks++;
}

function cli(...args) {
	return JSON.parse(execFileSync(BIN, args, { encoding: 'utf8', maxBuffer: 64 << 20 }));
}

// A fetch for the SDK's HTTP transport that presents a client certificate
// (Node's global fetch cannot), streaming the body so SSE works.
function tlsFetch(tls, extraHeaders = {}) {
	return (url, init = {}) => new Promise((resolve, reject) => {
		const u = new URL(url);
		const headers = { ...extraHeaders };
		new Headers(init.headers).forEach((v, k) => { headers[k] = v; });
		const req = https.request({
			hostname: u.hostname, port: u.port, path: u.pathname + u.search,
			method: init.method || 'GET', headers, minVersion: 'TLSv1.3', ...tls,
		}, (res) => {
			const h = new Headers();
			for (const [k, v] of Object.entries(res.headers))
				h.set(k, Array.isArray(v) ? v.join(', ') : String(v));
			const empty = res.statusCode === 204 || res.statusCode === 304;
			if (empty)
				res.resume();
			resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, headers: h }));
		});
		req.on('error', reject);
		if (init.signal) {
			const abort = () => req.destroy(new Error('aborted'));
			init.signal.addEventListener('abort', abort, { once: true });
			req.on('close', () => init.signal.removeEventListener('abort', abort));
		}
		if (init.body)
			req.write(init.body);
		req.end();
	});
}

function tlsFiles(cert, key) {
	const t = { ca: fs.readFileSync(env.MCP_CA) };
	if (cert) {
		t.cert = fs.readFileSync(cert);
		t.key = fs.readFileSync(key);
	}
	return t;
}

function stripIds(chain) {
	const c = structuredClone(chain);
	delete c.slowest_call_id;
	delete c.chain_index;
	return c;
}

async function call(client, name, args, opts) {
	const r = await client.callTool({ name, arguments: args }, undefined, opts);
	return r;
}

function text(r) {
	return r.content.map((c) => c.text).join('\n');
}

async function exerciseTools(client, kind) {
	const listed = (await client.listTools()).tools;
	// Over HTTP the tools that act on live processes or files are off
	// unless the server's config enables them (server.mcp_live_tools).
	const LIVE = ['where', 'run_demo'];
	const served = kind === 'stdio' ? TOOLS : TOOLS.filter((t) => !LIVE.includes(t));
	ok(listed.length === served.length, `${kind}: ${listed.length} tools listed`);
	if (kind !== 'stdio') {
		ok(!listed.some((x) => LIVE.includes(x.name)), `${kind}: where and run_demo not listed`);
		for (const t of LIVE) {
			let msg = '';
			try {
				await call(client, t, t === 'where' ? { pid: process.pid } : {});
			} catch (e) {
				msg = e.message;
			}
			ok(/is off on this server.*server\.mcp_live_tools: true/.test(msg), `${kind}: ${t} refused, saying how to enable it`, msg);
		}
	}
	for (const t of served) {
		const d = listed.find((x) => x.name === t);
		ok(d && d.inputSchema && d.outputSchema && d.description.length > 80, `${kind}: tool ${t} described`);
	}

	// causal_chains == explain --json (chain objects, same order).
	const explain = cli('explain', '--json', '--no-store', '--db', DB);
	let progress = 0;
	const cc = await call(client, 'causal_chains', {}, { onprogress: () => { progress++; } });
	ok(!cc.isError, `${kind}: causal_chains ok`);
	const sc = cc.structuredContent;
	ok(sc.total_chains === explain.chains.length, `${kind}: total_chains ${sc.total_chains}`);
	ok(sc.chains.length === Math.min(10, explain.chains.length), `${kind}: top 10 by default`);
	sc.chains.forEach((c, i) => assert.deepEqual(stripIds(c), explain.chains[i], `${kind}: chain ${i}`));
	ok(progress >= 1, `${kind}: progress notifications (${progress})`);
	ok(text(cc).includes(explain.chains[0].op), `${kind}: text names the op`);
	const one = await call(client, 'causal_chains', { top_n: 1 });
	ok(one.structuredContent.chains.length === 1 &&
		one.structuredContent.truncated === (explain.chains.length > 1), `${kind}: top_n and truncated`);

	// trace_summary == query --json (summary rows).
	const q = cli('query', '--json', '--db', DB);
	const ts = await call(client, 'trace_summary', {});
	assert.deepEqual(ts.structuredContent.ops, q.slice(0, 50), `${kind}: trace_summary rows`);
	ok(ts.structuredContent.total_rows === q.length, `${kind}: trace_summary total_rows`);

	// run_sql == query --json SQL.
	const sql = 'SELECT op, count(*) AS n, max(duration_ns) AS mx FROM events GROUP BY op ORDER BY op';
	const rs = await call(client, 'run_sql', { sql });
	assert.deepEqual(rs.structuredContent.rows, cli('query', '--json', '--db', DB, sql).slice(0, 50),
		`${kind}: run_sql rows`);
	checks++;
	const capped = await call(client, 'run_sql', { sql: 'SELECT id FROM events', max_rows: 3 });
	ok(capped.structuredContent.row_count === 3 && capped.structuredContent.truncated, `${kind}: row cap`);

	// explain_call on the chain's slowest call == that row.
	const id = sc.chains[0].slowest_call_id;
	const ec = await call(client, 'explain_call', { id });
	const row = cli('query', '--json', '--db', DB, 'SELECT op, tid, duration_ns FROM events WHERE id = ?1',
		'--param', String(id))[0];
	ok(!ec.isError && ec.structuredContent.call.op === row.op &&
		ec.structuredContent.call.duration_ns === row.duration_ns &&
		ec.structuredContent.call.tid === row.tid, `${kind}: explain_call ${id}`);
	ok(ec.structuredContent.timeline.length >= 1, `${kind}: explain_call timeline`);

	const st = await call(client, 'stacks', { top_n: 3 });
	ok(!st.isError && st.structuredContent.count <= 3, `${kind}: stacks`);
	for (const s of st.structuredContent.stacks) {
		const r = cli('query', '--json', '--db', DB, 'SELECT count(*) AS n FROM events WHERE id = ?1',
			'--param', String(s.example_call_id));
		ok(r[0].n === 1, `${kind}: stacks example_call_id ${s.example_call_id} exists`);
	}

	// nccl_ranks on a database without NCCL data: an empty table, no error.
	const nr = await call(client, 'nccl_ranks', {});
	ok(!nr.isError && nr.structuredContent.ranks.length === 0 && nr.structuredContent.hang === false &&
		/no NCCL collectives/.test(text(nr)), `${kind}: nccl_ranks without NCCL data`);

	// slow_requests on a database without requests: empty, no error.
	const sr = await call(client, 'slow_requests', {});
	ok(!sr.isError && sr.structuredContent.requests.length === 0 && sr.structuredContent.routes.length === 0 &&
		/no inference request/.test(text(sr)), `${kind}: slow_requests without requests`);

	const ch = await call(client, 'check', {});
	// The MCP tool probes but loads no BPF object (the CLI's --no-load).
	const cj = cli('check', '--json', '--no-load');
	assert.deepEqual(ch.structuredContent.checks.map((c) => c.name), cj.checks.map((c) => c.name));
	checks++;

	if (kind === 'stdio') {
		const demo = await call(client, 'run_demo', { scenario: 'cpu-contention' });
		ok(!demo.isError && demo.structuredContent.diagnosis.chains[0].root_cause.kind === demo.structuredContent.expect,
			`${kind}: run_demo diagnosis ${demo.structuredContent.expect}`);
		ok(fs.existsSync(demo.structuredContent.db), 'stdio: run_demo keeps its database');
		fs.rmSync(demo.structuredContent.db.replace(/\/demo\.db$/, ''), { recursive: true, force: true });
	}

	const ex = await call(client, 'export_timeline', kind === 'stdio' ? { path: `${env.MCP_OUT}/t.json` } : {});
	ok(!ex.isError && ex.structuredContent.stats.slices > 0, `${kind}: export_timeline`);
	if (kind === 'stdio') {
		const tr = JSON.parse(fs.readFileSync(`${env.MCP_OUT}/t.json`, 'utf8'));
		ok(tr.traceEvents.length > 0, 'stdio: export_timeline wrote a Perfetto file');
	} else {
		const r = await call(client, 'export_timeline', { path: `${env.MCP_OUT}/h.json` });
		ok(r.isError && !fs.existsSync(`${env.MCP_OUT}/h.json`), 'http: export_timeline writes no file');
	}

	if (kind === 'stdio') {
		const wh = await call(client, 'where', { pid: process.pid, native: true });
		if (process.geteuid() === 0)
			ok(!wh.isError && wh.structuredContent.pid === process.pid && wh.structuredContent.threads.length >= 1,
				`${kind}: where on our own pid`);
		else
			ok(wh.isError, `${kind}: where refused without root`);
	}

	const fl = await call(client, 'fleet', { action: 'explain' });
	if (kind === 'stdio' && env.MCP_FLEET) {
		ok(!fl.isError && fl.structuredContent.nodes_answered >= 1, 'stdio: fleet explain answered');
		ok(fl.structuredContent.warnings.length >= 1, 'stdio: the dead node is a warning');
		const fq = await call(client, 'fleet', { action: 'query', sql: 'SELECT count(*) AS n FROM events' });
		ok(!fq.isError && fq.structuredContent.rows.length >= 1, 'stdio: fleet query');
		// The fleet article's call as printed, and its other three actions.
		const qc = await call(client, 'query_fleet', { action: 'chains', since: '5m' });
		ok(!qc.isError && /^Fleet Chains: \d+ chain\(s\)$/m.test(text(qc)) &&
			text(qc).indexOf('warning:') < text(qc).indexOf('Fleet Chains'),
			`stdio: query_fleet chains, warnings first: ${text(qc).slice(0, 300)}`);
		ok(qc.structuredContent.chains.every((c) => typeof c.node === 'string'), 'stdio: chains carry their node');
		const qs = await call(client, 'query_fleet', { action: 'sql',
			sql: 'SELECT node, source, count(*) as cnt, avg(duration)/1000 as avg_us FROM events GROUP BY node, source' });
		ok(!qs.isError && qs.structuredContent.rows.length >= 1 && qs.structuredContent.columns.includes('avg_us'),
			`stdio: query_fleet sql (the article's query): ${text(qs).slice(0, 300)}`);
		const qo = await call(client, 'query_fleet', { action: 'ops' });
		ok(!qo.isError && qo.structuredContent.rows.length >= 1 && qo.structuredContent.columns[0] === 'node' &&
			qo.structuredContent.columns.includes('p99_ns'), `stdio: query_fleet ops: ${text(qo).slice(0, 300)}`);
		const qv = await call(client, 'query_fleet', { action: 'overview', since: '1h' });
		ok(!qv.isError && qv.structuredContent.rows.some((r) => r.events > 0 || r[2] > 0),
			`stdio: query_fleet overview: ${text(qv).slice(0, 300)}`);
		const qb = await call(client, 'query_fleet', { action: 'explain' });
		ok(qb.isError, 'stdio: query_fleet takes the article\'s four actions only');
	} else {
		ok(fl.isError && /no fleet/.test(text(fl)), `${kind}: fleet without nodes says how to set it up`);
	}
}

async function refusals(client, kind) {
	const bad = await call(client, 'causal_chains', { top_n: 'ten' });
	ok(bad.isError && /top_n/.test(text(bad)), `${kind}: bad argument -> isError`);
	const unk = await call(client, 'causal_chains', { bogus: 1 });
	ok(unk.isError && /unknown argument/.test(text(unk)), `${kind}: unknown argument -> isError`);
	await assert.rejects(call(client, 'no_such_tool', {}),
		(e) => e instanceof McpError && e.code === ErrorCode.InvalidParams, `${kind}: unknown tool`);
	checks++;
	const w = await call(client, 'run_sql', { sql: 'DELETE FROM events' });
	ok(w.isError && /read-only/.test(text(w)), `${kind}: write through run_sql refused`);
	const n = cli('query', '--json', '--db', DB, 'SELECT count(*) AS n FROM events')[0].n;
	ok(n > 0, `${kind}: events still there (${n})`);
	if (kind === 'stdio') { // over HTTP the 64 KiB body cap answers first (below)
		const big = await call(client, 'run_sql', { sql: `SELECT '${'x'.repeat(70000)}'` });
		ok(big.isError && /longer than/.test(text(big)), `${kind}: oversized argument refused`);
	}
	// Cancellation: the call is abandoned, the server keeps serving.
	const ac = new AbortController();
	const slow = call(client, 'run_sql', {
		sql: 'WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT count(*) FROM n',
	}, { signal: ac.signal });
	setTimeout(() => ac.abort('test'), 200);
	await assert.rejects(slow, undefined, `${kind}: cancelled call rejects`);
	checks++;
	await client.ping();
	const after = await call(client, 'trace_summary', { limit: 1 });
	ok(!after.isError, `${kind}: still serving after the refusals`);
}

async function promptsAndResources(client, kind) {
	const p = await client.listPrompts();
	ok(p.prompts.map((x) => x.name).sort().join() === 'fleet_triage,investigate', `${kind}: prompts`);
	const g = await client.getPrompt({ name: 'investigate', arguments: { question: 'why is rank 3 slow?' } });
	ok(g.messages[0].content.text.includes('why is rank 3 slow?'), `${kind}: investigate prompt`);
	const r = await client.listResources();
	ok(r.resources.length === 2, `${kind}: resources`);
	const s = await client.readResource({ uri: 'causeway://schema' });
	ok(s.contents[0].text === fs.readFileSync(`${env.CW_ROOT}/docs/schema.md`, 'utf8'), `${kind}: schema resource`);
}

// nccl_ranks == explain --ranks --json on an NCCL job (stdio, its own
// server on that database): the same rows, the straggler named, windows
// and node filters passed through.
async function ncclRanks() {
	const ndb = env.MCP_NCCL_DB;
	const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--db', ndb], stderr: 'pipe' });
	const client = new Client({ name: 'causeway-test', version: '1.0.0' });
	await client.connect(transport);
	const want = cli('explain', '--ranks', '--json', '--no-store', '--db', ndb).ranks;
	const r = await call(client, 'nccl_ranks', {});
	ok(!r.isError && want.length >= 4, `nccl: ${want.length} ranks`);
	assert.deepEqual(r.structuredContent.ranks, want, 'nccl: nccl_ranks rows == explain --ranks --json');
	checks++;
	const s = want.find((x) => x.straggler);
	ok(s && r.structuredContent.straggler_rank === s.rank && text(r).includes(`straggler: rank ${s.rank}`),
		`nccl: straggler rank ${s && s.rank}`);
	const w = cli('explain', '--ranks', '--json', '--no-store', '--since', '2s', '--db', ndb).ranks;
	const rw = await call(client, 'nccl_ranks', { since: '2s' });
	assert.deepEqual(rw.structuredContent.ranks, w, 'nccl: since 2s == explain --since 2s --ranks');
	checks++;
	ok(w[0].collectives < want[0].collectives, `nccl: the window narrows (${w[0].collectives} < ${want[0].collectives})`);
	const other = await call(client, 'nccl_ranks', { node: 'no-such-node' });
	ok(!other.isError && other.structuredContent.ranks.length === 0, 'nccl: node filter');
	const bad = await call(client, 'nccl_ranks', { limit: 0 });
	ok(bad.isError && /limit/.test(text(bad)), 'nccl: limit below 1 refused');
	await client.close();
}

// slow_requests on inference requests (stdio, its own server): the rows,
// order, filters and per-route counts equal SQL over the same file; the
// percentiles are within the histogram's 4.4 % of the exact ones.
async function slowRequests() {
	const rdb = env.MCP_REQ_DB;
	const transport = new StdioClientTransport({ command: BIN, args: ['mcp', '--db', rdb], stderr: 'pipe' });
	const client = new Client({ name: 'causeway-test', version: '1.0.0' });
	await client.connect(transport);
	const sql = (q, ...params) => cli('query', '--json', '--limit', '100000', '--db', rdb, q, ...params.flatMap((v) => ['--param', v]));
	const r = await call(client, 'slow_requests', {});
	const sc = r.structuredContent;
	const want = sql('SELECT id, path, status, duration_ns, ttft_ns FROM requests ORDER BY duration_ns DESC, id DESC');
	ok(!r.isError && sc.requests_table && sc.requests.length === 20 && sc.matched === want.length && sc.truncated,
		`requests: 20 of ${want.length} by default`);
	assert.deepEqual(sc.requests.map((x) => [x.id, x.path, x.status, x.duration_ns, x.ttft_ns]),
		want.slice(0, 20).map((x) => [x.id, x.path, x.status, x.duration_ns, x.ttft_ns]), 'requests: slowest first == SQL');
	checks++;
	ok(sc.requests[0].path === '/<img src=x onerror=alert(1)>' && text(r).includes('GET /<img src=x onerror=alert(1)> 404: 12000.0 ms'),
		'requests: the hostile path comes back as it was stored');
	ok(sc.requests[0].container === '5f0c2a9e1b7d' && sc.requests[0].comm === 'python' && sc.requests[0].duration_ms === 12000,
		'requests: container, comm and milliseconds');
	const routes = sql("SELECT method, path, count(*) AS n, sum(status >= 500 OR (status IS NULL AND end_reason = 'closed')) AS errors,"
		+ ' sum(status BETWEEN 400 AND 499) AS client_errors, count(ttft_ns) AS nt FROM requests GROUP BY method, path');
	ok(sc.routes.length === routes.length && routes.every((w) => sc.routes.some((x) => x.method === w.method && x.path === w.path &&
		x.count === w.n && x.errors === w.errors && x.client_errors === w.client_errors && x.ttft_count === w.nt)),
	'requests: per-route counts and errors == SQL');
	// p50 and p99 of every route against the exact nearest-rank values.
	for (const x of sc.routes) {
		const d = sql('SELECT duration_ns AS v FROM requests WHERE path = ?1 ORDER BY duration_ns', x.path).map((y) => y.v);
		for (const [q, got] of [[0.5, x.p50_ms], [0.99, x.p99_ms]]) {
			const exact = d[Math.max(0, Math.ceil(q * d.length) - 1)] / 1e6;
			ok(Math.abs(got - exact) <= exact * 0.045 + 0.001, `requests: ${x.path} p${q * 100} ${got} ms ~ ${exact} ms`);
		}
	}
	// Filters: a status class, a path prefix, a shortest duration, the newest first.
	const s5 = (await call(client, 'slow_requests', { status: '5xx' })).structuredContent;
	ok(s5.requests.length === 2 && s5.requests.every((x) => x.status === 500) && s5.matched === 2 && !s5.truncated &&
		s5.routes.length === routes.length, 'requests: status 5xx lists the two 500s, the summary stays');
	const pv = (await call(client, 'slow_requests', { path: '/v1/*', limit: 100 })).structuredContent;
	ok(pv.routes.length === 2 && pv.requests.length === 60 && pv.requests.every((x) => x.path.startsWith('/v1/')), 'requests: path prefix /v1/*');
	const md = (await call(client, 'slow_requests', { min_duration: '5s' })).structuredContent;
	ok(md.matched === 3 && md.requests.every((x) => x.duration_ns >= 5e9), 'requests: min_duration 5s');
	const rec = (await call(client, 'slow_requests', { order: 'recent', limit: 3 })).structuredContent;
	const newest = sql('SELECT id FROM requests ORDER BY wall_ns DESC, id DESC LIMIT 3').map((x) => x.id);
	assert.deepEqual(rec.requests.map((x) => x.id), newest, 'requests: order recent == SQL');
	checks++;
	const none = (await call(client, 'slow_requests', { limit: 0 })).structuredContent;
	ok(none.requests.length === 0 && none.routes.length === routes.length, 'requests: limit 0 is the summary alone');
	const bad = await call(client, 'slow_requests', { status: '9xx' });
	ok(bad.isError && /status/.test(text(bad)), 'requests: a bad status class refused');
	await client.close();
}

async function stdio() {
	// MCP_CONFIG names the export directory (mcp.export_dir) that holds MCP_OUT.
	const args = [...(env.MCP_CONFIG ? ['--config', env.MCP_CONFIG] : []), 'mcp', '--db', DB];
	if (env.MCP_FLEET)
		args.push('--nodes', env.MCP_FLEET, '--ca-cert', env.MCP_CA, '--client-cert', env.MCP_CERT,
			'--client-key', env.MCP_KEY, '--node-timeout', '3s');
	const transport = new StdioClientTransport({ command: process.env.WRAP || BIN, args: process.env.WRAP ? [BIN, ...args] : args, stderr: 'pipe',
		env: { ...process.env, CW_TOKEN: env.MCP_TOKEN || '' } });
	const client = new Client({ name: 'causeway-test', version: '1.0.0' });
	await client.connect(transport);
	ok(client.getServerVersion().name === 'causeway', 'stdio: server name');
	await exerciseTools(client, 'stdio');
	await refusals(client, 'stdio');
	await promptsAndResources(client, 'stdio');
	await client.close();
}

async function http() {
	const hdr = env.MCP_TOKEN ? { authorization: `Bearer ${env.MCP_TOKEN}` } : {};
	const mk = (tls, h = hdr) => new StreamableHTTPClientTransport(new URL(env.MCP_URL), { fetch: tlsFetch(tls, h) });
	const client = new Client({ name: 'causeway-test', version: '1.0.0' });
	const transport = mk(tlsFiles(env.MCP_CERT, env.MCP_KEY));
	await client.connect(transport);
	ok(transport.sessionId && /^[\x21-\x7e]{32,}$/.test(transport.sessionId), 'http: visible-ASCII session id');
	ok(client.getServerVersion().name === 'causeway', 'http: server name');
	await exerciseTools(client, 'http');
	await refusals(client, 'http');
	await promptsAndResources(client, 'http');

	// Without a client certificate, with another CA's, without the token:
	// refused, and the session above still works.
	for (const [what, tls, h, want] of [
		['no client certificate', tlsFiles(), hdr, 403],
		['a certificate from another CA', tlsFiles(env.MCP_WRONG_CERT, env.MCP_WRONG_KEY), hdr, 403],
		['no token', tlsFiles(env.MCP_CERT, env.MCP_KEY), {}, 401],
	]) {
		if (what === 'no token' && !env.MCP_TOKEN)
			continue;
		const c2 = new Client({ name: 'intruder', version: '1' });
		await assert.rejects(c2.connect(mk(tls, h)), (e) => e.code === want, `http: ${what} -> ${want}`);
		checks++;
	}
	// An oversized request: 413 from the body cap, then business as usual.
	await assert.rejects(call(client, 'run_sql', { sql: `SELECT 1 -- ${'y'.repeat(200000)}` }),
		(e) => e.code === 413, 'http: oversized request -> 413');
	checks++;
	const after = await call(client, 'trace_summary', { limit: 1 });
	ok(!after.isError, 'http: still serving after the refusals');
	// Raw Streamable HTTP: a notification gets 202 and no body, GET 405.
	const sid = transport.sessionId;
	const raw = tlsFetch(tlsFiles(env.MCP_CERT, env.MCP_KEY), hdr);
	const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
		'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
	let res = await raw(env.MCP_URL, { method: 'POST', headers: base,
		body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
	ok(res.status === 202 && (await res.text()) === '', `http: notification -> 202 (got ${res.status})`);
	res = await raw(env.MCP_URL, { method: 'GET', headers: { ...base, accept: 'text/event-stream' } });
	ok(res.status === 405 && /POST/.test(res.headers.get('allow')), `http: GET -> 405 (got ${res.status})`);
	res = await raw(env.MCP_URL, { method: 'POST', headers: { ...base, 'mcp-protocol-version': '1999-01-01' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
	ok(res.status === 400, `http: unsupported MCP-Protocol-Version -> 400 (got ${res.status})`);
	res = await raw(env.MCP_URL, { method: 'POST', headers: { ...base, origin: 'http://evil.example' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
	ok(res.status === 403, `http: foreign Origin -> 403 (got ${res.status})`);
	// The stateless revision 2026-07-28: no session, version in _meta and
	// in the MCP-Protocol-Version header.
	const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
		'io.modelcontextprotocol/clientCapabilities': {} };
	res = await raw(env.MCP_URL, { method: 'POST',
		headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
			'mcp-protocol-version': '2026-07-28' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/call',
			params: { name: 'trace_summary', arguments: { limit: 1 }, _meta: meta } }) });
	const sl = await res.json();
	ok(res.status === 200 && sl.result.resultType === 'complete' &&
		sl.result.structuredContent.ops.length === 1, 'http: stateless tools/call without a session');
	// DELETE ends the session; the id is then unknown.
	await transport.terminateSession();
	res = await raw(env.MCP_URL, {
		method: 'POST',
		headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
			'mcp-session-id': sid },
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
	});
	ok(res.status === 404, `http: ended session gets 404 (got ${res.status})`);
	await client.close();
}

const which = process.argv[2] || 'all';
if (which === 'all' || which === 'stdio')
	await stdio();
if (which === 'all' || which === 'http')
	await http();
if ((which === 'all' || which === 'nccl') && env.MCP_NCCL_DB)
	await ncclRanks();
if ((which === 'all' || which === 'requests') && env.MCP_REQ_DB)
	await slowRequests();
console.log(`mcp sdk client: ${checks} checks passed (${which})`);
