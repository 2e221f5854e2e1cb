/* inference-ttft: the "11-second TTFT on a healthy server" story. A
 * llama.cpp server (llama-server, pid 5120, port 8080) answers five
 * keep-alive clients' streamed POST /v1/chat/completions (about 5
 * requests/s for a minute) and a health check every 7 s; its main thread
 * decodes every slot's tokens on cpu 3, one HTTP thread per connection
 * reads the requests and writes the SSE chunks. From t=31.2 s to t=41 s a
 * backup script (backup.sh, pid 4410, its own systemd unit) takes cpu 3:
 * the decoding thread is preempted for 9.8 s, so the requests that arrive
 * then wait up to ~10 s for their first token and those being streamed
 * stall mid-answer. Written as trace --inference would see it: socket
 * calls (struct cw_http_io) through the real request parser, off-CPU
 * intervals, host snapshots. -> inference_latency naming backup.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo/demo.h"
#include "demo/train.h"
#include "tenant/cgroup_row.h"
#include "util/timeutil.h"

#define SERVE_CGROUP 0x5e7e1ULL
#define BACKUP_CGROUP 0xbac0ULL
#define PORT 8080
#define CLIENTS 5
#define RUN_NS (60 * NSEC_PER_SEC)
#define HOG_FROM (31200 * NSEC_PER_MSEC)
#define HOG_TO (41000 * NSEC_PER_MSEC)
#define MAX_SPANS 1024

static const struct cw_demo_task server = { 5120, 5120, SERVE_CGROUP, "llama-server", 3 };
static const struct cw_demo_task workers[CLIENTS + 1] = {
	{ 5120, 5121, SERVE_CGROUP, "llama-server", 0 }, { 5120, 5122, SERVE_CGROUP, "llama-server", 1 },
	{ 5120, 5123, SERVE_CGROUP, "llama-server", 2 }, { 5120, 5124, SERVE_CGROUP, "llama-server", 0 },
	{ 5120, 5125, SERVE_CGROUP, "llama-server", 1 }, { 5120, 5126, SERVE_CGROUP, "llama-server", 2 },
};
static const struct cw_demo_task backup = { 4410, 4410, BACKUP_CGROUP, "backup.sh", 3 };

static const char sse_head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			       "Transfer-Encoding: chunked\r\nServer: llama.cpp\r\n\r\n";
static const char sse_chunk[] = "3a\r\ndata: {\"choices\":[{\"delta\":{\"content\":\" tok\"},\"index\":0}]}\n\n\r\n";

/* When work ns of the decoding thread's time, begun at t, is done: the
 * thread makes no progress while backup.sh holds its CPU. */
static uint64_t advance(uint64_t t0, uint64_t t, uint64_t work)
{
	uint64_t h0 = t0 + HOG_FROM, h1 = t0 + HOG_TO;

	if (t >= h1 || t + work <= h0)
		return t + work;
	if (t < h0)
		return h1 + (work - (h0 - t));
	return h1 + work;
}

struct span {
	uint64_t a, b;
};

static int span_cmp(const void *x, const void *y)
{
	const struct span *p = x, *q = y;

	return (p->a > q->a) - (p->a < q->a);
}

/* One client's keep-alive connection: requests until the run ends. The
 * spans the decoding thread worked for it go to busy. */
static void client(struct cw_demo_train *tr, int c, struct span *busy, size_t *nbusy)
{
	struct cw_demo_gen *g = tr->g;
	struct cw_demo_rng *r = &g->rng;
	const struct cw_demo_task *w = &workers[c];
	uint64_t t = tr->t0 + (uint64_t)c * 137 * NSEC_PER_MSEC, idle_from = 0;
	int fd = 10 + c;
	char req[400];

	cw_demo_http(g, w, t, CW_OP_http_accept, fd, PORT, NULL, 0);
	t += 3 * NSEC_PER_MSEC;
	while (t < tr->t0 + RUN_NS) {
		int body = snprintf(NULL, 0, "{\"messages\":[{\"role\":\"user\",\"content\":\"question %d\"}],\"stream\":true}", c);
		int ntok = (int)cw_demo_rng_range(r, 16, 40);
		uint64_t at, end;

		snprintf(req, sizeof(req),
			 "POST /v1/chat/completions HTTP/1.1\r\nHost: 10.0.0.7:8080\r\nContent-Type: application/json\r\n"
			 "Content-Length: %d\r\n\r\n{\"messages\":[{\"role\":\"user\",\"content\":\"question %d\"}],\"stream\":true}",
			 body, c);
		if (idle_from)
			cw_demo_offcpu(g, w, idle_from, t - 20 * NSEC_PER_USEC, CW_OFFCPU_BLOCKED, NULL, NULL);
		cw_demo_http(g, w, t, CW_OP_http_read, fd, PORT, req, 0);
		cw_demo_http(g, w, t + 400 * NSEC_PER_USEC, CW_OP_http_write, fd, PORT, sse_head, 0);
		/* Prefill, then one token per decoding step. */
		at = advance(tr->t0, t + 500 * NSEC_PER_USEC, cw_demo_jitter(r, 35 * NSEC_PER_MSEC, 0.25, 2.0));
		for (int k = 0; k < ntok; k++) {
			cw_demo_http(g, w, at, CW_OP_http_write, fd, PORT, sse_chunk, 0);
			if (k + 1 < ntok)
				at = advance(tr->t0, at, cw_demo_jitter(r, 9 * NSEC_PER_MSEC, 0.2, 1.8));
		}
		end = at + 100 * NSEC_PER_USEC; /* within the write merge: the last token's event */
		cw_demo_http(g, w, end, CW_OP_http_write, fd, PORT, "0\r\n\r\n", 0);
		if (*nbusy < MAX_SPANS) {
			busy[*nbusy].a = t;
			busy[(*nbusy)++].b = end;
		}
		idle_from = end + 30 * NSEC_PER_USEC;
		t = end + cw_demo_rng_range(r, 350, 900) * NSEC_PER_MSEC;
	}
	cw_demo_http(g, w, t, CW_OP_http_close, fd, PORT, NULL, 0);
}

/* A health check every 7 s on a connection of its own, answered by an
 * HTTP thread at once (the decoding thread is not involved). */
static void health(struct cw_demo_train *tr)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n"
				 "{\"status\":\"ok\"}";
	const struct cw_demo_task *w = &workers[CLIENTS];

	for (uint64_t t = tr->t0 + 2 * NSEC_PER_SEC; t < tr->t0 + RUN_NS; t += 7 * NSEC_PER_SEC) {
		cw_demo_http(tr->g, w, t, CW_OP_http_accept, 30, PORT, NULL, 0);
		cw_demo_http(tr->g, w, t + 50 * NSEC_PER_USEC, CW_OP_http_read, 30, PORT,
			     "GET /health HTTP/1.1\r\nHost: 10.0.0.7:8080\r\n\r\n", 0);
		cw_demo_http(tr->g, w, t + 300 * NSEC_PER_USEC, CW_OP_http_write, 30, PORT, ok, 0);
		cw_demo_http(tr->g, w, t + 400 * NSEC_PER_USEC, CW_OP_http_close, 30, PORT, NULL, 0);
	}
}

/* The decoding thread: blocked when no slot is busy (woken by the HTTP
 * thread that queued a task), preempted by backup.sh through the hog,
 * now and then by a kworker for a moment. */
static void decoder(struct cw_demo_train *tr, struct span *busy, size_t n)
{
	struct cw_demo_gen *g = tr->g;
	uint64_t h0 = tr->t0 + HOG_FROM, h1 = tr->t0 + HOG_TO, prev = tr->t0;
	size_t k = 0;

	qsort(busy, n, sizeof(*busy), span_cmp);
	for (size_t i = 0; i < n;) {
		uint64_t a = busy[i].a, b = busy[i].b;

		while (i < n && busy[i].a <= b) {
			if (busy[i].b > b)
				b = busy[i].b;
			i++;
		}
		/* The idle gap before this busy stretch, outside the hog. */
		if (a > prev + 100 * NSEC_PER_USEC && (a <= h0 || prev >= h1))
			cw_demo_offcpu(g, &server, prev + 20 * NSEC_PER_USEC, a - 20 * NSEC_PER_USEC, CW_OFFCPU_BLOCKED,
				       NULL, &workers[k++ % CLIENTS]);
		prev = b;
	}
	for (uint64_t t = h0; t < h1;) {
		uint64_t len = cw_demo_rng_range(&g->rng, 180, 420) * NSEC_PER_MSEC;

		if (t + len > h1)
			len = h1 - t;
		cw_demo_offcpu(g, &server, t, t + len, CW_OFFCPU_PREEMPTED, &backup, NULL);
		t += len + 300 * NSEC_PER_USEC; /* a tick's sliver on the CPU */
	}
	for (uint64_t t = tr->t0 + 1700 * NSEC_PER_MSEC; t < tr->t0 + RUN_NS; t += 2300 * NSEC_PER_MSEC)
		if (t + NSEC_PER_MSEC < h0 || t > h1)
			cw_demo_offcpu(g, &server, t, t + cw_demo_rng_range(&g->rng, 50, 300) * NSEC_PER_USEC,
				       CW_OFFCPU_PREEMPTED, &cw_demo_kworker, NULL);
}

static void run(struct cw_demo_train *tr)
{
	struct span *busy = calloc(MAX_SPANS, sizeof(*busy));
	size_t nbusy = 0;

	tr->t0 = CW_DEMO_MONO_BASE + NSEC_PER_SEC;
	tr->end = tr->t0 + RUN_NS;
	if (!busy) {
		tr->g->err = -ENOMEM;
		return;
	}
	for (int c = 0; c < CLIENTS; c++)
		client(tr, c, busy, &nbusy);
	health(tr);
	decoder(tr, busy, nbusy);
	free(busy);
	for (uint64_t t = CW_DEMO_MONO_BASE; t < tr->end + 2 * NSEC_PER_SEC; t += NSEC_PER_SEC) {
		int hog = t + NSEC_PER_SEC > tr->t0 + HOG_FROM && t < tr->t0 + HOG_TO;
		struct cw_demo_snap s = {
			.cpu_pct = hog ? 97 + 2 * cw_demo_rng_unit(&tr->g->rng) : 30 + 8 * cw_demo_rng_unit(&tr->g->rng),
			.mem_pct = 41, .load1 = hog ? 5.2 : 1.4, .ncpu = 4,
		};
		cw_demo_snapshot(tr->g, t + NSEC_PER_SEC, &s);
	}
}

static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	struct cw_process_row pr = {
		.pid = server.pid, .ppid = 1, .comm = "llama-server",
		.cmdline = "llama-server -m /models/qwen2.5-0.5b-instruct-q4_k_m.gguf --port 8080 --parallel 5",
		.cgroup_id = SERVE_CGROUP, .rank = -1, .local_rank = -1, .world_size = -1,
		.start_wall_ns = (uint64_t)((int64_t)CW_DEMO_MONO_BASE + tr->mono_to_wall),
	};
	int err;

	if ((err = cw_writer_process(w, &pr)) ||
	    (err = cw_tenant_write_cgroup_path(w, SERVE_CGROUP, "/system.slice/llama-server.service", NULL)))
		return err;
	return cw_tenant_write_cgroup_path(w, BACKUP_CGROUP, "/system.slice/backup.service", NULL);
}

static const struct cw_demo_hooks hooks = { NULL, NULL, meta, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
	tr->run = run;
	tr->no_trainer = 1;
}

const struct cw_demo_scenario cw_demo_scenario_inference_ttft = {
	"inference-ttft",
	"an inference server's decoding thread is preempted by a backup script: ~10 s TTFT on a healthy server",
	"inference_latency",
	setup,
};
